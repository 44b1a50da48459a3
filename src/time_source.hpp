// TimeSource: where a timer's indicator reads the time and sleeps between ticks.
//
// SteadyTimeSource is the real clock (wheeltimer::Clock). Tests use ManualClock
// (manual_clock.hpp), whose time moves only when the test says so. The indicator is the only
// caller of now() and sleep_until(); any thread may call wake() and interrupt(). schedule() never
// reads the time; it calls wake() only when its task is due before the indicator's next wake-up.
#pragma once

#include <condition_variable>
#include <mutex>

#include <wheeltimer/clock.hpp>

namespace wheeltimer::detail {

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual Clock::time_point now() = 0;
  // Blocks until now() >= due or wake() (true), or until interrupt() (false). A wake() that came
  // before the call makes it return at once (once); an interrupt() makes this and every later
  // call return false at once.
  virtual bool sleep_until(Clock::time_point due) = 0;
  virtual void wake() = 0;
  virtual void interrupt() = 0;
};

class SteadyTimeSource final : public TimeSource {
 public:
  Clock::time_point now() override { return Clock::now(); }
  bool sleep_until(Clock::time_point due) override;
  void wake() override;
  void interrupt() override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool woken_ = false;        // guarded by mutex_
  bool interrupted_ = false;  // guarded by mutex_
};

}  // namespace wheeltimer::detail
