// ManualClock: a clock for tests that moves only when advance() is called, so the wheel can be
// tested step by step with no dependence on the machine's speed.
//
// Each timer built on the clock gets its own TimeSource from source(). advance() moves the time
// and returns only once every such timer's indicator has handled everything due by the new time
// and gone back to sleep (or has stopped), so after it returns, every inline task that was due
// has run. Tasks handed to a pool or arena executor may still be running: wait on their futures.
//
// Threads: any thread may call now(), advance() and source(); advance() must not be called from
// one of the clock's timers' tasks (it would wait for itself).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "time_source.hpp"

namespace wheeltimer::detail {

class ManualClock : public std::enable_shared_from_this<ManualClock> {
 public:
  // The clock starts at `start`; by default far from both ends of Clock's range. A start before
  // the clock's epoch (steady_clock never reads one) or at max() ("never") is
  // std::invalid_argument.
  static std::shared_ptr<ManualClock> create(Clock::time_point start = Clock::time_point() +
                                                                       std::chrono::hours(24));

  Clock::time_point now() const;
  // Moves the time on by `by`, saturating 1 ns short of Clock::time_point::max(): that value
  // means "never", and a clock that read it would leave the wheel no tick to run to.
  void advance(Clock::duration by);
  // How many times the clock's indicators have woken up (by the time, or by wake()).
  std::size_t wakeups() const;
  // A TimeSource for one timer (pass it to WheelCore).
  std::unique_ptr<TimeSource> source();

 private:
  class Source;
  explicit ManualClock(Clock::time_point start) : now_(start) {}

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Clock::time_point now_;  // guarded by mutex_
  std::vector<Source*> sources_;  // guarded by mutex_
  std::size_t busy_ = 0;  // indicators that are neither asleep nor stopped; guarded by mutex_
  std::size_t wakeups_ = 0;  // guarded by mutex_
};

}  // namespace wheeltimer::detail
