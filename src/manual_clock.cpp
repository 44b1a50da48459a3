#include "manual_clock.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace wheeltimer::detail {

// One timer's view of the clock. Its indicator counts as busy from the moment the timer exists
// until it sleeps with its wake-up time in the future, and again from the advance() that reaches
// that time or the wake() that cuts the sleep short; advance() waits for the count to reach zero.
// All fields are guarded by the clock's mutex.
class ManualClock::Source final : public TimeSource {
 public:
  explicit Source(std::shared_ptr<ManualClock> clock) : clock_(std::move(clock)) {
    std::lock_guard<std::mutex> lock(clock_->mutex_);
    clock_->sources_.push_back(this);
    ++clock_->busy_;
  }
  ~Source() override {
    std::lock_guard<std::mutex> lock(clock_->mutex_);
    std::erase(clock_->sources_, this);
    leave();
  }

  Clock::time_point now() override { return clock_->now(); }

  bool sleep_until(Clock::time_point due) override {
    std::unique_lock<std::mutex> lock(clock_->mutex_);
    for (;;) {
      if (interrupted_) {
        leave();
        return false;
      }
      if (woken_ || clock_->now_ >= due) {
        woken_ = false;
        if (asleep_) {  // the time was already here; advance() did not have to wake us
          asleep_ = false;
          ++clock_->busy_;
        }
        ++clock_->wakeups_;
        return true;
      }
      if (!asleep_) {
        asleep_ = true;
        due_ = due;
        --clock_->busy_;
        clock_->changed_.notify_all();
      }
      clock_->changed_.wait(lock);
    }
  }

  void wake() noexcept override {
    std::lock_guard<std::mutex> lock(clock_->mutex_);
    woken_ = true;
    // Busy from now on, so an advance() that follows waits for what the wake-up was for.
    if (asleep_ && !gone_) {
      asleep_ = false;
      ++clock_->busy_;
    }
    clock_->changed_.notify_all();
  }

  void interrupt() noexcept override {
    std::lock_guard<std::mutex> lock(clock_->mutex_);
    interrupted_ = true;
    clock_->changed_.notify_all();
  }

  // Called by advance() under the lock: the time has reached this indicator's wake-up time.
  void wake_if_due() {
    if (asleep_ && !gone_ && due_ <= clock_->now_) {
      asleep_ = false;
      ++clock_->busy_;
    }
  }

 private:
  void leave() {  // the indicator stops for good: it no longer counts as busy
    if (!asleep_ && !gone_) --clock_->busy_;
    gone_ = true;
    clock_->changed_.notify_all();
  }

  std::shared_ptr<ManualClock> clock_;
  Clock::time_point due_;
  bool asleep_ = false;
  bool woken_ = false;
  bool gone_ = false;
  bool interrupted_ = false;
};

std::shared_ptr<ManualClock> ManualClock::create(Clock::time_point start) {
  if (start.time_since_epoch() < Clock::duration::zero() ||
      start > Clock::time_point::max() - Clock::duration(1)) {
    throw std::invalid_argument(
        "ManualClock: start must be in [the clock's epoch, max() - 1 ns], got " +
        std::to_string(start.time_since_epoch().count()) + " ns");
  }
  return std::shared_ptr<ManualClock>(new ManualClock(start));
}

Clock::time_point ManualClock::now() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return now_;
}

std::size_t ManualClock::wakeups() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return wakeups_;
}

void ManualClock::advance(Clock::duration by) {
  std::unique_lock<std::mutex> lock(mutex_);
  now_ = std::min(saturating_add(now_, by), Clock::time_point::max() - Clock::duration(1));
  for (Source* source : sources_) source->wake_if_due();
  changed_.notify_all();
  changed_.wait(lock, [this] { return busy_ == 0; });
}

std::unique_ptr<TimeSource> ManualClock::source() {
  return std::make_unique<Source>(shared_from_this());
}

}  // namespace wheeltimer::detail
