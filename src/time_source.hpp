// TimeSource: where a timer's indicator reads the time and sleeps between ticks.
//
// SteadyTimeSource is the real clock (wheeltimer::Clock). Tests use ManualClock
// (manual_clock.hpp), whose time moves only when the test says so. The indicator is the only
// caller of now() and sleep_until(); any thread may call interrupt(). The wheel's hot paths never
// call through this interface: schedule() does not read the time, and the indicator makes one
// call per tick.
#pragma once

#include <condition_variable>
#include <mutex>

#include <wheeltimer/clock.hpp>

namespace wheeltimer::detail {

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual Clock::time_point now() = 0;
  // Blocks until now() >= due (true) or until interrupt() (false). An interrupt() that came
  // before the call makes this and every later call return false at once.
  virtual bool sleep_until(Clock::time_point due) = 0;
  virtual void interrupt() = 0;
};

class SteadyTimeSource final : public TimeSource {
 public:
  Clock::time_point now() override { return Clock::now(); }
  bool sleep_until(Clock::time_point due) override;
  void interrupt() override;

 private:
  std::mutex mutex_;
  std::condition_variable woken_;
  bool interrupted_ = false;  // guarded by mutex_
};

}  // namespace wheeltimer::detail
