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

void Wheel::insert(TaskNode* node, std::uint64_t target_tick) noexcept {
  node->target_tick = target_tick;
  TaskNode*& head = list_for(node);
  node->prev = nullptr;
  node->next = head;
  if (head != nullptr) head->prev = node;
  head = node;
  node->in_wheel = true;
  ++size_;
}

void Wheel::unlink(TaskNode* node) noexcept {
  if (node->prev != nullptr) {
    node->prev->next = node->next;
  } else {
    list_for(node) = node->next;
  }
  if (node->next != nullptr) node->next->prev = node->prev;
  node->prev = node->next = nullptr;
  node->in_wheel = false;
  --size_;
}

}  // namespace wheeltimer::detail
