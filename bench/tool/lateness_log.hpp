// LatenessLog: where a workload's tasks record how late they started, and how the workload waits
// for them all.
//
// Each task gets an index. When it starts it calls start(i, deadline), which appends
// (i, Clock::now() - deadline), the lateness a user's callback would see; when it is over it calls
// finish(). The workload waits in wait() until every task has finished.
//
// Entries are appended in the order tasks start, not stored at their index: tasks start in
// deadline order, which is random with respect to their indices, and a cache miss per task on a
// large array would make the observer cost more than much of what it observes.
//
// Threads: start() and finish() from any threads at once (each index from one task only); the
// rest from the workload's thread. Read samples() only after wait() returned true, or after the
// timer was stopped (stop() waits for running tasks), so no task is still writing.
//
// Memory ordering: a task writes its entry before its finish(), an acq_rel increment, so the last
// one to arrive has seen every entry; it hands them to wait() through mutex_.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include <wheeltimer/clock.hpp>

#include "progress.hpp"

namespace wheeltimer_bench {

class LatenessLog {
 public:
  explicit LatenessLog(std::size_t tasks);

  void start(std::size_t index, wheeltimer::Clock::time_point deadline) noexcept;
  void finish() noexcept;
  // start() and finish() together: for tasks that do nothing else.
  void record(std::size_t index, wheeltimer::Clock::time_point deadline) noexcept {
    start(index, deadline);
    finish();
  }

  // Blocks until every task has finished (true) or `give_up` passed (false), calling `progress`
  // about every `interval` meanwhile.
  bool wait(wheeltimer::Clock::time_point give_up, const ProgressFn& progress = {},
            wheeltimer::Clock::duration interval = std::chrono::milliseconds(100));

  std::size_t size() const noexcept { return entries_.size(); }
  std::size_t finished() const noexcept { return finished_.load(std::memory_order_relaxed); }
  // Starts beyond one per task: a task that ran twice (the timer promises none). The last starts'
  // entries are dropped (samples() may hold the repeated index), and wait() may return before
  // some other task has run.
  std::size_t repeated() const noexcept {
    const std::size_t started = started_.load(std::memory_order_relaxed);
    return started > entries_.size() ? started - entries_.size() : 0;
  }
  // How many distinct threads ran tasks: shows what the executor really had to work with.
  std::size_t threads_seen() const noexcept { return threads_.load(std::memory_order_relaxed); }

  // Lateness in ns of the tasks that started, restricted to the indices `include` accepts.
  std::vector<std::int64_t> samples(const std::function<bool(std::size_t)>& include = {}) const;

 private:
  struct Entry {
    std::size_t index;
    std::int64_t lateness_ns;
  };

  std::vector<Entry> entries_;      // [0, started_) are written
  const std::uint64_t generation_;  // tells this log's threads apart from earlier logs'
  alignas(64) std::atomic<std::size_t> started_{0};
  alignas(64) std::atomic<std::size_t> finished_{0};
  alignas(64) std::atomic<std::size_t> threads_{0};
  std::mutex mutex_;
  std::condition_variable all_finished_;
  bool done_ = false;  // guarded by mutex_
};

}  // namespace wheeltimer_bench
