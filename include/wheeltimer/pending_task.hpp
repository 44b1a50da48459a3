// PendingTask: a task that a timer's stop() handed back without running it, so a service can run
// it itself or adopt() it into another timer at the same deadline, keeping its TimerFuture.
//
// Move-only. Dropping one that was neither run nor adopted cancels its future, so no waiter
// blocks forever. One thread at a time uses a given PendingTask; its future may be used (and
// canceled) from any thread meanwhile.
#pragma once

#include <utility>

#include <wheeltimer/clock.hpp>
#include <wheeltimer/config.hpp>
#include <wheeltimer/timer_future.hpp>

namespace wheeltimer {

class WHEELTIMER_API PendingTask {
 public:
  // Moves and the destructor of an empty handle are inline, so that stop() can sort a million of
  // them by deadline without a call per move.
  PendingTask(PendingTask&& other) noexcept : node_(std::exchange(other.node_, nullptr)) {}
  PendingTask& operator=(PendingTask&& other) noexcept {
    if (this != &other) {
      if (node_ != nullptr) discard();
      node_ = std::exchange(other.node_, nullptr);
    }
    return *this;
  }
  PendingTask(const PendingTask&) = delete;
  PendingTask& operator=(const PendingTask&) = delete;
  ~PendingTask() {
    if (node_ != nullptr) discard();
  }

  // The original deadline, also after run(); time_point::max() once moved from or adopted.
  Clock::time_point deadline() const noexcept;
  // The task's future (the same handle its scheduler got), also after run(); empty once moved
  // from or adopted.
  TimerFuture future() const noexcept;
  // Runs the task on the calling thread with the usual WAITING -> RUNNING -> FINISHED transitions.
  // An exception is stored in the future, not rethrown. A no-op if the task was canceled
  // meanwhile or has already run, or if this PendingTask was adopted or moved from.
  void run() noexcept;

 private:
  friend class detail::WheelCore;
  // Takes over one reference to `node`.
  explicit PendingTask(detail::TaskNode* node) noexcept : node_(node) {}
  detail::TaskNode* release() noexcept { return std::exchange(node_, nullptr); }

  // Cancels and lets go of the task; node_ is not null.
  void discard() noexcept;

  detail::TaskNode* node_ = nullptr;
};

}  // namespace wheeltimer
