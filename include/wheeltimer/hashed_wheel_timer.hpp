// HashedWheelTimer: a hashed timing wheel driven by one "indicator" thread.
//
// Deadlines are kept in a hierarchical timing wheel: level 0 has `wheel_size` slots of one tick,
// each level above 64 slots that each span a whole rotation of the level below, so a far task is
// touched once per level as it cascades down, never once per rotation. The indicator sleeps until
// the earliest deadline it knows of or the next cascade (never tick by tick: an idle timer does
// not wake up at all), and a new task due before that wakes it early. Tasks whose tick has begun
// are started at their exact deadline, in deadline order, not at the end of their tick. New tasks
// arrive through two lock-free many-producer queues (one for tasks due soon, taken first), taken
// in bounded batches so a flood of schedule() calls cannot starve due tasks. Canceled tasks leave
// the wheel the next time the indicator wakes, which every 16,384th schedule() call forces;
// cancel() calls force it too, about once per 16,384 tasks settled (counted per group of threads;
// best effort).
//
// Threads: every member may be called from any thread, concurrently, and schedule(), cancel() and
// adopt() from inside the timer's own tasks. stop() from inside one of its own tasks throws
// std::logic_error; destroying the timer there is a precondition violation. As for any object,
// destroy the timer only once no other thread is still inside one of its calls: a schedule() that
// was accepted just before stop() may still be returning (waking the indicator) after stop() has
// handed its task back.
//
// Memory ordering: everything a thread did before it called schedule() or schedule_at() happens
// before the task starts, and everything the task did happens before its future reads FINISHED.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <wheeltimer/config.hpp>
#include <wheeltimer/timer.hpp>

namespace wheeltimer {

namespace detail {
class WheelCore;
}

class WHEELTIMER_API HashedWheelTimer final : public Timer {
 public:
  // Starts the indicator thread. Invalid options (tick <= 0, wheel_size 0 or > 2^30) are
  // std::invalid_argument naming the value; no thread or no memory to be had, std::system_error
  // or std::bad_alloc. A constructor that throws releases options.executor as the destructor would.
  // Tagged with the std::string ABI that TimerOptions::thread_name has (see config.hpp).
  WHEELTIMER_STRING_ABI_TAG explicit HashedWheelTimer(TimerOptions options = {});
  // stop(), discarding what it returns (those tasks are canceled). Out of memory, it cancels them
  // without handing them back, so it never fails for lack of memory.
  ~HashedWheelTimer() override;
  HashedWheelTimer(const HashedWheelTimer&) = delete;
  HashedWheelTimer& operator=(const HashedWheelTimer&) = delete;

  using Timer::schedule;

  // Accepts `task` to run at `deadline`, never before it. Throws, in this order:
  // std::invalid_argument for an empty task, Stopped once stop() has begun, Rejected when
  // max_pending tasks are pending. Never runs the task on the calling thread.
  TimerFuture schedule_at(Task task, Clock::time_point deadline) override;

  // Idempotent: the first call stops ticking at once (it never waits out a tick), waits for tasks
  // that are RUNNING, and returns every task that has not started (in the wheel, in the inbound
  // queue, or queued in the executor) ordered by deadline. Later and concurrent calls return an
  // empty vector once the timer has fully stopped. Out of memory: std::bad_alloc, and the tasks
  // taken out so far are kept for the next call, which hands them back with the rest.
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
