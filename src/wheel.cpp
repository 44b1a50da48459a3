#include "wheel.hpp"

#include <algorithm>
#include <bit>
#include <utility>

namespace wheeltimer::detail {

Wheel::Wheel(std::size_t slots, Clock::time_point start, Clock::duration tick)
    : start_(start),
      tick_ns_(static_cast<std::uint64_t>(tick.count())),
      mask_(slots - 1),
      bits0_(static_cast<std::size_t>(std::countr_zero(slots))),
      levels_((64 - bits0_ + kUpperBits - 1) / kUpperBits),
      // A level 0 of up to 2^16 slots gets kChains lists a slot (at most 4 MiB); beyond that the
      // extra lists would cost more address space than the overlap is worth.
      chains0_(slots <= (std::size_t{1} << 16) ? kChains : 1),
      level0_(slots * chains0_),
      occupied0_(slots),
      // 352 KiB of heads, of which a timer touches the pages of the levels it uses (32 KiB each).
      upper_(kUpperLists) {}

std::uint64_t Wheel::tick_of(Clock::time_point deadline) const noexcept {
  if (deadline == Clock::time_point::max()) return kNever;
  if (deadline <= start_) return 0;
  return static_cast<std::uint64_t>((deadline - start_).count()) / tick_ns_;
}

Clock::time_point Wheel::tick_time(std::uint64_t tick) const noexcept {
  const auto headroom = static_cast<std::uint64_t>((Clock::time_point::max() - start_).count());
  if (tick > headroom / tick_ns_) return Clock::time_point::max();
  return start_ + Clock::duration(static_cast<Clock::rep>(tick * tick_ns_));
}

bool Wheel::insert(TaskNode* node) noexcept {
  const std::uint64_t tick = tick_of(node->deadline());
  if (tick == kNever) {
    link(never_, node);
    return true;
  }
  if (tick <= now_) return false;
  // The highest bit in which the node's tick differs from now picks the level: the node shares
  // every higher digit with now, so its slot on that level is strictly ahead of now's.
  const std::uint64_t differing = tick ^ now_;
  if ((differing >> bits0_) == 0) {
    const std::size_t slot = tick & mask_;
    link(level0_[slot * chains0_ + chain_of(node, chains0_)], node);
    occupied0_.set(slot);
    return true;
  }
  const auto top_bit = static_cast<std::size_t>(std::bit_width(differing)) - 1;
  const std::size_t level = 1 + (top_bit - bits0_) / kUpperBits;
  const std::size_t slot = digit(level, tick);
  link(upper_[slot_index(level, slot) + part_of(level, tick) * kChains + chain_of(node, kChains)],
       node);
  occupied_upper_[level] |= std::uint64_t{1} << slot;
  return true;
}

void Wheel::queue_cascade(std::size_t level, std::uint64_t start) {
  const std::size_t slot = digit(level, start);
  if ((occupied_upper_[level] & (std::uint64_t{1} << slot)) == 0) return;
  Cascade& cascade = cascades_.emplace_back();  // first: if it throws, the slot is as it was
  occupied_upper_[level] &= ~(std::uint64_t{1} << slot);
  cascade.start = start;
  cascade.part_span = part_span(level);
  TaskNode** heads = &upper_[slot_index(level, slot)];
  for (std::size_t list = 0; list < kListsPerSlot; ++list) {
    TaskNode* first = std::exchange(heads[list], nullptr);
    cascade.lists[list] = first;
    if (first != nullptr) first->pprev = &cascade.lists[list];
  }
  // An occupied slot has nodes; should the bits ever say otherwise, no empty cascade is kept.
  if (!cascade.skip_empty_parts()) cascades_.pop_back();
}

bool Wheel::Cascade::skip_empty_parts() noexcept {
  for (; part < kParts; ++part) {
    const auto first = lists.begin() + static_cast<std::ptrdiff_t>(part * kChains);
    if (std::any_of(first, first + kChains, [](const TaskNode* head) { return head != nullptr; })) {
      return true;
    }
  }
  return false;
}

void Wheel::link(TaskNode*& head, TaskNode* node) noexcept {
  node->next = head;
  if (head != nullptr) head->pprev = &node->next;
  node->pprev = &head;
  head = node;
  ++size_;
}

void Wheel::unlink(TaskNode* node) noexcept {
  TaskNode** pprev = node->pprev;
  *pprev = node->next;
  if (node->next != nullptr) node->next->pprev = pprev;
  node->next = nullptr;
  node->pprev = nullptr;
  --size_;
  if (*pprev == nullptr) slot_emptied(pprev);
}

namespace {
bool all_empty(const TaskNode* const* heads, std::size_t count) noexcept {
  return std::all_of(heads, heads + count, [](const TaskNode* head) { return head == nullptr; });
}
}  // namespace

void Wheel::slot_emptied(TaskNode** head) noexcept {
  // `head` is a slot head only if it lies in one of the slot arrays; a `next` field inside a node
  // or never_ needs nothing. The slot stays occupied while another of its lists holds nodes.
  if (head >= level0_.data() && head < level0_.data() + level0_.size()) {
    const auto slot = static_cast<std::size_t>(head - level0_.data()) / chains0_;
    if (all_empty(&level0_[slot * chains0_], chains0_)) occupied0_.clear(slot);
  } else if (head >= upper_.data() && head < upper_.data() + kUpperLists) {
    const auto slot = static_cast<std::size_t>(head - upper_.data()) / kListsPerSlot;
    if (!all_empty(&upper_[slot * kListsPerSlot], kListsPerSlot)) return;
    occupied_upper_[1 + slot / kUpperSlots] &= ~(std::uint64_t{1} << (slot % kUpperSlots));
  }
}

std::uint64_t Wheel::next_event() const noexcept {
  std::uint64_t next = kNever;
  // Level 0 holds only ticks of now's rotation, at or after now.
  const std::size_t slot = occupied0_.find_next(now_ & mask_);
  if (slot != SlotBitmap::npos) next = (now_ & ~std::uint64_t{mask_}) | slot;
  for (std::size_t level = 1; level <= levels_; ++level) {
    const std::size_t now_digit = digit(level, now_);
    const std::uint64_t later_slots =
        now_digit + 1 == kUpperSlots ? 0 : ~std::uint64_t{0} << (now_digit + 1);
    const std::uint64_t ahead = occupied_upper_[level] & later_slots;
    if (ahead == 0) continue;
    // The start of the first occupied slot: now's higher digits, that slot's digit, zeros below.
    const std::size_t above = shift(level) + kUpperBits;
    const std::uint64_t higher = above >= 64 ? 0 : now_ & (~std::uint64_t{0} << above);
    const auto first = static_cast<std::uint64_t>(std::countr_zero(ahead));
    next = std::min(next, higher | (first << shift(level)));
  }
  return next;
}

}  // namespace wheeltimer::detail
