#include <wheeltimer/hashed_wheel_timer.hpp>

#include "wheel_core.hpp"

namespace wheeltimer {

HashedWheelTimer::HashedWheelTimer(TimerOptions options)
    : core_(std::make_unique<detail::WheelCore>(std::move(options))) {}

// ~WheelCore stops the timer (WheelCore::stop_discarding()).
HashedWheelTimer::~HashedWheelTimer() = default;

TimerFuture HashedWheelTimer::schedule_at(Task task, Clock::time_point deadline) {
  return core_->schedule_at(std::move(task), deadline);
}

std::vector<PendingTask> HashedWheelTimer::stop() { return core_->stop(); }

TimerFuture HashedWheelTimer::adopt(PendingTask task) { return core_->adopt(std::move(task)); }

std::size_t HashedWheelTimer::pending() const noexcept { return core_->pending(); }

std::size_t HashedWheelTimer::wheel_size() const noexcept { return core_->wheel_size(); }

}  // namespace wheeltimer
