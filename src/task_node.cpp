#include "task_node.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>

#include "node_allocator.hpp"
#include "wheel_core.hpp"

namespace wheeltimer::detail {
namespace {

constexpr auto kWaiting = static_cast<std::uint32_t>(TaskState::waiting);
constexpr auto kRunning = static_cast<std::uint32_t>(TaskState::running);
constexpr auto kFinished = static_cast<std::uint32_t>(TaskState::finished);
constexpr auto kCanceled = static_cast<std::uint32_t>(TaskState::canceled);

bool is_settled(std::uint64_t word) noexcept {
  const auto state = word & TaskNode::kStateMask;
  return state == kFinished || state == kCanceled;
}

// Blocked waiters park on one of a fixed set of mutex/condition-variable pairs chosen by node
// address, so a node carries one bit (kWaiter) instead of a mutex and a condition variable.
struct alignas(64) WaitStripe {
  std::mutex mutex;
  std::condition_variable settled;
};
constexpr std::size_t kStripes = 64;
// Neighbouring nodes lie 56 bytes or more apart (a small capture's node is a 56-byte pool cell):
// dividing the address by much less would leave most stripes unused.
constexpr std::size_t kNodeSpacing = 64;
WaitStripe& stripe_for(const TaskNode* node) noexcept {
  // Never destroyed (the union's destructor leaves them alone), and in static storage, so first
  // use needs no memory: a thread may still wait on one (or a timer still settle a task) while
  // exit() runs the static destructors, and a condition variable's destructor waits for its
  // waiters.
  union Stripes {
    WaitStripe all[kStripes];
    Stripes() : all() {}
    ~Stripes() {}
  };
  static Stripes stripes;
  return stripes.all[std::hash<const TaskNode*>{}(node) / kNodeSpacing % kStripes];
}

void wake_all(WaitStripe& stripe) noexcept {
  // Taking the lock orders this wake-up after any waiter that set kWaiter has started waiting.
  { std::lock_guard<std::mutex> lock(stripe.mutex); }
  stripe.settled.notify_all();
}

}  // namespace

TaskNode* TaskNode::create(Task task, Clock::time_point deadline, WheelCore* owner) {
  // Whole words, and at least the exception_ptr that replaces the callable once it has run. A
  // callable stored inline is aligned to at most Task::inline_alignment, and its size is a
  // multiple of its alignment; the header's size is a multiple of that. So the node's size is a
  // multiple of the callable's alignment, and allocate_node() aligns the node, and so the storage,
  // for it (up to max_align_t's alignment).
  static_assert(sizeof(TaskNode) % Task::inline_alignment == 0);
  static_assert(Task::inline_alignment <= alignof(std::max_align_t));
  constexpr std::size_t kWord = alignof(void*);
  const std::size_t storage =
      std::max((task.ops_->size + kWord - 1) / kWord * kWord, sizeof(std::exception_ptr));
  auto* node = ::new (allocate_node(sizeof(TaskNode) + storage)) TaskNode(deadline, owner);
  task.ops_->relocate(task.storage_, node->storage());
  node->ops_ = std::exchange(task.ops_, nullptr);
  return node;
}

void TaskNode::destroy() noexcept {
  // The storage still holds the callable if the task neither ran nor was canceled (a schedule
  // that failed after creating the node), and what it threw if it FINISHED. A canceled task's
  // captures died in cancel(), and its ops_ word may hold a stale list link.
  const TaskState settled_as = state();
  if (settled_as == TaskState::waiting) {
    destroy_callable();
  } else if (settled_as == TaskState::finished) {
    stored_error().~exception_ptr();
  }
  this->~TaskNode();
  free_node(this);
}

std::exception_ptr TaskNode::error() const noexcept {
  // Written before FINISHED is published with release. A CANCELED task threw nothing, and its
  // storage may still be in use by the thread destroying its captures.
  return state() == TaskState::finished ? stored_error() : nullptr;
}

bool TaskNode::cancel() noexcept { return cancel_if(kStateMask, kWaiting); }

bool TaskNode::cancel_if(std::uint32_t mask, std::uint32_t expected) noexcept {
  // A node in the wheel goes on the owner's list of nodes to unlink: the list's reference is
  // taken here, in the same step.
  constexpr std::uint32_t kListed = kAttached | kInWheel;
  const auto old = transition(
      mask, expected,
      [](std::uint32_t w) { return (w & (kKeptOnSettle | kUncounted)) | kCanceled; },
      [](std::uint32_t w) { return std::uint64_t{(w & kListed) == kListed}; });
  if (!old) return false;
  // Detached, while stop() or adopt() have yet to set pending() right: cancel() returns with the
  // task no longer counted, so it waits for that.
  if (*old & kUncounted) await_counted();
  // The captures move out of the node before they are destroyed: they may hold the last handle to
  // this very task (a job that keeps its own future), and once the owner has let go of the node,
  // destroying them in place would free the node while their destructors still run in it. Until
  // they are moved, the caller's handle (or the captures, if they hold it) keeps the node alive.
  // The captures' code (their move and destructors) runs after pending() drops, so it sees the
  // task settled, and before anyone is woken. The owner may link the node into a list through its
  // ops_ word: a copy of it is used.
  const Task::Ops* ops = std::exchange(ops_, nullptr);
  if (*old & kAttached) owner_->on_canceled(this, (*old & kInWheel) != 0);
  // Captures with no destructor to run (pointers, ids) are left as they are: nothing to move.
  if (!ops->trivially_destructible) {
    // A node's callable is one a Task stored inline: no larger, and no more aligned.
    alignas(Task::inline_alignment) unsigned char captures[Task::inline_capacity];
    ops->relocate(storage(), captures);
    ops->destroy(captures);  // may free the node: only its address is used below
  }
  if (*old & kWaiter) wake_all(stripe_for(this));
  return true;
}

bool TaskNode::start(std::uint32_t mask, std::uint32_t expected) noexcept {
  return transition(mask, expected, [](std::uint32_t w) {
           return (w & kKeptOnSettle) | kRunning;
         }).has_value();
}

bool TaskNode::start_attached() noexcept {
  return start(kStateMask | kAttached | kDispatched, kWaiting | kAttached);
}

bool TaskNode::start_dispatched(std::uint32_t epoch) noexcept {
  return start(kStateMask | kAttached | kDispatched | kEpochMask,
               kWaiting | kAttached | kDispatched | epoch);
}

bool TaskNode::start_detached() noexcept { return start(kStateMask | kAttached, kWaiting); }

bool TaskNode::enter_wheel() noexcept {
  return transition(kStateMask, kWaiting, [](std::uint32_t w) { return w | kInWheel; })
      .has_value();
}

std::optional<std::uint32_t> TaskNode::mark_dispatched() noexcept {
  const auto old = transition(kStateMask | kAttached | kDispatched, kWaiting | kAttached,
                              [](std::uint32_t w) {
                                return ((w & ~kInWheel) + kEpochUnit) | kDispatched;
                              });
  if (!old) return std::nullopt;
  return (*old + kEpochUnit) & kEpochMask;
}

bool TaskNode::refuse(std::uint32_t epoch) noexcept {
  return cancel_if(kStateMask | kAttached | kDispatched | kEpochMask,
                   kWaiting | kAttached | kDispatched | epoch);
}

bool TaskNode::detach() noexcept {
  return transition(kStateMask | kAttached, kWaiting | kAttached, [](std::uint32_t w) {
           return (w & ~(kAttached | kDispatched | kInWheel)) | kUncounted;
         }).has_value();
}

void TaskNode::counted() noexcept {
  // Release: the owner's lowered count happens before a waiting cancel() returns.
  word_.fetch_and(~std::uint64_t{kUncounted}, std::memory_order_release);
}

void TaskNode::await_counted() const noexcept {
  // The owner clears the bit right after one atomic add: a wait of a few instructions, unless
  // its thread is descheduled in between.
  while (word_.load(std::memory_order_acquire) & kUncounted) std::this_thread::yield();
}

bool TaskNode::mark_uncounted() noexcept {
  return transition(kStateMask | kAttached, kWaiting,
                    [](std::uint32_t w) { return w | kUncounted; })
      .has_value();
}

bool TaskNode::attach(WheelCore* owner) noexcept {
  owner_ = owner;  // published by the transition's release
  return transition(kStateMask | kAttached, kWaiting,
                    [](std::uint32_t w) { return (w | kAttached) & ~kUncounted; })
      .has_value();
}

void TaskNode::finish() noexcept {
  // Picked first: once the add has dropped our reference, another owner may free the node.
  WaitStripe& stripe = stripe_for(this);
  // RUNNING (1) + 1 == FINISHED (2): one atomic add, no carry into the flag bits, which also
  // drops the caller's reference (a locked instruction less per task than a release() after it).
  const std::uint64_t old =
      word_.fetch_add((kFinished - kRunning) - kReference, std::memory_order_acq_rel);
  if (old & kWaiter) wake_all(stripe);
  if (old / kReference == 1) destroy();
}

bool TaskNode::wait_until(Clock::time_point limit) const {
  if (is_settled(word_.load(std::memory_order_acquire))) return true;
  WaitStripe& stripe = stripe_for(this);
  std::unique_lock<std::mutex> lock(stripe.mutex);
  for (;;) {
    // Setting kWaiter and reading the state in one atomic step: either the settler sees the bit
    // (and will lock the stripe, hence wake us), or we see the settled state.
    if (is_settled(word_.fetch_or(kWaiter, std::memory_order_acq_rel))) return true;
    if (limit == Clock::time_point::max()) {
      stripe.settled.wait(lock);
    } else if (stripe.settled.wait_until(lock, limit) == std::cv_status::timeout) {
      return is_settled(word_.load(std::memory_order_acquire));
    }
  }
}

}  // namespace wheeltimer::detail
