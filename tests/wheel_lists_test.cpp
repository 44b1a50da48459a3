// Wheel on its own: its intrusive lists stay whole while a cascade is worked through in chunks,
// so a node canceled between two chunks (wherever it is: already moved down, at the head of a
// half-walked list, or deeper in one) is unlinked cleanly, and every other node comes out exactly
// once, never before its tick. Finishing a cascade in a hurry moves only the parts of the slot
// whose ticks have come, and still no node is ever taken after its tick has passed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "lent_nodes.hpp"
#include "task_node.hpp"
#include "wheel.hpp"

namespace wheeltimer::detail {
namespace {

using namespace std::chrono_literals;

constexpr auto kTick = 1ms;

TEST(WheelListsTest, UnlinkBetweenCascadeChunksKeepsEveryListWhole) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  // An 8-slot level 0: level-1 slot 1 spans ticks 8-15, and all 400 nodes share it, spread over
  // its lists.
  Wheel wheel(8, start, kTick);
  constexpr int kNodes = 400;
  for (int k = 0; k < kNodes; ++k) {
    ASSERT_TRUE(wheel.insert(nodes.at(kTick * (8 + k % 8) + std::chrono::microseconds(k))));
  }
  std::multiset<TaskNode*> taken;
  const auto take = [&](TaskNode* node) {
    EXPECT_GE(wheel.now_tick(), wheel.tick_of(node->deadline())) << "taken early";
    taken.insert(node);
  };

  wheel.advance_to(8, take);  // queues the cascade of level-1 slot 1
  ASSERT_TRUE(wheel.cascading());
  std::set<TaskNode*> unlinked;
  std::mt19937 random(7);
  int chunks = 0;
  while (wheel.cascading()) {
    wheel.cascade_some(3, take);
    ++chunks;
    // Unlink two nodes still in the wheel: most of them are still waiting in the cascade's lists.
    for (int pick = 0; pick < 2; ++pick) {
      std::vector<TaskNode*> linked;
      for (TaskNode* node : nodes.all()) {
        if (Wheel::contains(node)) linked.push_back(node);
      }
      if (linked.empty()) break;
      TaskNode* victim = linked[random() % linked.size()];
      wheel.unlink(victim);
      unlinked.insert(victim);
    }
  }
  EXPECT_GT(chunks, 20);  // the cascade really was worked through in many chunks
  wheel.advance_to(16, take);

  EXPECT_EQ(wheel.size(), 0u);
  for (TaskNode* node : nodes.all()) {
    const auto times = taken.count(node);
    if (unlinked.contains(node)) {
      EXPECT_EQ(times, 0u) << "an unlinked node was taken";
    } else {
      EXPECT_EQ(times, 1u) << "a node was lost or taken twice";
    }
  }
  EXPECT_EQ(taken.size() + unlinked.size(), static_cast<std::size_t>(kNodes));
}

// cascade_some() moves exactly its budget, even when that ends partway through a turn of the
// part's lists: all 100 nodes are due at tick 8, spread by address over the part's lists, so
// each node moved goes to `take`.
TEST(WheelListsTest, ACascadeChunkMovesExactlyItsBudget) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  Wheel wheel(8, start, kTick);
  constexpr int kNodes = 100;
  for (int k = 0; k < kNodes; ++k) {
    ASSERT_TRUE(wheel.insert(nodes.at(kTick * 8 + std::chrono::microseconds(k))));
  }
  std::size_t taken = 0;
  const auto take = [&](TaskNode*) { ++taken; };
  wheel.advance_to(8, take);  // queues the cascade of level-1 slot 1
  ASSERT_TRUE(wheel.cascading());
  const std::size_t before = taken;
  wheel.cascade_some(5, take);
  EXPECT_EQ(taken - before, 5u);
  wheel.cascade_some(11, take);
  EXPECT_EQ(taken - before, 16u);
  wheel.cascade_some(1000, take);
  EXPECT_EQ(taken, static_cast<std::size_t>(kNodes));
  EXPECT_FALSE(wheel.cascading());
  EXPECT_EQ(wheel.size(), 0u);
}

// A 64-slot level 0: level-1 slot 1 spans ticks 64-127, in eight parts of eight ticks.
TEST(WheelListsTest, FinishingACascadeMovesOnlyThePartsThatHaveBegun) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  Wheel wheel(64, start, kTick);
  for (int tick = 64; tick < 128; ++tick) {
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(wheel.insert(nodes.at(kTick * tick)));
  }
  std::vector<TaskNode*> taken;
  const auto take = [&](TaskNode* node) {
    EXPECT_GE(wheel.now_tick(), wheel.tick_of(node->deadline())) << "taken early";
    taken.push_back(node);
  };
  const auto taken_by = [&](std::uint64_t tick) {
    wheel.finish_cascades_by(tick, take);
    wheel.advance_to(tick, take);
    for (TaskNode* node : nodes.all()) {
      if (wheel.tick_of(node->deadline()) <= tick) {
        EXPECT_EQ(std::count(taken.begin(), taken.end(), node), 1) << "tick " << tick;
      }
    }
  };

  wheel.advance_to(64, take);  // queues the slot's cascade
  taken_by(64);
  EXPECT_TRUE(wheel.cascading()) << "parts beginning at ticks 72-120 were moved early";
  taken_by(80);
  EXPECT_TRUE(wheel.cascading());
  taken_by(127);
  EXPECT_FALSE(wheel.cascading());
  EXPECT_EQ(taken.size(), nodes.all().size());
  EXPECT_EQ(wheel.size(), 0u);
}

// The indicator's loop in miniature, over several levels of an 8-slot wheel: run the wheel
// `kLookahead` ticks ahead, finish what must be finished, cascade a little, unlink now and then.
// Every node is taken exactly once, never early, and by the time its tick comes at the latest.
TEST(WheelListsTest, EveryNodeIsTakenOnceNeitherEarlyNorLateAcrossLevels) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  Wheel wheel(8, start, kTick);
  std::mt19937 random(11);
  constexpr std::uint64_t kLast = 40'000;  // level 3 of an 8-slot wheel begins at 32,768
  constexpr std::uint64_t kLookahead = 5;
  for (int k = 0; k < 3000; ++k) {
    ASSERT_TRUE(wheel.insert(nodes.at(kTick * (1 + random() % kLast) +
                                      std::chrono::microseconds(random() % 1000))));
  }
  std::vector<TaskNode*> by_deadline = nodes.all();
  std::sort(by_deadline.begin(), by_deadline.end(),
            [](const TaskNode* a, const TaskNode* b) { return a->deadline() < b->deadline(); });
  std::size_t checked = 0;  // by_deadline before this were due and checked
  std::multiset<TaskNode*> taken;
  std::set<TaskNode*> unlinked;
  const auto take = [&](TaskNode* node) {
    EXPECT_GE(wheel.now_tick(), wheel.tick_of(node->deadline())) << "taken early";
    taken.insert(node);
  };
  for (std::uint64_t tick = 0; tick <= kLast + 1; ++tick) {
    wheel.advance_to(tick + kLookahead, take);
    wheel.finish_cascades_by(tick + 1, take);
    if (random() % 4 == 0) wheel.cascade_some(1 + random() % 16, take);
    if (random() % 64 == 0) {
      TaskNode* victim = nodes.all()[random() % nodes.all().size()];
      if (Wheel::contains(victim)) {
        wheel.unlink(victim);
        unlinked.insert(victim);
      }
    }
    // What is due by the next tick has been handed over (an unlinked node never is).
    for (; checked < by_deadline.size() &&
           wheel.tick_of(by_deadline[checked]->deadline()) <= tick + 1;
         ++checked) {
      TaskNode* node = by_deadline[checked];
      ASSERT_EQ(taken.count(node), unlinked.contains(node) ? 0u : 1u) << "tick " << tick;
    }
  }
  EXPECT_EQ(checked, by_deadline.size());
  EXPECT_EQ(wheel.size(), 0u);
  EXPECT_EQ(taken.size() + unlinked.size(), nodes.all().size());
}

// stop() empties the wheel with drain(): every node comes out exactly once, wherever it is (level
// 0, any upper level, the "never" list, a cascade half worked through), and the wheel is then
// empty and in working order.
TEST(WheelListsTest, DrainTakesEveryNodeOnceFromEveryPlace) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  Wheel wheel(8, start, kTick);
  // Ticks 8-15 share level-1 slot 1, whose cascade is left half done below; the rest spread
  // over levels 1-4 of an 8-slot wheel (level 4 begins at 2^21 ticks, and they reach 2^24).
  for (int k = 0; k < 200; ++k) ASSERT_TRUE(wheel.insert(nodes.at(kTick * (8 + k % 8))));
  std::mt19937 random(5);
  for (int k = 0; k < 2000; ++k) {
    const auto tick = std::uint64_t{1} << (random() % 24);
    ASSERT_TRUE(wheel.insert(nodes.at(kTick * (16 + tick + random() % tick))));
  }
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(wheel.insert(nodes.at(Clock::time_point::max() - start)));  // never due
  }
  std::multiset<TaskNode*> taken;
  wheel.advance_to(8, [&](TaskNode* node) { taken.insert(node); });  // queues the cascade
  // 37: part 0's 25 nodes and 12 of part 1's, so part 1's lists are left partly walked.
  wheel.cascade_some(37, [&](TaskNode* node) { taken.insert(node); });
  ASSERT_TRUE(wheel.cascading());

  wheel.drain([&](TaskNode* node) {
    EXPECT_FALSE(Wheel::contains(node));
    taken.insert(node);
  });
  for (TaskNode* node : nodes.all()) EXPECT_EQ(taken.count(node), 1u);
  EXPECT_EQ(taken.size(), nodes.all().size());
  EXPECT_EQ(wheel.size(), 0u);
  EXPECT_FALSE(wheel.cascading());
  EXPECT_EQ(wheel.next_event(), Wheel::kNever);

  // Still in working order: a node inserted afterwards comes out at its tick.
  TaskNode* later = nodes.at(kTick * 100);
  ASSERT_TRUE(wheel.insert(later));
  std::vector<TaskNode*> due;
  for (std::uint64_t tick = 9; tick <= 100; ++tick) {
    wheel.advance_to(tick, [&](TaskNode* node) { due.push_back(node); });
    wheel.finish_cascades_by(tick, [&](TaskNode* node) { due.push_back(node); });
    if (tick < 100) {
      EXPECT_TRUE(due.empty()) << "tick " << tick;
    }
  }
  EXPECT_EQ(due, std::vector<TaskNode*>{later});
}

}  // namespace
}  // namespace wheeltimer::detail
