// WheelCore: everything behind a HashedWheelTimer: the inbound lanes producers push into, the
// indicator thread that ticks the wheel, dispatch to the executor, cancellation and stop(). The
// producers' side is in wheel_core.cpp, the indicator's in wheel_core_indicator.cpp, and stop()'s
// taking out of the tasks in wheel_core_stop.cpp.
//
// Threads:
//  - schedule_at()/adopt(): any thread. They count the task as admitted in `control_`, then push
//    it onto one of the lock-free inbound lanes; only the indicator (or stop(), after the indicator
//    exits) pops it.
//    A task due before the indicator's next wake-up (`wake_at_`) wakes it early.
//  - TaskNode::cancel(): any thread; calls on_canceled(), which lists the node for unlinking and
//    now and then asks the indicator to unlink (see "Waking").
//  - The wheel, `dispatched_`, the consumer side of the inbound lanes and the taking of the lists
//    of canceled nodes: the indicator thread, and stop() once it has joined the indicator.
//  - stop(): any thread but the timer's own tasks; serialised by stop_mutex_.
//
// Counting: pending() is the number of tasks admitted minus the number settled (started, canceled,
// handed back, or admitted and then undone). `control_` packs the admitted count and the stopping
// flag into one word, so "is it stopping?" and "count me" are one atomic step: a producer either
// sees the flag and backs out, or is counted before stop() sets it, and then stop() keeps draining
// the inbound lanes until that task (like every other accepted one) has been reclaimed and
// pending() is zero. Settling is spread over `stripes_`, counters on cache lines of their own,
// one picked per thread, so threads canceling at once do not fight over one line; pending() and a
// max_pending check that fails sum them up (see admit() and pending() in wheel_core.cpp).
//
// Waking: the indicator sleeps until the earliest deadline it knows of, or the next wheel event,
// whichever comes first, and publishes that time in `wake_at_` (kAwake while it works). A producer
// pushes, then reads `wake_at_`; the indicator publishes, then looks at the lanes once more before
// sleeping. With a full barrier on each side (Dekker's pattern) either the producer sees the
// published time and wakes the indicator if its task is due earlier, or the indicator sees the
// task. Every kHousekeepingPeriod-th task admitted also wakes a sleeping indicator. So does a
// cancel() whose settle brings its stripe's count to a multiple of kHousekeepingPeriod: it sets
// `unlink_wanted_`, then reads `wake_at_`, and the indicator reads the flag after publishing, with
// the same barriers; so it either wakes the indicator or keeps it from sleeping, and one more
// round unlinks what was listed. So the canceled tasks of a schedule-and-cancel stream, and those
// of a burst of cancels with no schedule() after it (even from the timer's own tasks), leave the
// wheel as they go, not at a far-off wake-up. Best effort: the tail of a burst waits for the next
// wake-up, and a settle that does not ask (a task's start, a racing cancel) may step over a
// multiple.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <wheeltimer/timer.hpp>

#include "due_queue.hpp"
#include "executor_reference.hpp"
#include "inbound_lanes.hpp"
#include "sanitizers.hpp"
#include "task_node.hpp"
#include "time_source.hpp"
#include "wheel.hpp"

namespace wheeltimer::detail {

class WheelCore {
 public:
  // Starts the indicator on `time`, by default the real clock coalescing wake-ups to a seventh of
  // a tick, at most 1 ms (see SteadyTimeSource). Invalid options are std::invalid_argument naming
  // the value; wheel_size is rounded up to a power of two.
  explicit WheelCore(TimerOptions options, std::unique_ptr<TimeSource> time = nullptr);
  ~WheelCore();
  WheelCore(const WheelCore&) = delete;
  WheelCore& operator=(const WheelCore&) = delete;

  TimerFuture schedule_at(Task task, Clock::time_point deadline);
  TimerFuture adopt(PendingTask task);
  // Throws std::bad_alloc if it finds no memory to hand the tasks back in; every task it had
  // taken out by then is kept, and the next call returns them with the rest.
  std::vector<PendingTask> stop();
  // stop() for the destructor: cancels what stop() would hand back; out of memory, it cancels
  // them where they lie, allocating nothing, so it never fails for lack of memory.
  void stop_discarding() noexcept;
  std::size_t pending() const noexcept;
  std::size_t wheel_size() const noexcept { return wheel_.slot_count(); }
  // Tasks linked in the wheel now. The indicator owns the wheel: read this only while it is
  // known to sleep (tests on a ManualClock, after advance()), or on the indicator's own thread
  // (from a task it runs inline).
  std::size_t linked() const noexcept { return wheel_.size(); }
  static constexpr std::size_t kHousekeepingPeriod = 16384;

  // Called by TaskNode::cancel() on the canceling thread, once it has won WAITING -> CANCELED for
  // a node attached here; `in_wheel` if the indicator had linked it into the wheel, and then with
  // a reference for the list of nodes to unlink, which it links through the node's ops_ word.
  void on_canceled(TaskNode* node, bool in_wheel) noexcept;

 private:
  class ExecutorWork;

  // Counts one task in, or throws Stopped/Rejected; the caller then pushes it. True for every
  // kHousekeepingPeriod-th task.
  bool admit(const char* operation);
  // admit()'s checks, counting nothing: for a task that is already settled (adopt()).
  void check_admission(const char* operation);
  // Both of the above: counts the task in only if kCount.
  template <bool kCount>
  bool admission(const char* operation);
  struct Stripe;
  Stripe& own_stripe() noexcept;  // the calling thread's stripe of stripes_
  void settled_one() noexcept;  // one pending task left (started, canceled, handed back or undone)
  // settled_one() for a node detach() or mark_uncounted() marked, then its mark cleared: in that
  // order, as a cancel() waiting on the mark must find the count lowered.
  void settled_uncounted(TaskNode* node) noexcept;
  std::uint64_t settled_sum() const noexcept;  // all of the stripes' settled counts, wrapping
  std::uint64_t outstanding() const noexcept;  // pending() before the max_pending cap

  // After a push: wakes a sleeping indicator if the task is due before it would wake, or for
  // `housekeeping`.
  void after_push(Clock::time_point deadline, bool housekeeping) noexcept;
  // Wakes the indicator if this thread is the one to flip `wake_at_` from `seen` (not kAwake).
  void claim_wake(Clock::rep seen) noexcept;
  // From a cancel(): one more round of the indicator unlinks what is listed by now.
  void ask_to_unlink() noexcept;
  // A full barrier between this thread's earlier stores and later loads (Dekker's pattern).
  void store_load_barrier() noexcept;

  // The indicator thread's body: marks the thread as this timer's indicator, names it, sets its
  // timer slack, tells `named`, then runs the wheel.
  void indicator_main(const std::string& name, std::promise<void>& named);
  // The indicator thread's whole life. It handles running out of memory itself (it waits and
  // tries again), so nothing is expected to leave it; anything that did would end the program.
  void run_indicator() noexcept;
  void transfer_inbound();
  // Unlinks up to kMaxNodesPerRound canceled nodes; true if it reached that cap (more may wait).
  bool unlink_canceled() noexcept;
  bool take_canceled() noexcept;     // moves one stripe's lists into unlinking_; false if all empty
  void release_canceled() noexcept;  // drops every listed canceled node's list reference
  // Passes up to `limit` listed canceled nodes (each with its list's reference) to `handle`, one
  // off each list in turn: about the reverse order of their cancels. True if it took `limit`.
  template <class Handle>
  bool for_each_canceled(std::size_t limit, Handle&& handle) noexcept;
  // Starts every due task whose deadline has come, in deadline order.
  void fire_due(Clock::time_point now);
  void dispatch(TaskNode* node);
  // The executor's refusal of a dispatched node (or no memory to track it): `why` goes to
  // on_error, and the task is canceled.
  void refuse(TaskNode* node, std::uint32_t epoch, std::exception_ptr why) noexcept;
  // Runs a task this thread started, dropping the caller's reference to it.
  void run_started(TaskNode* node) noexcept;
  void report(std::exception_ptr error) const noexcept;
  void prune_dispatched();

  // stop()'s parts; take_out_all(), stop() and stop_discarding() are in wheel_core_stop.cpp.
  void halt_indicator();
  // Whether this thread is running one of this timer's tasks, or is its indicator: stop() here
  // would wait for itself.
  bool on_own_thread() const noexcept;
  // Takes every task out of the stopped timer: each that has not started is detached, settled
  // and passed to `hand_back`; running ones are waited for, and the rest released. Before it
  // takes anything out of the inbound lanes it asks `room(n)`, n being how many wait there (a
  // guess), how many it may take; so a hand_back that allocates can make room first, and a
  // failure leaves the rest where they are.
  template <class HandBack, class Room>
  void take_out_all(HandBack&& hand_back, Room&& room);

  // Declared first, so it is released last: after stop() has run, and also when the constructor
  // fails.
  ExecutorReference executor_;
  TimerOptions options_;  // not changed after construction; its executor is moved to executor_
  const std::unique_ptr<TimeSource> time_;
  const Clock::time_point start_;
  const std::uint64_t lookahead_ticks_;  // see kLookahead in wheel_core.cpp

  // Admitted count and the stopping flag (see wheel_core.cpp). Written by every producer: kept on
  // its own cache line, away from the indicator's fields. With a max_pending, admit() also reads
  // `settled_floor_`, a settled count summed up earlier (a lower bound of the current one), so it
  // shares the line.
  alignas(64) std::atomic<std::uint64_t> control_{0};
  std::atomic<std::uint64_t> settled_floor_{0};
  // When the indicator will wake next (Clock::rep), or kAwake. Written by the indicator about once
  // per wake-up and read by every producer: its own line, which a producer writes only when it
  // claims a wake-up (claim_wake()); cancels write the flag next to it, rarely.
  static constexpr Clock::rep kAwake = std::numeric_limits<Clock::rep>::min();
  alignas(64) std::atomic<Clock::rep> wake_at_{kAwake};
  // Set by ask_to_unlink() about once per kHousekeepingPeriod settles on a stripe, cleared by the
  // indicator.
  std::atomic<bool> unlink_wanted_{false};
#if defined(WHEELTIMER_TSAN)
  alignas(64) std::atomic<std::uint64_t> tsan_barrier_{0};  // see store_load_barrier()
#endif
  // A thread settles tasks into one stripe's count and lists the nodes it cancels out of the wheel
  // on that stripe: up to kStripes threads canceling at once share no line, and a cancel touches
  // one line of the timer. The lists are intrusive (linked through TaskNode::next_canceled()), so
  // a cancel never allocates; any thread pushes, and only the indicator (or stop()) takes a list,
  // whole. Walking one list waits out a cache miss per node; a stripe has kCanceledLists, filled
  // in turn, so the indicator walks them side by side (take_in_turn()) and their misses overlap.
  static constexpr std::size_t kCanceledLists = 7;  // with the count, one cache line
  using CanceledLists = std::array<TaskNode*, kCanceledLists>;
  struct alignas(64) Stripe {
    std::atomic<std::uint64_t> settled{0};  // wrapping
    // Each listed node holds a reference for its list.
    std::array<std::atomic<TaskNode*>, kCanceledLists> canceled{};
  };
  static constexpr std::size_t kStripes = 16;
  Stripe stripes_[kStripes];

  InboundLanes inbound_;  // see inbound_lanes.hpp

  // Indicator-owned state.
  // stop() has begun: what the indicator reads, so that it never reads control_, which every
  // producer writes. Only an early exit hangs on it; stop() interrupts the time source as well.
  std::atomic<bool> stopping_{false};
  bool stop_requested() const noexcept { return stopping_.load(std::memory_order_relaxed); }
  Wheel wheel_;
  CanceledLists unlinking_{};  // the rest of the lists taken by unlink_canceled()
  DueQueue due_;  // nodes whose tick has begun, each with the wheel's reference
  std::vector<TaskNode*> dispatched_;  // handed to the executor, each with the owner's reference
  // dispatched_ is pruned of settled tasks once it holds prune_at_ of them: twice what the last
  // pruning kept, and at least kMinPrune.
  static constexpr std::size_t kMinPrune = 1024;
  std::size_t prune_at_;

  // Each task stop() hands back with its deadline, so sorting them reads no node (a million nodes
  // are a million cache misses per comparison round).
  struct HandedBack {
    Clock::time_point deadline;
    PendingTask task;
  };

  std::mutex stop_mutex_;
  bool stopped_ = false;  // guarded by stop_mutex_
  // What a stop() that ran out of memory had taken out, for the next one; guarded by stop_mutex_.
  std::vector<HandedBack> handed_back_;

  std::thread indicator_;
};

}  // namespace wheeltimer::detail
