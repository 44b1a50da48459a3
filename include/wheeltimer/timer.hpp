// Timer: the interface users code against (and mock), and TimerOptions, how a timer is built.
//
// schedule() turns a relative delay into a deadline with saturating arithmetic (clock.hpp) and
// forwards to schedule_at(). Implementations say which calls are thread-safe; HashedWheelTimer's
// all are.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <wheeltimer/clock.hpp>
#include <wheeltimer/config.hpp>
#include <wheeltimer/executor.hpp>
#include <wheeltimer/pending_task.hpp>
#include <wheeltimer/task.hpp>
#include <wheeltimer/timer_future.hpp>

namespace wheeltimer {

struct TimerOptions {
  // Length of one tick of the wheel; > 0. It sets the wheel's granularity and how far apart the
  // indicator's timed wake-ups are at least (a seventh of a tick, at most 1 ms): a task starts at
  // its own deadline, never before it, not at the end of its tick.
  Clock::duration tick = std::chrono::milliseconds(1);
  // Slots in the wheel, rounded up to a power of two; 1 .. 2^30.
  std::size_t wheel_size = 512;
  // 0: unbounded; otherwise schedule()/adopt() beyond this many pending tasks throws Rejected.
  std::size_t max_pending = 0;
  // Where expired tasks run. Null: inline, on the indicator thread.
  std::shared_ptr<Executor> executor{};
  // Told of every exception a task throws, on the thread that ran it, before the task's future
  // turns FINISHED; with a pool executor that may be several threads at once. Also told, on the
  // indicator thread, when the executor's execute() throws (that task is then CANCELED). An
  // exception thrown by on_error itself is swallowed.
  std::function<void(std::exception_ptr)> on_error{};
  // The indicator thread's name (as `top -H` shows it), set before the constructor returns; cut
  // to the 15 bytes Linux keeps, never inside a UTF-8 character.
  std::string thread_name = "wheeltimer";
};

class WHEELTIMER_API Timer {
 public:
  virtual ~Timer() = default;

  // Schedules `task` to run at `deadline` (time_point::max(): never before stop()).
  virtual TimerFuture schedule_at(Task task, Clock::time_point deadline) = 0;

  // Schedules `task` to run `delay` from now. Huge delays saturate to "never before stop()"; zero
  // or negative ones mean "due now" (which still runs on the timer, never inside this call).
  template <class Rep, class Period>
  TimerFuture schedule(Task task, std::chrono::duration<Rep, Period> delay) {
    return schedule_at(std::move(task), saturating_deadline(delay));
  }

  // Stops the timer and hands back every task that has not started, ordered by deadline.
  virtual std::vector<PendingTask> stop() = 0;
};

}  // namespace wheeltimer
