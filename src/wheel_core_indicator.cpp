// WheelCore's indicator thread: taking new tasks in, unlinking canceled ones, running the wheel
// and starting what is due, inline or through the executor. See wheel_core.hpp for the threads
// and the waking protocol; the producers' side is in wheel_core.cpp.
#include "wheel_core.hpp"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <future>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <utility>

#include "indicator_steps.hpp"
#include "take_in_turn.hpp"

namespace wheeltimer::detail {
namespace {

// A flood of schedule() or cancel() calls delays due tasks by at most about this much work per
// round, each (intake may take one batch more: see InboundLanes::take_round()); the rest waits
// in its lanes or lists for the next round, which follows at once, so a smaller round costs only
// the round's own few steps. Netty takes 100,000 a tick; at 50-90 ns each that held due tasks back
// 4-9 ms in `wheeltimer-bench fire`'s scheduling loop. In `fire`, p99 lateness had a median of
// 0.834 ms with 4,096 a round (over 1.2 ms in 14 runs of 54), 0.696 ms with 1,024 (11 of 54) and
// 0.586 ms with 512 (3 of 36), CPU-seconds 0.846, 0.882 and 0.858 (2026-11-28, alternating).
constexpr std::size_t kMaxNodesPerRound = 512;
// How many canceled nodes in the wheel behind the one taken unlink_canceled() unlinks: enough for
// a few cache misses in flight.
constexpr std::size_t kUnlinkLag = 8;

// Cascaded nodes moved per round, between rounds of starting due tasks: a due task waits for at
// most one chunk of cascading (and one round of intake and of unlinking). In `wheeltimer-bench
// fire` a level-1 slot of ~490,000 nodes cascades from 448 ms on. The p99 lateness of the tasks
// due 400-500 ms, median of 8-9 runs: 0.42 ms with chunks of 4,096 (up to 1.8 ms), 0.28 ms with
// 1,024 (up to 0.65), at no measurable cost in CPU.
constexpr std::size_t kCascadeChunk = 1024;

// Linux lets a thread's timed sleep end up to its timer slack late (50 us by default), to batch
// wake-ups across the system. The indicator batches its own (kCoalescingPerTick in wheel_core.cpp);
// the kernel's slack on top only made lone tasks late: one task a millisecond, on a 1 ms tick,
// started at a median of 96 us late with it and 49 us with 1 us (medians of 5 runs each). prctl()
// takes 0 for "the default".
constexpr unsigned long kTimerSlackNs = 1000;
// How long the indicator waits before trying again when it found no memory for its own work.
constexpr Clock::duration kOutOfMemoryRetry = std::chrono::milliseconds(1);

// The timer whose task (or on_error) this thread is running, so stop() can refuse to wait for
// itself.
thread_local const WheelCore* running_in = nullptr;
// The timer whose indicator this thread is. A thread id would not do: once the indicator has been
// joined, a new thread may get its id.
thread_local const WheelCore* indicator_of = nullptr;

}  // namespace

// What a timer hands its executor: a reference to the node and the dispatch epoch. It starts the
// task only if the node is still queued under that epoch, so once the task was canceled or
// handed back by stop() it is a no-op, and it never touches the timer unless the start succeeded
// (a wrapper may outlive its timer in a shared executor's queue).
class WheelCore::ExecutorWork {
 public:
  ExecutorWork(WheelCore* core, TaskNode* node, std::uint32_t epoch) noexcept
      : core_(core), node_(node), epoch_(epoch) {
    node_->retain();
  }
  ExecutorWork(ExecutorWork&& other) noexcept
      : core_(other.core_), node_(std::exchange(other.node_, nullptr)), epoch_(other.epoch_) {}
  ExecutorWork& operator=(ExecutorWork&&) = delete;
  ~ExecutorWork() {
    if (node_ != nullptr) node_->release();
  }

  void operator()() noexcept {
    // The run drops this wrapper's reference in the step that publishes FINISHED.
    if (node_ != nullptr && node_->start_dispatched(epoch_)) {
      core_->run_started(std::exchange(node_, nullptr));
    }
  }

 private:
  WheelCore* core_;
  TaskNode* node_;
  std::uint32_t epoch_;
};


void WheelCore::indicator_main(const std::string& name, std::promise<void>& named) {
  indicator_of = this;
  pthread_setname_np(pthread_self(), name.c_str());
  prctl(PR_SET_TIMERSLACK, kTimerSlackNs);  // a refusal would cost accuracy, nothing else
  named.set_value();
  run_indicator();
}

void WheelCore::run_indicator() noexcept {
  do {
    transfer_inbound();
    if (unlink_wanted_.load(std::memory_order_relaxed)) {
      unlink_wanted_.exchange(false, std::memory_order_acquire);
    }
    const bool more_canceled = unlink_canceled();
    const Clock::time_point now = time_->now();
    const auto to_due = [this](TaskNode* node) { due_.push(node); };
    // Run the wheel ahead of now (at least into the next tick, so a tick's first tasks start at
    // their own deadlines, not at a wake-up at the tick's beginning). What it cascades on the way
    // is worked through in chunks below; only a cascade whose tasks are due now is finished here.
    const std::uint64_t tick = wheel_.tick_of(now);
    if (tick != Wheel::kNever) {
      try {
        const std::uint64_t ahead = saturating_tick_add(tick, lookahead_ticks_);
        wheel_.advance_to(ahead, to_due);
        inbound_.set_horizon(wheel_.tick_time(ahead + 1));  // tasks due before it go to due_
      } catch (const std::bad_alloc&) {
        // Out of memory for the cascade queue: every task is still held. Start what is due and
        // try again shortly (or when woken).
        fire_due(now);
        if (!time_->sleep_until(now + kOutOfMemoryRetry)) return;
        continue;
      }
      wheel_.finish_cascades_by(tick + 1, to_due);
    }
    fire_due(now);
    prune_dispatched();
    if (wheel_.cascading() && !stop_requested()) {
      wheel_.cascade_some(kCascadeChunk, to_due);
      continue;  // no sleep until the cascade is done; due tasks start between chunks
    }
    if (stop_requested()) {
      // stop() interrupts the time source right after setting the flag; returning through it
      // tells the source (and a ManualClock) that this indicator is gone.
      while (time_->sleep_until(Clock::time_point::max())) {
      }
      return;
    }
    if (more_canceled) continue;  // no sleep while the lists taken still hold canceled nodes

    const Clock::rep wake_at =
        next_wake(wheel_, due_, lookahead_ticks_).time_since_epoch().count();
    wake_at_.store(wake_at, std::memory_order_relaxed);
    // Pairs with the ones in after_push() and ask_to_unlink(): see "Waking" in the header.
    store_load_barrier();
    if (inbound_.size_approx() != 0 || unlink_wanted_.load(std::memory_order_relaxed)) {
      wake_at_.store(kAwake, std::memory_order_relaxed);
      continue;
    }
    const bool running = time_->sleep_until(Clock::time_point(Clock::duration(wake_at)));
    wake_at_.store(kAwake, std::memory_order_relaxed);
    if (!running) return;
  } while (true);
}

void WheelCore::transfer_inbound() {
  // What is left is seen by the check of the inbound lanes before the indicator sleeps.
  inbound_.take_round(kMaxNodesPerRound, [this](std::span<TaskNode* const> nodes) {
    // The nodes were written on the producers' cores. Ask for all of them first: enter_wheel()'s
    // compare-and-swap would otherwise wait out each cache miss in turn.
    for (TaskNode* node : nodes) __builtin_prefetch(node, 1);
    for (TaskNode* node : nodes) {
      if (!node->enter_wheel()) {  // canceled before it reached the wheel
        node->release();
        continue;
      }
      if (!wheel_.insert(node)) due_.push(node);  // its tick has begun (or passed)
    }
  });
}

// The order matters beyond this walk: the node pool hands cells out again in the order they came
// back, so it becomes the next timers' order in memory. Released a whole list at a time (every
// seventh node), the cells of a million canceled tasks left cancel on the next timer at 34-42 ns
// instead of 24-28 (`wheeltimer-micro`, repetitions after the first).
template <class Handle>
bool WheelCore::for_each_canceled(std::size_t limit, Handle&& handle) noexcept {
  std::size_t taken = 0;
  do {
    taken += take_in_turn(
        unlinking_.data(), unlinking_.size(), limit - taken,
        [](const TaskNode* node) { return node->next_canceled(); }, handle);
    if (taken == limit) return true;
  } while (take_canceled());
  return false;
}

bool WheelCore::unlink_canceled() noexcept {
  // Unlinking writes into a node's neighbours in the wheel, each likely a cache miss. So each
  // node's neighbours are asked for when it is taken, and it is unlinked kUnlinkLag nodes later,
  // so that the misses of several unlinks can be in flight at once. The delay is safe: unlink()
  // reads the links when it runs, and nothing else touches the wheel here (a prefetch made stale
  // by a neighbour's unlink is only wasted). First in, first out keeps the wheel nodes' release
  // order, which the node pool reuses (see for_each_canceled()); a due node, released at once,
  // may pass up to kUnlinkLag of them.
  std::array<TaskNode*, kUnlinkLag> lagging{};
  std::size_t turn = 0;
  const auto unlink = [this](TaskNode* node) {
    wheel_.unlink(node);
    node->release(2);  // the list's reference and the wheel's
  };
  const bool more = for_each_canceled(kMaxNodesPerRound, [&](TaskNode* node) {
    if (!Wheel::contains(node)) {  // among the due ones: dropped when its deadline comes
      node->release();
      return;
    }
    Wheel::prefetch_neighbours(node);
    TaskNode*& slot = lagging[turn++ % kUnlinkLag];
    if (slot != nullptr) unlink(slot);
    slot = node;
  });
  for (std::size_t i = 0; i < kUnlinkLag; ++i) {
    if (TaskNode* node = lagging[turn++ % kUnlinkLag]) unlink(node);
  }
  return more;
}

bool WheelCore::take_canceled() noexcept {
  for (Stripe& stripe : stripes_) {
    bool taken = false;
    for (std::size_t i = 0; i < kCanceledLists; ++i) {
      // Read first: an exchange would take the line of an idle stripe from its thread.
      if (stripe.canceled[i].load(std::memory_order_relaxed) == nullptr) continue;
      unlinking_[i] = stripe.canceled[i].exchange(nullptr, std::memory_order_acquire);
      taken = true;
    }
    if (taken) return true;
  }
  return false;
}

void WheelCore::release_canceled() noexcept {
  for_each_canceled(std::numeric_limits<std::size_t>::max(),
                    [](TaskNode* node) { node->release(); });
}

void WheelCore::fire_due(Clock::time_point now) {
  // Once stop() has begun, what has not started stays for stop() to hand back.
  while (!stop_requested()) {
    TaskNode* node = due_.pop_due(now);
    if (node == nullptr) return;
    dispatch(node);
  }
}

void WheelCore::dispatch(TaskNode* node) {
  if (!executor_) {
    // The wheel's reference goes with the run's last step, or here if the task was canceled.
    if (node->start_attached()) {
      run_started(node);
    } else {
      node->release();
    }
    return;
  }
  const auto epoch = node->mark_dispatched();
  if (!epoch) {  // canceled meanwhile
    node->release();
    return;
  }
  try {
    dispatched_.push_back(node);  // keeps the wheel's reference, so stop() can find it
  } catch (const std::bad_alloc&) {
    // No room to track it until it starts: refused, as if by the executor.
    refuse(node, *epoch, std::current_exception());
    node->release();
    return;
  }
  try {
    executor_.get()->execute(ExecutorWork(this, node, *epoch));
  } catch (...) {
    refuse(node, *epoch, std::current_exception());
  }
}

void WheelCore::refuse(TaskNode* node, std::uint32_t epoch, std::exception_ptr why) noexcept {
  // on_error is told, then the task is canceled (it never ran), which destroys its captures. Both
  // run as the timer's own code here, so stop() from either is refused like from a task.
  const WheelCore* outer = std::exchange(running_in, this);
  report(std::move(why));
  node->refuse(epoch);
  running_in = outer;
}

void WheelCore::run_started(TaskNode* node) noexcept {
  settled_one();
  const WheelCore* outer = std::exchange(running_in, this);
  node->run([this](const std::exception_ptr& error) { report(error); });
  running_in = outer;
}

void WheelCore::report(std::exception_ptr error) const noexcept {
  if (!options_.on_error) return;
  try {
    options_.on_error(std::move(error));
  } catch (...) {  // on_error's own exception is swallowed, as documented
  }
}

void WheelCore::prune_dispatched() {
  if (dispatched_.size() < prune_at_) return;
  // Keep what stop() may still need: tasks queued in the executor, and running ones to wait for.
  std::erase_if(dispatched_, [](TaskNode* node) {
    const TaskState state = node->state();
    if (state == TaskState::waiting || state == TaskState::running) return false;
    node->release();
    return true;
  });
  prune_at_ = std::max(kMinPrune, 2 * dispatched_.size());
}

bool WheelCore::on_own_thread() const noexcept {
  return running_in == this || indicator_of == this;
}

}  // namespace wheeltimer::detail
