// Wheel on its own: its intrusive lists stay whole while a cascade is worked through in chunks,
// so a node canceled between two chunks (wherever it is: already moved down, at the head of a
// half-walked list, or deeper in one) is unlinked cleanly, and every other node comes out exactly
// once, never before its tick.
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

}  // namespace
}  // namespace wheeltimer::detail
