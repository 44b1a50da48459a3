// TimeSource: where a timer's indicator reads the time and sleeps between ticks.
//
// SteadyTimeSource is the real clock (wheeltimer::Clock). Tests use ManualClock
// (manual_clock.hpp), whose time moves only when the test says so. The indicator is the only
// caller of now() and sleep_until(); any thread may call wake() and interrupt(). schedule_at()
// never calls now() (schedule(delay) measures from wheeltimer::Clock, even on a ManualClock); it
// calls wake() when its task is due before the indicator's next wake-up.
// schedule() and cancel() also call it now and then for housekeeping (see wheel_core.hpp).
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
  // noexcept: schedule() and cancel() call wake() from their own noexcept steps, and stop() calls
  // interrupt() once it has set the stopping flag, which it cannot take back. Locking a std::mutex
  // that the caller does not hold does not fail in practice; if it did, the program would end
  // here rather than lose a wake-up or leave a timer half stopped.
  virtual void wake() noexcept = 0;
  virtual void interrupt() noexcept = 0;
};

// Coalescing: a sleep by the time ends no sooner than `coalescing` after the previous sleep that
// ended by the time (not by wake()), so a dense stream of deadlines (a thousand a millisecond) is
// started in batches, not with a wake-up for every few tasks. A real wake-up is the dearest thing
// the indicator does: on this project's 2-vCPU VM, firing 100,000 timers over a second took
// ~10,000 wake-ups and 0.27 CPU-seconds, most of it in the kernel's context switch; 1,000,000
// timers took ~8,000. A deadline waited for is still never early; it may be up to `coalescing`
// (plus the OS's own wake-up latency) late. wake() and interrupt() still end a sleep at once.
class SteadyTimeSource final : public TimeSource {
 public:
  explicit SteadyTimeSource(Clock::duration coalescing = Clock::duration::zero())
      : coalescing_(coalescing) {}

  Clock::time_point now() override { return Clock::now(); }
  bool sleep_until(Clock::time_point due) override;
  void wake() noexcept override;
  void interrupt() noexcept override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool woken_ = false;        // guarded by mutex_
  bool interrupted_ = false;  // guarded by mutex_
  const Clock::duration coalescing_;
  Clock::time_point last_end_ = Clock::time_point::min();  // of a sleep; the sleeper's own
};

}  // namespace wheeltimer::detail
