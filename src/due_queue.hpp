// DueQueue: the tasks whose tick has begun (the wheel runs ahead of real time), handed out in
// deadline order so each starts at its own deadline rather than at its tick's end.
//
// A plain min-heap of every due task (a million a second, 64 ms ahead: some 64,000 entries) pays
// ~16 levels of sifting per task, and only knows the very next task, so it can fetch only one node
// ahead. Most due tasks come from the wheel a whole slot at a time, ahead of their tick. So each
// tick in a window after the current one gets a bucket; a bucket is sorted once, when it becomes
// current, and then read in order, fetching nodes well ahead. What cannot go to a bucket (its tick
// is current or past, or beyond the window) goes to a small heap, and the two are merged.
//
// push() never fails: a node that finds no memory to grow a bucket or the heap waits in a list
// linked through its own `next` field (it is in no wheel list meanwhile) and goes in again once
// memory is back, so running out of memory on the indicator loses no task and fires none early.
//
// Threads: owned by one thread at a time (the indicator, then stop()); no synchronisation.
// Each entry carries the owner's reference to its node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <wheeltimer/clock.hpp>

#include "task_node.hpp"
#include "wheel.hpp"

namespace wheeltimer::detail {

class DueQueue {
 public:
  // `wheel` gives ticks; `window` is how many ticks ahead the owner runs the wheel.
  DueQueue(const Wheel& wheel, std::uint64_t window);

  void push(TaskNode* node) noexcept;
  std::size_t size() const noexcept { return bucketed_ + heap_.size() + overflowed_; }
  // The earliest deadline held, time_point::max() if none.
  Clock::time_point earliest();
  // Takes out the earliest node if its deadline is at or before `now`; null otherwise.
  TaskNode* pop_due(Clock::time_point now);

  // Takes out every node, in no particular order.
  template <class Take>
  void drain(Take&& take) {
    while (overflow_ != nullptr) take(unlink_overflow(&overflow_));
    for (const Due& due : heap_) take(due.node);
    heap_.clear();
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      // The current bucket's entries before the cursor were taken already.
      const std::size_t from = i == index(current_) ? cursor_ : 0;
      for (std::size_t j = from; j < buckets_[i].size(); ++j) take(buckets_[i][j].node);
      buckets_[i].clear();
    }
    cursor_ = 0;
    bucketed_ = 0;
  }

 private:
  struct Due {
    Clock::time_point deadline;
    TaskNode* node;
  };

  std::size_t index(std::uint64_t tick) const noexcept {
    return static_cast<std::size_t>(tick) & (buckets_.size() - 1);
  }
  // Once the current bucket is used up, makes the next non-empty one current and sorts it.
  void settle();
  // Puts `due` into a bucket or the heap; throws std::bad_alloc, and then holds what it held.
  void place(const Due& due);
  // Moves overflowed nodes back into the buckets and heap while memory allows.
  void reabsorb() noexcept;
  // Takes the overflowed node that *link points at out of the list.
  TaskNode* unlink_overflow(TaskNode** link) noexcept;
  // Takes the earliest overflowed node if it is due by `now` and not after `rival`.
  TaskNode* pop_overflow(Clock::time_point now, Clock::time_point rival) noexcept;

  const Wheel& wheel_;
  std::vector<std::vector<Due>> buckets_;  // a power of two of them, by tick
  std::uint64_t current_ = 0;   // the tick of the bucket being read; later ticks fill theirs
  std::size_t cursor_ = 0;      // the next entry of the current bucket
  std::size_t bucketed_ = 0;    // entries in buckets, not yet taken
  std::vector<Due> heap_;       // min-heap on deadline: what no bucket takes
  TaskNode* overflow_ = nullptr;  // pushed when no memory was to be had, linked by `next`
  std::size_t overflowed_ = 0;
};

}  // namespace wheeltimer::detail
