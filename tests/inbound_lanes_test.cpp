// InboundLanes on their own: a task due before the horizon is taken before every far one pushed
// ahead of it, a flood of soon tasks still lets far ones in a batch a round, and every node pushed
// comes out exactly once, whichever way it is taken.
#include <chrono>
#include <cstddef>
#include <set>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "inbound_lanes.hpp"
#include "lent_nodes.hpp"

namespace wheeltimer::detail {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kBatch = InboundLanes::kBatch;

std::vector<TaskNode*> take_one_round(InboundLanes& lanes, std::size_t limit) {
  std::vector<TaskNode*> taken;
  lanes.take_round(limit, [&](std::span<TaskNode* const> batch) {
    taken.insert(taken.end(), batch.begin(), batch.end());
  });
  return taken;
}

TEST(InboundLanesTest, TasksDueBeforeTheHorizonAreTakenFirst) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  InboundLanes lanes;
  lanes.set_horizon(start + 64ms);
  std::vector<TaskNode*> far, soon;
  for (int k = 0; k < 1000; ++k) {
    far.push_back(nodes.at(64ms + k * 1ms));  // at the horizon is not before it
    ASSERT_TRUE(lanes.push(far.back(), far.back()->deadline()));
    if (k % 100 == 99) {
      soon.push_back(nodes.at(k * 10us));
      ASSERT_TRUE(lanes.push(soon.back(), soon.back()->deadline()));
    }
  }
  EXPECT_EQ(lanes.size_approx(), far.size() + soon.size());

  const std::vector<TaskNode*> taken = take_one_round(lanes, 4096);
  ASSERT_EQ(taken.size(), far.size() + soon.size());
  // Each lane keeps its own order.
  EXPECT_EQ(std::vector<TaskNode*>(taken.begin(), taken.begin() + soon.size()), soon);
  EXPECT_EQ(std::vector<TaskNode*>(taken.begin() + soon.size(), taken.end()), far);
  EXPECT_EQ(lanes.size_approx(), 0u);
}

TEST(InboundLanesTest, BeforeAnyHorizonEveryTaskCountsAsSoon) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  InboundLanes lanes;
  std::vector<TaskNode*> before;
  for (std::size_t k = 0; k < kBatch; ++k) {
    before.push_back(nodes.at(24h));
    ASSERT_TRUE(lanes.push(before.back(), start + 24h));
  }
  lanes.set_horizon(start + 64ms);
  for (std::size_t k = 0; k < kBatch; ++k) ASSERT_TRUE(lanes.push(nodes.at(1ms), start + 1ms));
  // Had the first ones gone to the far lane, the soon ones pushed after them would come first.
  EXPECT_EQ(take_one_round(lanes, kBatch), before);
}

TEST(InboundLanesTest, AFloodOfSoonTasksStillLetsABatchOfFarOnesInEachRound) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  InboundLanes lanes;
  lanes.set_horizon(start + 64ms);
  constexpr std::size_t kLimit = 1024;
  std::set<TaskNode*> far;
  for (std::size_t k = 0; k < 3 * kLimit; ++k) {
    ASSERT_TRUE(lanes.push(nodes.at(1ms), start + 1ms));
    if (k < 2 * kBatch) {
      far.insert(nodes.at(1h));
      ASSERT_TRUE(lanes.push(nodes.all().back(), start + 1h));
    }
  }
  for (int round = 0; round < 2; ++round) {
    const std::vector<TaskNode*> taken = take_one_round(lanes, kLimit);
    ASSERT_EQ(taken.size(), kLimit + kBatch) << "round " << round;
    for (std::size_t k = 0; k < taken.size(); ++k) {
      EXPECT_EQ(far.count(taken[k]), k < kLimit ? 0u : 1u) << "round " << round << ", entry " << k;
    }
  }
}

TEST(InboundLanesTest, TakeDrainsBothLanesExactlyOnce) {
  const Clock::time_point start = Clock::now();
  LentNodes nodes(start);
  InboundLanes lanes;
  lanes.set_horizon(start + 64ms);
  for (int k = 0; k < 1000; ++k) {
    TaskNode* node = nodes.at(k % 3 == 0 ? 1ms : 1h);
    ASSERT_TRUE(lanes.push(node, node->deadline()));
  }
  std::multiset<TaskNode*> taken;
  TaskNode* out[7];
  for (std::size_t count; (count = lanes.take(out, 7)) != 0;) {
    ASSERT_LE(count, 7u);
    taken.insert(out, out + count);
  }
  EXPECT_EQ(taken, std::multiset<TaskNode*>(nodes.all().begin(), nodes.all().end()));
  EXPECT_EQ(lanes.size_approx(), 0u);
}

}  // namespace
}  // namespace wheeltimer::detail
