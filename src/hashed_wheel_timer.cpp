#include <wheeltimer/hashed_wheel_timer.hpp>

#include <new>
#include <utility>

#include "executor_reference.hpp"
#include "wheel_core.hpp"

namespace wheeltimer {

HashedWheelTimer::HashedWheelTimer(TimerOptions options)
    // nothrow: with no memory for the core, `options` is left untouched (a new-expression
    // allocates before it evaluates its arguments), and its executor is released below.
    : core_(new (std::nothrow) detail::WheelCore(std::move(options))) {
  if (!core_) {
    // As the core would have released it: never on one of that executor's own threads.
    detail::ExecutorReference(std::move(options.executor)).release();
    throw std::bad_alloc();
  }
}

// Stopped here, not only in ~WheelCore (which stops it too, idempotently): the tasks it cancels may
// have captures whose destructors call stop() on this timer, and core_ is then still whole.
HashedWheelTimer::~HashedWheelTimer() { core_->stop_discarding(); }

TimerFuture HashedWheelTimer::schedule_at(Task task, Clock::time_point deadline) {
  return core_->schedule_at(std::move(task), deadline);
}

std::vector<PendingTask> HashedWheelTimer::stop() { return core_->stop(); }

TimerFuture HashedWheelTimer::adopt(PendingTask task) { return core_->adopt(std::move(task)); }

std::size_t HashedWheelTimer::pending() const noexcept { return core_->pending(); }

std::size_t HashedWheelTimer::wheel_size() const noexcept { return core_->wheel_size(); }

}  // namespace wheeltimer
