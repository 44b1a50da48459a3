#include <wheeltimer/hashed_wheel_timer.hpp>

#include <bit>
#include <stdexcept>
#include <string>

#include "wheel_core.hpp"

namespace wheeltimer {
namespace {

constexpr std::size_t kMaxWheelSize = std::size_t{1} << 30;

TimerOptions validated(TimerOptions options) {
  if (options.tick <= Clock::duration::zero()) {
    throw std::invalid_argument("wheeltimer: TimerOptions::tick must be > 0, got " +
                                std::to_string(options.tick.count()) + " ns");
  }
  if (options.wheel_size == 0 || options.wheel_size > kMaxWheelSize) {
    throw std::invalid_argument("wheeltimer: TimerOptions::wheel_size must be in 1.." +
                                std::to_string(kMaxWheelSize) + ", got " +
                                std::to_string(options.wheel_size));
  }
  options.wheel_size = std::bit_ceil(options.wheel_size);
  return options;
}

}  // namespace

HashedWheelTimer::HashedWheelTimer(TimerOptions options)
    : core_(std::make_unique<detail::WheelCore>(validated(std::move(options)))) {}

HashedWheelTimer::~HashedWheelTimer() { core_->stop(); }

TimerFuture HashedWheelTimer::schedule_at(Task task, Clock::time_point deadline) {
  return core_->schedule_at(std::move(task), deadline);
}

std::vector<PendingTask> HashedWheelTimer::stop() { return core_->stop(); }

TimerFuture HashedWheelTimer::adopt(PendingTask task) { return core_->adopt(std::move(task)); }

std::size_t HashedWheelTimer::pending() const noexcept { return core_->pending(); }

std::size_t HashedWheelTimer::wheel_size() const noexcept { return core_->wheel_size(); }

}  // namespace wheeltimer
