// HeapTimer: the baseline "what people write by hand": a std::priority_queue of deadlines guarded
// by one mutex, and one worker thread that sleeps on a condition variable until the earliest
// deadline, then runs what is due. Tasks are std::function<void()>.
//
// Cancel is by handle: each job is a shared_ptr holding its callable and an atomic state, so
// cancel() is one compare-and-swap (WAITING -> CANCELED) and returns true only for the call that
// prevented the run, like TimerFuture::cancel(). The entry itself stays in the heap and is
// dropped when it reaches the top. So that canceled entries cannot pile up (a burst of cancels of
// far timers, or schedule+cancel churn), schedule() and cancel() purge them once they are more
// than half of the heap (amortised O(1) per cancel), as a careful hand-written timer would: the
// cancel that crosses the line pays for the purge, so the cancel rows count it.
//
// Threads: schedule(), schedule_at() and cancel() from any thread; the callable runs on the worker.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include <wheeltimer/clock.hpp>

namespace micro {

using Clock = wheeltimer::Clock;

class HeapTimer {
 public:
  struct Job {
    explicit Job(std::function<void()> f) : fn(std::move(f)) {}
    std::function<void()> fn;
    std::atomic<std::uint8_t> state{0};  // 0 waiting, 1 running, 2 canceled
  };
  using Handle = std::shared_ptr<Job>;

  HeapTimer();
  ~HeapTimer();  // stops the worker; jobs still pending are dropped without running
  HeapTimer(const HeapTimer&) = delete;
  HeapTimer& operator=(const HeapTimer&) = delete;

  Handle schedule_at(std::function<void()> fn, Clock::time_point deadline);
  Handle schedule(std::function<void()> fn, Clock::duration delay) {
    return schedule_at(std::move(fn), Clock::now() + delay);
  }
  bool cancel(const Handle& job) noexcept;

 private:
  struct Entry {
    Clock::time_point deadline;
    Handle job;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const noexcept {
      return a.deadline > b.deadline;
    }
  };
  // A priority_queue that lets us purge canceled entries (the container is a protected member).
  struct Queue : std::priority_queue<Entry, std::vector<Entry>, Later> {
    void purge_canceled();
    std::size_t purged = 0;
  };

  void run();
  // Drops the canceled entries if they are more than half of a heap big enough for it to matter.
  void purge_if_worth_it();  // mutex_ held

  std::mutex mutex_;
  std::condition_variable wake_;
  Queue queue_;          // guarded by mutex_
  bool stopping_ = false;  // guarded by mutex_
  std::atomic<std::int64_t> canceled_in_queue_{0};
  std::atomic<std::size_t> queued_{0};  // queue_.size() as of its last change, for cancel()
  std::thread worker_;
};

}  // namespace micro
