// DueQueue on its own: whichever way a task came in (a bucket filled ahead of its tick, the heap
// for a tick already current or beyond the window), tasks come out in deadline order, only once
// due, exactly once, and stop()'s drain returns exactly what was not taken.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "due_queue.hpp"
#include "lent_nodes.hpp"
#include "task_node.hpp"
#include "wheel.hpp"

namespace wheeltimer::detail {
namespace {

using namespace std::chrono_literals;

constexpr auto kTick = 1ms;
constexpr std::uint64_t kWindow = 4;  // 16 buckets

class DueQueueTest : public ::testing::Test {
 protected:
  TaskNode* node_at(Clock::duration offset) { return nodes_.at(offset); }

  // Pops everything due by `now`, checking order and "never early" on the way.
  std::vector<TaskNode*> pop_all(Clock::time_point now) {
    std::vector<TaskNode*> popped;
    while (TaskNode* node = due_.pop_due(now)) {
      EXPECT_LE(node->deadline(), now);
      if (!popped.empty()) {
        EXPECT_LE(popped.back()->deadline(), node->deadline());
      }
      popped.push_back(node);
    }
    return popped;
  }

  const Clock::time_point start_ = Clock::now();
  LentNodes nodes_{start_};
  Wheel wheel_{8, start_, kTick};
  DueQueue due_{wheel_, kWindow};
};

TEST_F(DueQueueTest, BucketsAndHeapMergeInDeadlineOrder) {
  // Ticks 0..40 in random order: some land in buckets, the rest (too far, or at a tick that is
  // current by then) in the heap.
  std::vector<Clock::duration> offsets;
  for (int i = 0; i < 400; ++i) offsets.push_back(i * 100us + 7us);
  std::shuffle(offsets.begin(), offsets.end(), std::mt19937(7));
  std::vector<TaskNode*> popped;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    due_.push(node_at(offsets[i]));
    if (i % 50 == 49) {  // take what is due now and then, as the indicator does
      const Clock::time_point now = start_ + static_cast<int>(i) * 50us;
      // In order within one round; a later push may be overdue, so not across rounds.
      for (TaskNode* node : pop_all(now)) popped.push_back(node);
      // What is left: its earliest is what the queue reports, and it is later than now.
      Clock::time_point earliest = Clock::time_point::max();
      for (TaskNode* node : nodes_.all()) {
        if (std::find(popped.begin(), popped.end(), node) == popped.end()) {
          earliest = std::min(earliest, node->deadline());
        }
      }
      ASSERT_EQ(due_.earliest(), earliest);
      ASSERT_GT(earliest, now);
    }
  }
  for (TaskNode* node : pop_all(start_ + 1h)) popped.push_back(node);
  EXPECT_EQ(popped.size(), offsets.size());
  // Each node exactly once: the right count alone would let a duplicate hide a loss.
  std::vector<TaskNode*> distinct = popped;
  std::sort(distinct.begin(), distinct.end());
  EXPECT_EQ(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_EQ(due_.size(), 0u);
  EXPECT_EQ(due_.earliest(), Clock::time_point::max());
}

TEST_F(DueQueueTest, NothingComesOutBeforeItsDeadline) {
  TaskNode* later = node_at(2ms + 300us);
  TaskNode* sooner = node_at(2ms + 100us);
  due_.push(later);
  due_.push(sooner);
  EXPECT_EQ(due_.earliest(), start_ + 2ms + 100us);
  EXPECT_EQ(due_.pop_due(start_ + 2ms + 99us), nullptr);
  EXPECT_EQ(due_.pop_due(start_ + 2ms + 100us), sooner);
  EXPECT_EQ(due_.pop_due(start_ + 2ms + 299us), nullptr);
  // A task for the tick now being read arrives late and still comes out in order.
  TaskNode* late = node_at(2ms + 200us);
  due_.push(late);
  EXPECT_EQ(due_.pop_due(start_ + 2ms + 299us), late);
  EXPECT_EQ(due_.pop_due(start_ + 2ms + 300us), later);
  EXPECT_EQ(due_.size(), 0u);
}

TEST_F(DueQueueTest, AnEmptyQueueMovesItsWindowWithoutReplayingTakenTasks) {
  TaskNode* first = node_at(1ms);
  due_.push(first);
  EXPECT_EQ(due_.pop_due(start_ + 1ms), first);
  // Far beyond the window, into a bucket that has been the current one: nothing taken before may
  // come out again.
  for (int round = 1; round <= 50; ++round) {
    TaskNode* node = node_at(round * 37ms + 1ms);
    due_.push(node);
    ASSERT_EQ(due_.pop_due(start_ + round * 37ms + 1ms), node) << "round " << round;
    ASSERT_EQ(due_.pop_due(start_ + 1h), nullptr) << "round " << round;
  }
}

TEST_F(DueQueueTest, DrainReturnsExactlyWhatWasNotTaken) {
  std::vector<TaskNode*> pushed;
  for (int i = 0; i < 60; ++i) {
    pushed.push_back(node_at(i * 250us));
    due_.push(pushed.back());
  }
  std::vector<TaskNode*> taken = pop_all(start_ + 5ms);
  std::vector<TaskNode*> drained;
  due_.drain([&](TaskNode* node) { drained.push_back(node); });
  EXPECT_EQ(due_.size(), 0u);
  EXPECT_EQ(taken.size(), 21u);  // 0 .. 5 ms in steps of 250 us
  taken.insert(taken.end(), drained.begin(), drained.end());
  std::sort(taken.begin(), taken.end());
  std::sort(pushed.begin(), pushed.end());
  EXPECT_EQ(taken, pushed);  // each exactly once
}

}  // namespace
}  // namespace wheeltimer::detail
