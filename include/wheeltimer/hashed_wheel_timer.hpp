// HashedWheelTimer: a hashed timing wheel driven by one "indicator" thread.
//
// The indicator sleeps until the absolute deadline of the next tick (so ticks never drift), then
// moves newly scheduled tasks from a lock-free many-producer queue into the wheel's slots (a
// bounded number per tick, so a flood of schedule() calls cannot starve ticking), and hands the
// tasks that are due to the executor. A task's slot is its target tick modulo the wheel size; a task
// more than one rotation out stays in its slot, skipped, until the rotation that is its own.
// Canceled tasks are unlinked on the next tick, not at their deadline.
//
// Threads: every member may be called from any thread, concurrently, and schedule(), cancel() and
// adopt() from inside the timer's own tasks. stop() from inside one of its own tasks throws
// std::logic_error; destroying the timer there is a precondition violation.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <wheeltimer/timer.hpp>

namespace wheeltimer {

namespace detail {
class WheelCore;
}

class HashedWheelTimer final : public Timer {
 public:
  // Starts the indicator thread. Invalid options (tick <= 0, wheel_size 0 or > 2^30) are
  // std::invalid_argument naming the value.
  explicit HashedWheelTimer(TimerOptions options = {});
  // stop(), discarding what it returns.
  ~HashedWheelTimer() override;
  HashedWheelTimer(const HashedWheelTimer&) = delete;
  HashedWheelTimer& operator=(const HashedWheelTimer&) = delete;

  using Timer::schedule;

  // Accepts `task` to run on the first tick at or after `deadline`. Throws, in this order:
  // std::invalid_argument for an empty task, Stopped once stop() has begun, Rejected when
  // max_pending tasks are pending. Never runs the task on the calling thread.
  TimerFuture schedule_at(Task task, Clock::time_point deadline) override;

  // Idempotent: the first call stops ticking at once (it never waits out a tick), waits for tasks
  // that are RUNNING, and returns every task that has not started (in the wheel, in the inbound
  // queue, or queued in the executor) ordered by deadline. Later and concurrent calls return an
  // empty vector once the timer has fully stopped.
  std::vector<PendingTask> stop() override;

  // Schedules a task handed back by another timer's stop() at its original deadline, keeping its
  // TimerFuture. Stopped and Rejected are checked first and cancel the task's future. A task whose
  // future was canceled meanwhile is not scheduled; its future is returned as it is.
  TimerFuture adopt(PendingTask task);

  // Tasks accepted and not yet started, canceled or handed back.
  std::size_t pending() const noexcept;

  // The wheel's slot count after rounding up to a power of two.
  std::size_t wheel_size() const noexcept;

 private:
  std::unique_ptr<detail::WheelCore> core_;
};

}  // namespace wheeltimer
