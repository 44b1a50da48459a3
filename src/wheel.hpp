// Wheel: the slots of a hashed timing wheel, each an intrusive doubly linked list of TaskNodes.
//
// A node due at tick T lives in slot T & mask; a node more than one rotation away shares its slot
// with nearer ones and is skipped until the rotation that is its own (its target_tick says which).
// Nodes due "never" (a saturated deadline) live on a separate list that no tick walks.
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

  // Links `node` for `target_tick` (kNever: only stop() will find it).
  void insert(TaskNode* node, std::uint64_t target_tick) noexcept;
  void unlink(TaskNode* node) noexcept;

  // Unlinks every node of `tick`'s slot that is due by `tick` (target_tick <= tick) or already
  // settled, and passes it to `take`, in slot order.
  template <class Take>
  void expire(std::uint64_t tick, Take&& take) {
    TaskNode* node = slots_[tick & mask_];
    while (node != nullptr) {
      TaskNode* following = node->next;
      if (node->target_tick <= tick || node->state() != TaskState::waiting) {
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
  TaskNode*& list_for(const TaskNode* node) noexcept {
    return node->target_tick == kNever ? never_ : slots_[node->target_tick & mask_];
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
