#include <wheeltimer/executors/tbb_arena.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace wheeltimer {
namespace {

int checked_concurrency(int max_concurrency) {
  if (max_concurrency != tbb::task_arena::automatic && max_concurrency < 1) {
    throw std::invalid_argument(
        "wheeltimer: TbbArenaExecutor needs max_concurrency >= 1 or tbb::task_arena::automatic, "
        "got " + std::to_string(max_concurrency));
  }
  return max_concurrency;
}

}  // namespace

TbbArenaExecutor::TbbArenaExecutor(int max_concurrency)
    // No slot reserved for outside threads: enqueued work runs only on the arena's workers.
    : arena_(checked_concurrency(max_concurrency), /*reserved_for_masters=*/0) {}

TbbArenaExecutor::~TbbArenaExecutor() {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait(lock, [this] { return in_flight_ == 0; });
}

void TbbArenaExecutor::execute(Task work) {
  if (!work) {
    throw std::invalid_argument("wheeltimer: TbbArenaExecutor::execute() was given an empty task");
  }
  // oneTBB invokes an enqueued functor through a const reference; the Task is mutable state.
  struct Job {
    mutable Task work;
    TbbArenaExecutor* owner;
    void operator()() const noexcept {
      try {
        work();
      } catch (...) {  // a throwing task never kills an arena worker
      }
      work.reset();
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
  // Notifying under the lock: once the destructor sees zero, no worker touches *this again.
  std::lock_guard<std::mutex> lock(mutex_);
  if (--in_flight_ == 0) drained_.notify_all();
}

}  // namespace wheeltimer
