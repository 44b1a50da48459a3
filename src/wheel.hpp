// Wheel: the hierarchical timing wheel the indicator keeps its waiting TaskNodes in.
//
// Time is counted in ticks since `start`; a node's tick is the one its deadline falls in. Level 0
// has `slots` (a power of two) one-tick slots; each level above has 64 slots, each spanning a whole
// rotation of the level below, up to levels that cover every 64-bit tick. A node goes to the lowest
// level whose rotation it shares with the wheel's current tick (tokio's and the Linux kernel's
// scheme), so every node sits in a slot strictly ahead of the current tick on its level. When the
// wheel reaches the start of an upper slot, its nodes cascade down; when it reaches a level-0 slot,
// its nodes are due. A far node is touched once per level it passes, never once per rotation.
//
// Each level keeps a bitmap of occupied slots, so next_event() (the next tick at which anything
// happens) costs a few word scans and the indicator can sleep until then. Nodes due "never" (a
// saturated deadline) live on a separate list that no tick walks.
//
// Cascading a busy upper slot can move hundreds of thousands of nodes. So a cascade only queues
// the slot's lists (O(1)); the owner works through them in chunks with cascade_some(), between
// starting due tasks. An upper slot is cut into kParts parts, consecutive ranges of its ticks, and
// a cascade moves them down in order: when the owner falls behind, finish_cascades_by() must move
// at once only the parts whose first tick is about to come, an eighth of the slot at a time, not
// the whole slot (in `wheeltimer-bench fire`, a level-1 slot holds ~490,000 nodes). The owner
// runs the wheel ahead of real time (a lookahead) so that even this rarely happens. Each part
// keeps kChains lists, picked by node address, and a cascade walks them in turn: the cache misses
// of eight independent lists overlap, those of one list cannot. Level-0 slots do the same when
// the wheel is small enough to afford it (chains0_).
//
// Threads: owned by one thread at a time (the indicator, then stop()); no synchronisation here.
// The wheel holds no references: the owner's reference to each node moves in and out with it.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <list>
#include <limits>
#include <new>
#include <utility>

#include <wheeltimer/clock.hpp>

#include "slot_bitmap.hpp"
#include "take_in_turn.hpp"
#include "task_node.hpp"
#include "zeroed_array.hpp"

namespace wheeltimer::detail {

class Wheel {
 public:
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

  // `slots` (level 0) must be a power of two. The level-0 array is zero pages until used, so a
  // huge wheel costs address space, not memory.
  Wheel(std::size_t slots, Clock::time_point start, Clock::duration tick);

  std::size_t slot_count() const noexcept { return mask_ + 1; }
  std::size_t size() const noexcept { return size_; }
  std::uint64_t now_tick() const noexcept { return now_; }

  // The tick `deadline` falls in (kNever for time_point::max()), and the time a tick begins.
  std::uint64_t tick_of(Clock::time_point deadline) const noexcept;
  Clock::time_point tick_time(std::uint64_t tick) const noexcept;

  // Links `node` by its deadline; false (and not linked) if its tick has already begun, i.e. it is
  // due within the current tick.
  bool insert(TaskNode* node) noexcept;
  void unlink(TaskNode* node) noexcept;
  static bool contains(const TaskNode* node) noexcept { return node->pprev != nullptr; }
  // Asks for the cache lines unlink(node) will write, besides the node's own.
  static void prefetch_neighbours(const TaskNode* node) noexcept {
    __builtin_prefetch(node->pprev, 1);
    if (node->next != nullptr) __builtin_prefetch(node->next, 1);
  }

  // The first tick after now_tick() at which a level-0 slot comes due or an upper slot cascades;
  // kNever if the wheel holds nothing but "never" nodes.
  std::uint64_t next_event() const noexcept;

  // Moves the current tick forward to `tick`: every level-0 node whose tick is at or before
  // `tick` is unlinked and passed to `take`; every upper slot reached is queued for cascading.
  // Throws std::bad_alloc when a cascade cannot be queued: the wheel is then at the tick before the
  // event that failed, with every node still held, and a later call resumes from there.
  template <class Take>
  void advance_to(std::uint64_t tick, Take&& take) {
    for (std::uint64_t event = next_event(); event <= tick; event = next_event()) {
      const std::uint64_t before = now_;
      now_ = event;
      try {
        for (std::size_t level = levels_; level >= 1; --level) {
          if ((event & (span(level) - 1)) != 0) continue;  // not the start of a slot on this level
          queue_cascade(level, event);
        }
      } catch (const std::bad_alloc&) {
        // No memory to queue a cascade: back to before this event, so the next call finds it
        // again (the cascades queued meanwhile emptied their slots, which are not queued twice).
        now_ = before;
        throw;
      }
      take_slot(static_cast<std::size_t>(event & mask_), take);
    }
    if (tick > now_) now_ = tick;  // nothing happens in between, and no slot is left behind
  }

  bool cascading() const noexcept { return !cascades_.empty(); }

  // Moves up to `budget` queued nodes down to where they belong now (those due by now_tick() go to
  // `take`).
  template <class Take>
  void cascade_some(std::size_t budget, Take&& take) {
    while (budget > 0 && !cascades_.empty()) {
      budget -= cascade_earliest(budget, take);
    }
  }

  // Finishes every queued part that begins at or before `tick`.
  template <class Take>
  void finish_cascades_by(std::uint64_t tick, Take&& take) {
    while (!cascades_.empty() && earliest_cascade()->next_start() <= tick) {
      cascade_earliest(std::numeric_limits<std::size_t>::max(), take);
    }
  }

  // Unlinks every node and passes it to `take`, which must not link it back into the wheel. All of
  // an upper slot's lists are walked side by side, as a cascade walks a part's (stop() drains a
  // wheel of a million nodes: their misses must overlap).
  template <class Take>
  void drain(Take&& take) {
    take_list(never_, take);
    for (std::size_t slot = occupied0_.find_next(0); slot != SlotBitmap::npos;
         slot = occupied0_.find_next(slot)) {
      take_slot(slot, take);
    }
    // The bitmaps name every upper slot with a node (insert() sets a slot's bit, and only an
    // emptied slot or a queued cascade clears it), so the heads of levels never used are not read.
    for (std::size_t level = 1; level <= levels_; ++level) {
      for (std::uint64_t slots = std::exchange(occupied_upper_[level], 0); slots != 0;
           slots &= slots - 1) {
        const auto slot = static_cast<std::size_t>(std::countr_zero(slots));
        take_lists(&upper_[slot_index(level, slot)], kListsPerSlot, take);
      }
    }
    for (Cascade& cascade : cascades_) take_lists(cascade.lists.data(), kListsPerSlot, take);
    cascades_.clear();
  }

 private:
  static constexpr std::size_t kUpperSlots = 64;
  static constexpr std::size_t kUpperBits = 6;
  static constexpr std::size_t kMaxUpperLevels = 11;  // (64 - 0) / 6, rounded up
  static constexpr std::size_t kChains = 8;           // lists per part (by node address)
  static constexpr std::size_t kPartBits = 3;
  static constexpr std::size_t kParts = 1 << kPartBits;  // tick ranges per upper slot
  static constexpr std::size_t kListsPerSlot = kParts * kChains;
  static constexpr std::size_t kUpperLists = kMaxUpperLevels * kUpperSlots * kListsPerSlot;

  // An upper slot's lists, taken out of the wheel to be cascaded: part p's kChains lists begin at
  // lists[p * kChains], and its ticks at start + p * part_span. Parts before `part` are done.
  // Lives in a std::list, so the nodes' `pprev` into `lists` stays valid.
  struct Cascade {
    std::array<TaskNode*, kListsPerSlot> lists{};
    std::uint64_t start = 0;
    std::uint64_t part_span = 1;
    std::size_t part = 0;

    std::uint64_t next_start() const noexcept { return start + part * part_span; }
    // Moves `part` on to the next part with nodes; false once none is left.
    bool skip_empty_parts() noexcept;
  };

  // Level `level` >= 1: the bit its digit starts at (at most 63 for every level in use), its slot
  // span in ticks, and the digit of `tick` on it.
  std::size_t shift(std::size_t level) const noexcept { return bits0_ + kUpperBits * (level - 1); }
  std::uint64_t span(std::size_t level) const noexcept { return std::uint64_t{1} << shift(level); }
  std::size_t digit(std::size_t level, std::uint64_t tick) const noexcept {
    return static_cast<std::size_t>(tick >> shift(level)) & (kUpperSlots - 1);
  }
  // The first of an upper slot's kListsPerSlot heads in upper_.
  static std::size_t slot_index(std::size_t level, std::size_t digit) noexcept {
    return ((level - 1) * kUpperSlots + digit) * kListsPerSlot;
  }
  // Which part of its upper slot on `level` `tick` falls in, and how many ticks a part spans. A
  // slot shorter than kParts ticks (a level-0 wheel of 1, 2 or 4 slots) has one tick a part.
  std::size_t part_of(std::size_t level, std::uint64_t tick) const noexcept {
    return shift(level) >= kPartBits
               ? static_cast<std::size_t>(tick >> (shift(level) - kPartBits)) & (kParts - 1)
               : static_cast<std::size_t>(tick & (span(level) - 1));
  }
  std::uint64_t part_span(std::size_t level) const noexcept {
    return shift(level) >= kPartBits ? span(level) >> kPartBits : 1;
  }

  void queue_cascade(std::size_t level, std::uint64_t start);

  // The queued cascade whose next part begins first (the first queued of equals).
  std::list<Cascade>::iterator earliest_cascade() noexcept {
    return std::min_element(cascades_.begin(), cascades_.end(),
                            [](const Cascade& a, const Cascade& b) {
                              return a.next_start() < b.next_start();
                            });
  }

  // Reinserts up to `budget` nodes of the earliest cascade's next part, taking one node of each of
  // the part's lists in turn; moves on to the next part once this one is empty, and drops the
  // cascade after its last. Returns how many nodes it moved.
  template <class Take>
  std::size_t cascade_earliest(std::size_t budget, Take& take) {
    const auto cascade = earliest_cascade();
    TaskNode** const lists = &cascade->lists[cascade->part * kChains];
    const std::size_t moved = unlink_in_turn(lists, kChains, budget, [&](TaskNode* node) {
      if (!insert(node)) take(node);
    });
    // Each list's new head gets its `pprev` only now: a store on the way would miss the cache at
    // once, and stores that miss hold back every later store.
    bool part_done = true;
    for (std::size_t chain = 0; chain < kChains; ++chain) {
      if (lists[chain] == nullptr) continue;
      lists[chain]->pprev = &lists[chain];
      part_done = false;
    }
    if (part_done && !cascade->skip_empty_parts()) cascades_.erase(cascade);
    return moved;
  }

  // The list, of the kChains an upper slot (or the chains0_ a level-0 slot) has, that `node` goes
  // to: by address, so consecutive allocations spread over all of them.
  static std::size_t chain_of(const TaskNode* node, std::size_t chains) noexcept {
    return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(node) / 64) % chains;
  }

  // Unlinks every node of level-0 slot `slot`, one node of each of its lists in turn, and passes
  // each to `take`.
  template <class Take>
  void take_slot(std::size_t slot, Take&& take) {
    occupied0_.clear(slot);
    take_lists(&level0_[slot * chains0_], chains0_, take);
  }

  // Empties the `count` (at most kListsPerSlot) lists at `heads`, then unlinks their nodes, one of
  // each list in turn, passing each to `take` (which may link it anywhere: the lists are already
  // empty). Only a head in use is written.
  template <class Take>
  void take_lists(TaskNode** heads, std::size_t count, Take&& take) {
    std::array<TaskNode*, kListsPerSlot> cursors;  // [0, count) only: no zeroing on the tick path
    for (std::size_t list = 0; list < count; ++list) {
      cursors[list] = heads[list];
      if (heads[list] != nullptr) heads[list] = nullptr;
    }
    unlink_in_turn(cursors.data(), count, std::numeric_limits<std::size_t>::max(), take);
  }

  // Unlinks nodes from the fronts of `count` lists with take_in_turn() and passes each to `each`,
  // until the lists are empty or `budget` were taken. The heads left in `lists` keep a stale
  // `pprev`: the caller fixes them if the lists stay in use. Returns how many nodes it took.
  template <class Each>
  std::size_t unlink_in_turn(TaskNode** lists, std::size_t count, std::size_t budget,
                             Each&& each) {
    return take_in_turn(
        lists, count, budget, [](const TaskNode* node) { return node->next; },
        [&](TaskNode* node) {
          node->next = nullptr;
          node->pprev = nullptr;
          --size_;
          each(node);
        });
  }

  void link(TaskNode*& head, TaskNode* node) noexcept;
  // The head `pprev` points at became empty: clear its occupied bit (nothing for never_).
  void slot_emptied(TaskNode** head) noexcept;

  // Unlinks every node of one list, then passes each to `take` (which may link it elsewhere).
  template <class Take>
  void take_list(TaskNode*& head, Take&& take) {
    if (head == nullptr) return;
    TaskNode* node = head;
    head = nullptr;
    slot_emptied(&head);
    while (node != nullptr) {
      TaskNode* following = node->next;
      node->next = nullptr;
      node->pprev = nullptr;
      --size_;
      take(node);
      node = following;
    }
  }

  const Clock::time_point start_;
  const std::uint64_t tick_ns_;
  const std::size_t mask_;
  const std::size_t bits0_;    // log2 of the level-0 slot count
  const std::size_t levels_;   // upper levels in use
  const std::size_t chains0_;  // lists per level-0 slot: kChains, or 1 for a huge level 0
  ZeroedArray<TaskNode*> level0_;  // slot s has lists s*chains0_ onwards
  SlotBitmap occupied0_;
  ZeroedArray<TaskNode*> upper_;  // kUpperLists heads, by slot_index()
  std::array<std::uint64_t, kMaxUpperLevels + 1> occupied_upper_{};  // index = level
  std::list<Cascade> cascades_;  // queued, oldest first
  TaskNode* never_ = nullptr;
  std::uint64_t now_ = 0;
  std::size_t size_ = 0;
};

}  // namespace wheeltimer::detail
