#include "due_queue.hpp"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

namespace wheeltimer::detail {
namespace {

// Bucket count: the window and as much again (the owner may sleep well into it), within bounds;
// ticks beyond go to the heap, which is correct for any deadline, only slower.
constexpr std::uint64_t kMinBuckets = 4;
constexpr std::uint64_t kMaxBuckets = 1024;
// How many entries ahead of the one taken the bucket reader asks the cache for: enough to cover
// the memory latency with the time a few tasks take to start.
constexpr std::size_t kPrefetchDistance = 6;

constexpr auto earlier = [](const auto& a, const auto& b) { return a.deadline < b.deadline; };
constexpr auto later = [](const auto& a, const auto& b) { return a.deadline > b.deadline; };

}  // namespace

DueQueue::DueQueue(const Wheel& wheel, std::uint64_t window)
    : wheel_(wheel),
      buckets_(static_cast<std::size_t>(
          std::bit_ceil(std::clamp(2 * window + 2, kMinBuckets, kMaxBuckets)))) {}

void DueQueue::push(TaskNode* node) noexcept {
  try {
    place(Due{node->deadline(), node});
  } catch (const std::bad_alloc&) {
    node->next = overflow_;
    overflow_ = node;
    ++overflowed_;
  }
}

void DueQueue::place(const Due& due) {
  const std::uint64_t tick = wheel_.tick_of(due.deadline);
  if (bucketed_ == 0 && tick != Wheel::kNever && tick > current_ + 1) {
    // Every bucket is empty (the current one holds only taken entries): move the window up.
    buckets_[index(current_)].clear();
    current_ = tick - 1;
    cursor_ = 0;
  }
  // Only ticks after the current one have buckets still being filled.
  if (tick > current_ && tick - current_ < buckets_.size()) {
    buckets_[index(tick)].push_back(due);
    ++bucketed_;
    return;
  }
  heap_.push_back(due);
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void DueQueue::reabsorb() noexcept {
  while (overflow_ != nullptr) {
    try {
      place(Due{overflow_->deadline(), overflow_});
    } catch (const std::bad_alloc&) {
      return;
    }
    unlink_overflow(&overflow_);
  }
}

TaskNode* DueQueue::unlink_overflow(TaskNode** link) noexcept {
  TaskNode* node = *link;
  *link = std::exchange(node->next, nullptr);
  --overflowed_;
  return node;
}

TaskNode* DueQueue::pop_overflow(Clock::time_point now, Clock::time_point rival) noexcept {
  TaskNode** earliest = &overflow_;
  for (TaskNode** link = &overflow_; *link != nullptr; link = &(*link)->next) {
    if ((*link)->deadline() < (*earliest)->deadline()) earliest = link;
  }
  const Clock::time_point deadline = (*earliest)->deadline();
  if (deadline > now || deadline > rival) return nullptr;
  return unlink_overflow(earliest);
}

void DueQueue::settle() {
  std::vector<Due>& bucket = buckets_[index(current_)];
  if (cursor_ < bucket.size() || bucketed_ == 0) return;
  bucket.clear();
  cursor_ = 0;
  do {
    ++current_;
  } while (buckets_[index(current_)].empty());
  std::vector<Due>& next = buckets_[index(current_)];
  std::sort(next.begin(), next.end(), earlier);
}

Clock::time_point DueQueue::earliest() {
  if (overflow_ != nullptr) [[unlikely]] reabsorb();
  settle();
  Clock::time_point first = Clock::time_point::max();
  const std::vector<Due>& bucket = buckets_[index(current_)];
  if (cursor_ < bucket.size()) first = bucket[cursor_].deadline;
  if (!heap_.empty()) first = std::min(first, heap_.front().deadline);
  for (const TaskNode* node = overflow_; node != nullptr; node = node->next) {
    first = std::min(first, node->deadline());
  }
  return first;
}

TaskNode* DueQueue::pop_due(Clock::time_point now) {
  if (overflow_ != nullptr) [[unlikely]] {
    reabsorb();
    // Still short of memory: the overflowed nodes compete with the rest by deadline.
    if (overflow_ != nullptr) {
      const Clock::time_point rest = earliest();
      if (TaskNode* node = pop_overflow(now, rest)) return node;
    }
  }
  settle();
  std::vector<Due>& bucket = buckets_[index(current_)];
  const bool from_bucket = cursor_ < bucket.size() &&
                           (heap_.empty() || bucket[cursor_].deadline <= heap_.front().deadline);
  if (from_bucket) {
    if (bucket[cursor_].deadline > now) return nullptr;
    if (cursor_ + kPrefetchDistance < bucket.size()) {
      bucket[cursor_ + kPrefetchDistance].node->prefetch_for_start();
    }
    --bucketed_;
    return bucket[cursor_++].node;
  }
  if (heap_.empty() || heap_.front().deadline > now) return nullptr;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  TaskNode* node = heap_.back().node;
  heap_.pop_back();
  if (!heap_.empty()) heap_.front().node->prefetch_for_start();
  return node;
}

}  // namespace wheeltimer::detail
