// WheelCore's stop(): halting the indicator is in wheel_core.cpp; here the timer's tasks are taken
// out of every place the indicator kept them, handed back or discarded. See wheel_core.hpp for the
// threads and the ordering stop() relies on.
#include "wheel_core.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace wheeltimer::detail {
namespace {

constexpr std::size_t kBatch = InboundLanes::kBatch;  // how many stop() drains at a time

}  // namespace

template <class HandBack, class Room>
void WheelCore::take_out_all(HandBack&& hand_back, Room&& room) {
  // The indicator has exited: its wheel, queues and dispatched list are ours now.
  // Hands the node (and its reference) back if it has not started; false if it has started or
  // was canceled, and then the reference is still the caller's.
  const auto take_back = [&](TaskNode* node) {
    if (!node->detach()) return false;
    settled_uncounted(node);
    hand_back(node);
    return true;
  };
  const auto reclaim = [&](TaskNode* node) {
    if (!take_back(node)) node->release();
  };
  wheel_.drain(reclaim);
  due_.drain(reclaim);
  // Handed to the executor: every queued one is taken out before any running one is waited for,
  // so none of them can start meanwhile. Only these can be running.
  for (TaskNode*& node : dispatched_) {
    if (take_back(node)) node = nullptr;
  }
  for (TaskNode* node : std::exchange(dispatched_, {})) {
    if (node == nullptr) continue;
    node->wait_until(Clock::time_point::max());  // at once unless it is running
    node->release();
  }
  // Every accepted task keeps pending() above zero until it settles or is reclaimed here. Tasks
  // that producers admitted before the flag may still be on their way into the inbound lanes,
  // and cancel() calls that won elsewhere may still be finishing: drain until nothing is pending.
  // After that no task or cancel() touches this timer again; a schedule() call still returning
  // may read wake_at_ and wake the (interrupted) time source, which is why the timer must not be
  // destroyed while another thread is still inside one of its calls (as for any C++ object).
  for (TaskNode* batch[kBatch];;) {
    const std::size_t allowed = std::min(kBatch, room(inbound_.size_approx()));
    const std::size_t count = inbound_.take(batch, allowed);
    for (std::size_t i = 0; i < count; ++i) reclaim(batch[i]);
    if (count != 0) continue;
    if (outstanding() == 0) break;
    std::this_thread::yield();
  }
  // Every cancel() that listed a node has settled by now, so the lists are complete. The drains
  // above have dropped the wheel's reference to each listed node.
  release_canceled();
}

std::vector<PendingTask> WheelCore::stop() {
  // A task of this timer, on any thread, or any code on the indicator thread (a custom executor's
  // execute(), a destructor the indicator runs), would wait for itself.
  if (on_own_thread()) {
    throw std::logic_error(
        "wheeltimer: stop() called from inside one of the timer's own tasks or on its indicator "
        "thread (it would wait for itself)");
  }
  std::lock_guard<std::mutex> guard(stop_mutex_);
  if (stopped_) return {};
  halt_indicator();
  // Room is made before a task is taken out, so running out of memory strands none: each task is
  // then either where it was or in handed_back_, for the next call. The inbound lanes are usually
  // empty by now, and the margin spares the common case a second allocation.
  constexpr std::size_t kMargin = 64;
  const auto make_room = [this](std::size_t wanted) {
    if (handed_back_.capacity() - handed_back_.size() < wanted) {
      handed_back_.reserve(handed_back_.size() + std::max(wanted, handed_back_.size() / 2));
    }
  };
  make_room(wheel_.size() + due_.size() + dispatched_.size() + inbound_.size_approx() + kMargin);
  take_out_all(
      [this](TaskNode* node) {
        handed_back_.push_back(HandedBack{node->deadline(), PendingTask(node)});
      },
      [&](std::size_t waiting) {
        make_room(std::max<std::size_t>(waiting, 1));
        return handed_back_.capacity() - handed_back_.size();
      });

  std::stable_sort(handed_back_.begin(), handed_back_.end(),
                   [](const HandedBack& a, const HandedBack& b) {
                     return a.deadline < b.deadline;
                   });
  std::vector<PendingTask> in_order;
  in_order.reserve(handed_back_.size());
  for (HandedBack& entry : handed_back_) in_order.push_back(std::move(entry.task));
  handed_back_ = std::vector<HandedBack>();  // and its memory
  stopped_ = true;
  return in_order;
}

void WheelCore::stop_discarding() noexcept {
  if (on_own_thread()) {
    // A precondition violation (API.md): the timer would wait for itself. stop()'s logic_error
    // would end the program here too, through std::terminate, but with no word of why.
    std::fputs("wheeltimer: a HashedWheelTimer was destroyed from inside one of its own tasks or "
               "on its indicator thread (a precondition violation: it would wait for itself)\n",
               stderr);
    std::abort();
  }
  try {
    // Dropping what stop() hands back frees the nodes in deadline order, which for timeouts of
    // one length is the order they were allocated in, so the node pool hands them out again in
    // that order. (Freed in wheel order instead, the cells of a destroyed timer of 1,000,000 left
    // wheeltimer-micro's schedule row after it at 121 ns wall instead of 69, and cancel at 71
    // instead of 23.)
    stop();
    return;
  } catch (const std::bad_alloc&) {
    // No memory to hand them back in: canceled where they lie.
  }
  // Each task is dropped (canceled) only once the lock is released: its captures' destructors
  // may call stop(). Collected without memory, in a list linked through the nodes' wheel links.
  std::vector<HandedBack> taken_before;
  TaskNode* discarded = nullptr;
  {
    std::lock_guard<std::mutex> guard(stop_mutex_);
    if (stopped_) return;
    halt_indicator();
    taken_before = std::move(handed_back_);  // what the stop() that ran out of memory took out
    take_out_all(
        [&discarded](TaskNode* node) {
          node->next = std::exchange(discarded, node);
        },
        [](std::size_t) { return std::numeric_limits<std::size_t>::max(); });
    stopped_ = true;
  }
  taken_before.clear();
  while (TaskNode* node = discarded) {
    discarded = std::exchange(node->next, nullptr);
    PendingTask dropped(node);
  }
}

}  // namespace wheeltimer::detail
