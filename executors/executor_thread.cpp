#include "executor_thread.hpp"

#include <wheeltimer/config.hpp>

#if defined(WHEELTIMER_HAS_TBB)
#include <oneapi/tbb/task.h>
#include <oneapi/tbb/task_arena.h>
#endif

namespace wheeltimer::detail {
namespace {

thread_local const Executor* running_executor = nullptr;

}  // namespace

ExecutorThreadMark::ExecutorThreadMark(const Executor* executor) noexcept
    : previous_(running_executor) {
  running_executor = executor;
}

ExecutorThreadMark::~ExecutorThreadMark() { running_executor = previous_; }

bool ExecutorThreadMark::on_executor_thread() noexcept {
  if (running_executor != nullptr) return true;
#if defined(WHEELTIMER_HAS_TBB)
  // A thread oneTBB knows (the index is read without making oneTBB set the thread up) that is
  // running a task now: a worker, or a thread inside task_arena::execute(). A thread that only
  // used oneTBB once, such as a program's main thread, is not held to this when it is idle, so its
  // executor is released on the spot.
  return oneapi::tbb::this_task_arena::current_thread_index() !=
             oneapi::tbb::task_arena::not_initialized &&
         oneapi::tbb::task::current_context() != nullptr;
#else
  return false;
#endif
}

}  // namespace wheeltimer::detail
