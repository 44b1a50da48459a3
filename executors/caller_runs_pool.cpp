#include <wheeltimer/executors/caller_runs_pool.hpp>

#include <stdexcept>
#include <string>

#include "executor_thread.hpp"

namespace wheeltimer {
namespace {

// More threads than any machine runs: most likely a negative number converted to size_t, which
// would otherwise fail far from its cause (std::length_error, or thousands of threads started).
constexpr std::size_t kMaxThreads = std::size_t{1} << 16;

void run_swallowing(Task& work) noexcept {
  try {
    work();
  } catch (...) {  // a throwing task never kills a worker (the timer's own work never throws)
  }
}

}  // namespace

CallerRunsPool::CallerRunsPool(std::size_t threads, std::size_t queue_capacity)
    : capacity_(queue_capacity) {
  if (threads == 0 || threads > kMaxThreads) {
    throw std::invalid_argument("wheeltimer: CallerRunsPool needs threads from 1 to " +
                                std::to_string(kMaxThreads) + ", got " + std::to_string(threads));
  }
  if (queue_capacity == 0) {
    throw std::invalid_argument("wheeltimer: CallerRunsPool needs queue_capacity >= 1, got 0");
  }
  workers_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
  } catch (...) {
    shut_down();  // join the threads already started before rethrowing
    throw;
  }
}

CallerRunsPool::~CallerRunsPool() { shut_down(); }

void CallerRunsPool::shut_down() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  not_empty_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void CallerRunsPool::execute(Task work) {
  if (!work) {
    throw std::invalid_argument("wheeltimer: CallerRunsPool::execute() was given an empty task");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() < capacity_) {
      queue_.push_back(std::move(work));
      not_empty_.notify_one();
      return;
    }
  }
  run_swallowing(work);  // full: back-pressure, the caller runs it
}

void CallerRunsPool::work_loop() {
  const detail::ExecutorThreadMark mark(this);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    not_empty_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and every queued task has run
    Task work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run_swallowing(work);
    work.reset();  // captures die outside the lock too
    lock.lock();
  }
}

}  // namespace wheeltimer
