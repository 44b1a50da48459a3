#include "wheel.hpp"

#include <cstdlib>
#include <new>

namespace wheeltimer::detail {

Wheel::Wheel(std::size_t slots)
    // calloc, not new[]: a large zeroed block comes straight from mmap, untouched.
    : slots_(static_cast<TaskNode**>(std::calloc(slots, sizeof(TaskNode*)))), mask_(slots - 1) {
  if (!slots_) throw std::bad_alloc();
}

void Wheel::FreeDeleter::operator()(TaskNode** slots) const noexcept { std::free(slots); }

void Wheel::insert(TaskNode* node, std::uint64_t tick) noexcept {
  TaskNode*& head = tick == kNever ? never_ : slots_[tick & mask_];
  node->next = head;
  if (head != nullptr) head->pprev = &node->next;
  node->pprev = &head;
  head = node;
  ++size_;
}

void Wheel::unlink(TaskNode* node) noexcept {
  *node->pprev = node->next;
  if (node->next != nullptr) node->next->pprev = node->pprev;
  node->next = nullptr;
  node->pprev = nullptr;
  --size_;
}

}  // namespace wheeltimer::detail
