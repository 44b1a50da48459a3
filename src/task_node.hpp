// TaskNode: the one heap allocation behind every scheduled task. It holds the task's callable, its
// deadline, its state, what it threw, and the links the indicator uses to keep it in a wheel slot.
// TimerFuture and PendingTask are counted references to it.
//
// Layout: a fixed header (this class, 48 bytes) followed by storage sized to the callable, rounded
// up to whole words and never less than one: 56 bytes for an 8-byte capture. The storage holds the
// callable (moved out of the Task) while the task is WAITING or RUNNING; once the callable has run
// and been destroyed, the same bytes hold what it threw (an exception_ptr, null if nothing).
//
// State word (one atomic, so every transition is a single compare-and-swap any thread may make):
//   bits 0-1   TaskState
//   bit  2     kAttached:   counted in the owning timer's pending(); owner_ is that timer
//   bit  3     kDispatched: handed to the executor under the epoch in bits 8-31
//   bit  4     kWaiter:     a thread may be blocked in wait(); whoever settles the task wakes it
//   bit  5     kInWheel:    the indicator took it in, into the wheel or (due already) the due
//                           queue; a hint for cancel(), as Wheel::contains() tells whether it is
//                           linked in the wheel; cleared when it is dispatched, detached,
//                           started or canceled
//   bit  6     unused
//   bit  7     kUncounted:  detached, and a timer's pending() counts it for a moment (stop() has
//                           yet to lower it, or adopt() has raised it before attaching); a cancel()
//                           that wins meanwhile waits until the count is right before it returns
//   bits 8-31  epoch:       bumped on every dispatch, so a wrapper left in an executor queue by
//                           a stopped timer can never start the task after another timer adopted it
//   bits 32-63 references:  TimerFuture and PendingTask handles, the owner's, executor wrappers'
//                           and the list of canceled nodes'. In the same word so that cancel()
//                           takes the reference for the list of nodes to unlink in its
//                           transition, not with one more atomic step.
// Whoever wins the transition out of "WAITING, attached" (start, cancel, stop's detach, an
// executor's refusal) is the one that lowers the owner's pending() count, so it drops exactly once.
//
// Threads: the state word (with the reference count) is atomic; the callable (ops_ and the storage)
// belongs to whoever won the transition out of WAITING; what it threw is read only once FINISHED is
// observed; the wheel links belong to the owner's indicator thread (or to stop() once the
// indicator has exited). A canceled node's ops_ word becomes its link in the owner's list of nodes
// to unlink: written by the canceling thread before it pushes the node, then read by whoever takes
// the list (see WheelCore::on_canceled).
//
// Memory ordering: transitions are acq_rel. What the scheduler wrote into the node reaches the
// indicator through the inbound queue (InboundLanes) and other threads through the handle they got
// from it, so the winner of a transition sees it; FINISHED is published with release after the
// exception_ptr is written into the storage.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <utility>

#include <wheeltimer/clock.hpp>
#include <wheeltimer/task.hpp>
#include <wheeltimer/timer_future.hpp>

namespace wheeltimer::detail {

class WheelCore;

class TaskNode {
 public:
  static constexpr std::uint32_t kStateMask = 0x3;
  static constexpr std::uint32_t kAttached = 1u << 2;
  static constexpr std::uint32_t kDispatched = 1u << 3;
  static constexpr std::uint32_t kWaiter = 1u << 4;
  static constexpr std::uint32_t kInWheel = 1u << 5;
  static constexpr std::uint32_t kUncounted = 1u << 7;
  static constexpr std::uint32_t kEpochUnit = 1u << 8;
  static constexpr std::uint32_t kEpochMask = ~(kEpochUnit - 1);
  // What a task's start or cancel carries over into its new word.
  static constexpr std::uint32_t kKeptOnSettle = kWaiter | kEpochMask;

  // A new node holding the callable of `task` (which must not be empty), attached to `owner`, with
  // two references: the owner's and the caller's future. Throws std::bad_alloc, and then the
  // callable stays in `task`, which destroys it.
  static TaskNode* create(Task task, Clock::time_point deadline, WheelCore* owner);
  TaskNode(const TaskNode&) = delete;
  TaskNode& operator=(const TaskNode&) = delete;

  void retain() noexcept { word_.fetch_add(kReference, std::memory_order_relaxed); }
  // Drops `count` references at once; the last one destroys and frees the node.
  void release(std::uint32_t count = 1) noexcept {
    // acq_rel: the last owner must see every other owner's writes before destroying.
    const std::uint64_t old = word_.fetch_sub(count * kReference, std::memory_order_acq_rel);
    if (old / kReference == count) destroy();
  }

  TaskState state() const noexcept {
    return static_cast<TaskState>(word_.load(std::memory_order_acquire) & kStateMask);
  }
  Clock::time_point deadline() const noexcept { return deadline_; }
  std::exception_ptr error() const noexcept;

  // --- Transitions. Each returns whether this call made it. ---

  // WAITING -> CANCELED from any thread. Lowers the owner's pending() if attached, and lists the
  // node for unlinking if it was in the wheel (with a reference taken in the same step), then
  // destroys the captures and wakes waiters.
  bool cancel() noexcept;
  // WAITING, attached, not dispatched -> RUNNING (the indicator running it inline).
  bool start_attached() noexcept;
  // WAITING, attached, dispatched under `epoch` -> RUNNING (an executor thread starting it).
  bool start_dispatched(std::uint32_t epoch) noexcept;
  // WAITING, detached -> RUNNING (PendingTask::run()).
  bool start_detached() noexcept;
  // Marks a WAITING node as linked into the wheel (the indicator, before linking it); false if it
  // was canceled on its way.
  bool enter_wheel() noexcept;
  // Marks an attached WAITING node as handed to the executor; returns the new epoch.
  std::optional<std::uint32_t> mark_dispatched() noexcept;
  // WAITING, dispatched under `epoch` -> CANCELED, exactly as cancel() does it: the executor
  // refused the work.
  bool refuse(std::uint32_t epoch) noexcept;
  // WAITING, attached -> WAITING, detached and uncounted (stop() handing it back, or adopt()
  // giving it up). The caller then lowers the owner's pending() and calls counted(): until then a
  // cancel() that wins waits, so that it still returns with the count lowered.
  bool detach() noexcept;
  void counted() noexcept;
  // WAITING, detached -> WAITING, detached and uncounted: adopt(), before its count, which comes
  // before attach().
  bool mark_uncounted() noexcept;
  // WAITING, detached -> WAITING, attached to `owner` and counted (adopt()).
  bool attach(WheelCore* owner) noexcept;

  // Asks for the cache lines that starting the task touches: the header, and the start of the
  // storage, which lies on the next line unless the node begins in a line's first 16 bytes.
  void prefetch_for_start() const noexcept {
    __builtin_prefetch(this, 1);
    __builtin_prefetch(reinterpret_cast<const char*>(this) + 64, 1);
  }

  // Runs a started (RUNNING) task: destroys the captures afterwards, stores what it threw, tells
  // `on_error` (swallowing what that throws), then publishes FINISHED, dropping the caller's
  // reference in the same atomic step: the node may be gone on return.
  template <class OnError>
  void run(OnError&& on_error) noexcept {
    std::exception_ptr thrown;
    try {
      ops_->invoke(storage());
    } catch (...) {
      thrown = std::current_exception();
    }
    destroy_callable();
    // The callable's bytes now hold what it threw, for error() once FINISHED is published.
    const std::exception_ptr& stored = *::new (storage()) std::exception_ptr(std::move(thrown));
    if (stored) {
      try {
        on_error(stored);
      } catch (...) {
      }
    }
    finish();
  }

  // Blocks until FINISHED or CANCELED or `limit`; time_point::max() means no limit.
  bool wait_until(Clock::time_point limit) const;

  // The next node in a list of canceled nodes waiting to be unlinked from their owner's wheel.
  TaskNode* next_canceled() const noexcept { return next_canceled_; }
  void set_next_canceled(TaskNode* next) noexcept { next_canceled_ = next; }

  // --- Indicator-only fields: the wheel's intrusive list. `pprev` points at the link that points
  // here (a slot head or the previous node's `next`), so unlinking needs no slot lookup; it is
  // null while the node is not in the wheel. ---
  TaskNode* next = nullptr;
  TaskNode** pprev = nullptr;

 private:
  static constexpr std::uint64_t kReference = std::uint64_t{1} << 32;
  static constexpr std::uint64_t kStateBits = kReference - 1;

  TaskNode(Clock::time_point deadline, WheelCore* owner) noexcept
      : word_(2 * kReference | kAttached),
        owner_(owner),
        deadline_(deadline) {}
  ~TaskNode() = default;

  // The storage right after the header: the callable, then what it threw.
  void* storage() noexcept { return this + 1; }
  const std::exception_ptr& stored_error() const noexcept {
    return *std::launder(reinterpret_cast<const std::exception_ptr*>(this + 1));
  }
  void destroy_callable() noexcept { std::exchange(ops_, nullptr)->destroy(storage()); }
  // The last reference: destroys whatever the storage holds, then frees the node.
  void destroy() noexcept;

  // The compare-and-swap loop behind every transition: succeeds when the state bits match
  // `expected` under `mask`, replacing them with `next(state bits)` and adding
  // `references(state bits)` references; returns the state bits it replaced.
  template <class Next, class References>
  std::optional<std::uint32_t> transition(std::uint32_t mask, std::uint32_t expected, Next next,
                                          References references) noexcept {
    std::uint64_t current = word_.load(std::memory_order_acquire);
    std::uint32_t bits = 0;
    do {
      bits = static_cast<std::uint32_t>(current);
      if ((bits & mask) != expected) return std::nullopt;
    } while (!word_.compare_exchange_weak(
        current, (current & ~kStateBits) + references(bits) * kReference + next(bits),
        std::memory_order_acq_rel, std::memory_order_acquire));
    return bits;
  }
  template <class Next>
  std::optional<std::uint32_t> transition(std::uint32_t mask, std::uint32_t expected,
                                          Next next) noexcept {
    return transition(mask, expected, next, [](std::uint32_t) { return std::uint64_t{0}; });
  }
  bool start(std::uint32_t mask, std::uint32_t expected) noexcept;
  bool cancel_if(std::uint32_t mask, std::uint32_t expected) noexcept;
  void await_counted() const noexcept;
  void finish() noexcept;

  mutable std::atomic<std::uint64_t> word_;
  WheelCore* owner_;
  const Clock::time_point deadline_;
  union {
    // The callable's operations; null once it is destroyed, unless a cancel reused the word:
    const Task::Ops* ops_ = nullptr;
    TaskNode* next_canceled_;  // once canceled: see next_canceled()
  };
};

// The header keeps the storage after it word-aligned, as the callable and exception_ptr need, and
// is paid for by every pending timer.
static_assert(sizeof(TaskNode) % alignof(void*) == 0);
static_assert(sizeof(void*) != 8 || sizeof(TaskNode) == 48);
static_assert(sizeof(std::exception_ptr) == sizeof(void*) &&
              alignof(std::exception_ptr) <= alignof(void*));

}  // namespace wheeltimer::detail
