#include "executor_thread.hpp"

namespace wheeltimer::detail {
namespace {

thread_local const Executor* running_executor = nullptr;

}  // namespace

ExecutorThreadMark::ExecutorThreadMark(const Executor* executor) noexcept
    : previous_(running_executor) {
  running_executor = executor;
}

ExecutorThreadMark::~ExecutorThreadMark() { running_executor = previous_; }

const Executor* ExecutorThreadMark::current() noexcept { return running_executor; }

}  // namespace wheeltimer::detail
