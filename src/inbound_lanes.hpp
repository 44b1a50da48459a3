// InboundLanes: where new tasks wait until the indicator takes them into the wheel. Two lock-free
// queues: one for tasks due soon, one for the rest.
//
// Why two: the indicator takes new tasks in at a bounded rate between rounds of starting due ones,
// and a flood of schedule() calls can outrun it for a while (`wheeltimer-bench fire` makes
// 1,000,000 calls in about 0.1 s). In one first-in-first-out queue, a task due in a millisecond
// would wait behind every far-off task pushed before it. Here a task due before the indicator's
// horizon (the end of the ticks it has already run the wheel through, published with
// set_horizon()) goes to the soon lane, which the indicator takes from first. Any other task is
// due at least a lookahead after the indicator's last round, so only a backlog longer than that
// could make it late. While the indicator sleeps the horizon grows stale, and a task due soon may
// go to the far lane; it then waits behind fewer tasks, as no flood is being taken in.
//
// The lane is only a hint: both lanes are taken in, looked at before the indicator sleeps and
// drained by stop(), so a stale horizon costs some lateness at worst, never a task.
//
// Threads: push() from any thread; the rest from the indicator, or from stop() once the indicator
// has exited.
//
// Memory ordering: moodycamel's enqueue releases and its dequeue acquires, so whoever takes a node
// sees everything its producer wrote into it before push().
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>

#include <wheeltimer/clock.hpp>

#include "moodycamel_queue.hpp"
#include "task_node.hpp"

namespace wheeltimer::detail {

class InboundLanes {
 public:
  static constexpr std::size_t kBatch = 256;

  // Pushes `node`, due at `deadline`; false if no memory could be had.
  bool push(TaskNode* node, Clock::time_point deadline) noexcept {
    const bool soon =
        deadline.time_since_epoch().count() < horizon_.load(std::memory_order_relaxed);
    return (soon ? soon_ : far_).enqueue(node);
  }

  // Tasks due before `horizon` count as due soon from now on.
  // Stores only a change, so the producers' copies of the line stay valid within a tick.
  void set_horizon(Clock::time_point horizon) noexcept {
    const Clock::rep value = horizon.time_since_epoch().count();
    if (horizon_.load(std::memory_order_relaxed) != value) {
      horizon_.store(value, std::memory_order_relaxed);
    }
  }

  std::size_t size_approx() const noexcept { return soon_.size_approx() + far_.size_approx(); }

  // Takes up to `limit` nodes into `out`, the soon lane's first; returns how many.
  std::size_t take(TaskNode** out, std::size_t limit) noexcept {
    const std::size_t soon = soon_.try_dequeue_bulk(out, limit);
    if (soon == limit) return soon;
    return soon + far_.try_dequeue_bulk(out + soon, limit - soon);
  }

  // Takes about `limit` nodes, a batch at a time, passing each batch to `handle`: first from the
  // soon lane, then from the far lane, which gets at least one batch, so that a flood of tasks due
  // soon cannot hold the others back for good.
  template <class Handle>
  void take_round(std::size_t limit, Handle&& handle) {
    const std::size_t soon = take_from(soon_, limit, handle);
    take_from(far_, std::max(limit - soon, kBatch), handle);
  }

 private:
  using Queue = moodycamel::ConcurrentQueue<TaskNode*>;

  // Up to `limit` nodes from `queue`; returns how many.
  template <class Handle>
  static std::size_t take_from(Queue& queue, std::size_t limit, Handle& handle) {
    TaskNode* batch[kBatch];
    std::size_t taken = 0;
    while (taken < limit) {
      const std::size_t count = queue.try_dequeue_bulk(batch, std::min(kBatch, limit - taken));
      if (count == 0) break;
      taken += count;
      handle(std::span<TaskNode* const>(batch, count));
    }
    return taken;
  }

  // Read by every producer, written by the indicator at most once a tick: a line of its own.
  // Until the indicator's first round every task counts as due soon.
  alignas(64) std::atomic<Clock::rep> horizon_{
      Clock::time_point::max().time_since_epoch().count()};
  alignas(64) Queue soon_;
  alignas(64) Queue far_;
};

}  // namespace wheeltimer::detail
