#include <wheeltimer/executors/tbb_arena.hpp>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "executor_thread.hpp"
#include "sanitizers.hpp"

#if defined(WHEELTIMER_TSAN)
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

namespace wheeltimer {
namespace {

// oneTBB is not built with ThreadSanitizer, so TSan cannot see that a job oneTBB constructed on
// the enqueuing thread happens before it runs on a worker. These tell it, keyed by the job's
// address; without TSan they are nothing.
void published([[maybe_unused]] const void* job) noexcept {
#if defined(WHEELTIMER_TSAN)
  __tsan_release(const_cast<void*>(job));
#endif
}
void received([[maybe_unused]] const void* job) noexcept {
#if defined(WHEELTIMER_TSAN)
  __tsan_acquire(const_cast<void*>(job));
#endif
}

// oneTBB sets aside a slot of about 520 bytes for each unit of concurrency when the arena first
// gets work, and crashes inside its initialisation from 2^28 on. API.md accepts every positive
// value, so a larger one is lowered to this: no machine runs this many threads at once, and the
// arena never runs more work at a time than oneTBB has workers anyway.
constexpr int kMaxConcurrency = 1 << 16;

int checked_concurrency(int max_concurrency) {
  if (max_concurrency == tbb::task_arena::automatic) {
    // With no slot for outside threads the arena only ever has oneTBB's workers, of which the
    // process has (allowed parallelism - 1): ask for exactly those, never for workers that
    // cannot exist (oneTBB would warn about the request on every small machine).
    const auto allowed = tbb::global_control::active_value(
        tbb::global_control::max_allowed_parallelism);
    return std::max(1, static_cast<int>(allowed) - 1);
  }
  if (max_concurrency < 1) {
    throw std::invalid_argument(
        "wheeltimer: TbbArenaExecutor needs max_concurrency >= 1 or tbb::task_arena::automatic, "
        "got " +
        std::to_string(max_concurrency));
  }
  return std::min(max_concurrency, kMaxConcurrency);
}

}  // namespace

TbbArenaExecutor::TbbArenaExecutor(int max_concurrency)
    // No slot reserved for outside threads: enqueued work runs only on the arena's workers.
    : arena_(checked_concurrency(max_concurrency), /*reserved_for_masters=*/0) {}

// A task counted in a group of its own but never started. A thread in the arena that waits for
// the group runs the arena's queued jobs meanwhile, until the last job to return destroys the
// sentinel (finished_one()), which ends the wait. The group's context is isolated, so that the
// cancellation of some outer oneTBB work cannot end the wait early.
struct TbbArenaExecutor::Helper {
  tbb::task_group_context context{tbb::task_group_context::isolated};
  tbb::task_group group{context};
  tbb::task_handle sentinel;
};

TbbArenaExecutor::~TbbArenaExecutor() {
  // On a thread running a oneTBB task (a oneTBB worker's job, a parallel_for body), the queued
  // work may need this very thread (a 2-core machine has one worker), so it runs here. Anywhere
  // else the destructor only waits, and the work runs on the arena's workers, as promised.
  // Asked in this order so that a thread oneTBB does not know yet is not set up for the question.
  if (arena_.is_active() &&
      tbb::this_task_arena::current_thread_index() != tbb::task_arena::not_initialized &&
      tbb::task::current_context() != nullptr) {
    run_queued_work_here();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait(lock, [this] { return in_flight_ == 0; });
}

void TbbArenaExecutor::run_queued_work_here() noexcept {
  std::unique_ptr<Helper> helper;
  try {
    helper = std::make_unique<Helper>();
  } catch (...) {
    return;  // out of memory: only wait
  }
  try {
    helper->sentinel = helper->group.defer([] {});
  } catch (...) {
    // oneTBB (2021.8) counts a task before allocating it and keeps the count when that fails,
    // so this group could never be destroyed: it is left alone, and the destructor only waits.
    static_cast<void>(helper.release());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_flight_ == 0) return;
    helper_ = helper.get();
  }
  // With every slot taken, oneTBB hands the lambda to a worker. ThreadSanitizer cannot see into
  // oneTBB, so mutex_ shows it the order: the helper published before the wait, and the last job
  // taking the sentinel (under the lock, before the wait could end) before the helper goes.
  arena_.execute([this, &helper] {
    { const std::lock_guard<std::mutex> published(mutex_); }
    helper->group.wait();
  });
  const std::lock_guard<std::mutex> drained(mutex_);
}

void TbbArenaExecutor::execute(Task work) {
  if (!work) {
    throw std::invalid_argument("wheeltimer: TbbArenaExecutor::execute() was given an empty task");
  }
  // oneTBB invokes an enqueued functor through a const reference; the Task is mutable state.
  struct Job {
    Job(Task task, TbbArenaExecutor* executor) noexcept : work(std::move(task)), owner(executor) {}
    // oneTBB move-constructs the job into its task: the last write before it is published.
    Job(Job&& other) noexcept : work(std::move(other.work)), owner(other.owner) { published(this); }

    mutable Task work;
    TbbArenaExecutor* owner;
    void operator()() const noexcept {
      received(this);
      {
        const detail::ExecutorThreadMark mark(owner);
        try {
          work();
        } catch (...) {  // a throwing task never kills an arena worker
        }
        work.reset();
      }
      owner->finished_one();
    }
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
  }
  try {
    arena_.enqueue(Job{std::move(work), this});
  } catch (...) {
    finished_one();
    throw;
  }
}

void TbbArenaExecutor::finished_one() noexcept {
  tbb::task_handle sentinel;
  {
    // Notifying under the lock: once the destructor sees zero, no worker touches *this again.
    std::lock_guard<std::mutex> lock(mutex_);
    if (--in_flight_ != 0) return;
    drained_.notify_all();
    if (helper_ == nullptr) return;
    sentinel = std::move(helper_->sentinel);
    helper_ = nullptr;
  }
  // Dropped here, after the unlock: that ends the helper's wait (see Helper), and the helper
  // cannot return, nor the executor go, before it.
}

}  // namespace wheeltimer
