// TimerFuture: a cheap, copyable handle to one scheduled task, and TaskState, the four states a
// task moves through:
//
//   WAITING --(an executor thread or PendingTask::run() starts it)--> RUNNING --> FINISHED
//   WAITING --(cancel(), or an unrun PendingTask is dropped)--------> CANCELED
//
// Nothing else. Every const member and cancel() may be called from any thread, concurrently, and
// from inside the task itself; as with std::shared_ptr, one handle object is not assigned to while
// another thread uses it. The handle shares the task's one heap allocation; copies are
// reference-counted.
//
// Memory ordering: a state() or wait*() that observes FINISHED happens after everything the task
// did (its captures already destroyed), and exception() then returns what it threw. A canceled
// task's captures are destroyed by the cancel() call that won, before it returns; another thread
// may observe CANCELED a moment before that destruction has finished.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <string_view>

#include <wheeltimer/clock.hpp>
#include <wheeltimer/config.hpp>

namespace wheeltimer {

enum class TaskState : std::uint8_t { waiting, running, finished, canceled };

// "WAITING", "RUNNING", "FINISHED", "CANCELED".
WHEELTIMER_API std::string_view to_string(TaskState state) noexcept;

namespace detail {
class TaskNode;
class WheelCore;
}

class WHEELTIMER_API TimerFuture {
 public:
  // An empty handle: not valid(), state() canceled, waits return true at once.
  TimerFuture() noexcept = default;
  TimerFuture(const TimerFuture& other) noexcept;
  TimerFuture(TimerFuture&& other) noexcept;
  TimerFuture& operator=(const TimerFuture& other) noexcept;
  TimerFuture& operator=(TimerFuture&& other) noexcept;
  ~TimerFuture();

  // True when this handle refers to a task.
  bool valid() const noexcept { return node_ != nullptr; }
  TaskState state() const noexcept;

  // WAITING -> CANCELED. True only for the one call that made the change; false once the task is
  // RUNNING, FINISHED or CANCELED. A task queued in an executor but not started can still be
  // canceled and then never runs. On success the task's captures are destroyed before this returns
  // and the owning timer's pending() has already dropped. Lock-free, but for one race: winning on a
  // task that stop() or adopt() on another thread is counting, it yields until they are done.
  bool cancel() noexcept;

  bool is_cancelled() const noexcept { return state() == TaskState::canceled; }
  // FINISHED only: a canceled task is not "done".
  bool is_done() const noexcept { return state() == TaskState::finished; }

  // When the task is due: exactly what schedule_at() was given; time_point::max() for a saturated
  // delay or an empty handle.
  Clock::time_point deadline() const noexcept;

  // Block until FINISHED or CANCELED. The timed forms return whether that happened in time;
  // Clock::duration::max() means no limit.
  void wait() const;
  bool wait_for(Clock::duration limit) const;
  bool wait_until(Clock::time_point limit) const;
  // Any other duration or time point saturates the same way (hours::max() is no limit either),
  // instead of overflowing on its way to Clock's nanoseconds. A NaN limit is std::invalid_argument.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> limit) const {
    return wait_until(saturating_deadline(limit));
  }
  template <class Duration>
  bool wait_until(std::chrono::time_point<Clock, Duration> limit) const {
    return wait_until(saturating_deadline(limit.time_since_epoch(), Clock::time_point()));
  }

  // What the task threw, once FINISHED; null otherwise (a canceled task threw nothing).
  std::exception_ptr exception() const noexcept;

  // Two handles are equal when they refer to the same task (or are both empty).
  friend bool operator==(const TimerFuture& a, const TimerFuture& b) noexcept {
    return a.node_ == b.node_;
  }

 private:
  friend class PendingTask;
  friend class detail::WheelCore;
  // Takes over one reference to `node`.
  explicit TimerFuture(detail::TaskNode* node) noexcept : node_(node) {}

  detail::TaskNode* node_ = nullptr;
};

}  // namespace wheeltimer
