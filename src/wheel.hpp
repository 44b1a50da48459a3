// Wheel: the slots of a hashed timing wheel, each an intrusive doubly linked list of TaskNodes.
//
// A node due at tick T lives in slot T & mask; a node more than one rotation away shares its slot
// with nearer ones and is skipped until the rotation that is its own: a node is due at a tick once
// its deadline is at or before that tick's time. Nodes due "never" (a saturated deadline) live on a
// separate list that no tick walks.
//
// Threads: owned by one thread at a time (the indicator, then stop()); no synchronisation here.
// The wheel holds no references: the owner's reference to each node moves in and out with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

#include "task_node.hpp"

namespace wheeltimer::detail {

class Wheel {
 public:
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

  // `slots` must be a power of two. The slot array is zero pages until used, so a huge wheel
  // costs address space, not memory.
  explicit Wheel(std::size_t slots);

  std::size_t slot_count() const noexcept { return mask_ + 1; }
  std::size_t size() const noexcept { return size_; }

  // Links `node` into the slot of `tick` (kNever: a list only stop() will find).
  void insert(TaskNode* node, std::uint64_t tick) noexcept;
  void unlink(TaskNode* node) noexcept;
  static bool contains(const TaskNode* node) noexcept { return node->pprev != nullptr; }

  // Unlinks every node of `tick`'s slot whose deadline is at or before `tick_time`, or that is
  // already settled, and passes it to `take`, in slot order.
  template <class Take>
  void expire(std::uint64_t tick, Clock::time_point tick_time, Take&& take) {
    TaskNode* node = slots_[tick & mask_];
    while (node != nullptr) {
      TaskNode* following = node->next;
      if (node->deadline() <= tick_time || node->state() != TaskState::waiting) {
        unlink(node);
        take(node);
      }
      node = following;
    }
  }

  // Unlinks every node and passes it to `take`.
  template <class Take>
  void drain(Take&& take) {
    drain_list(never_, take);
    for (std::size_t slot = 0; size_ != 0 && slot <= mask_; ++slot) drain_list(slots_[slot], take);
  }

 private:
  template <class Take>
  void drain_list(TaskNode*& head, Take& take) {
    while (head != nullptr) {
      TaskNode* node = head;
      unlink(node);
      take(node);
    }
  }

  struct FreeDeleter {
    void operator()(TaskNode** slots) const noexcept;
  };
  std::unique_ptr<TaskNode*[], FreeDeleter> slots_;
  std::size_t mask_;
  TaskNode* never_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace wheeltimer::detail
