// TaskNode on its own: the handshake that lets cancel() return with pending() lowered even when
// it wins on a task stop() is handing back. stop() detaches the node, lowers the count, then
// calls counted(); a cancel() that wins in between must not return before counted().
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "task_node.hpp"
#include "test_support.hpp"

namespace wheeltimer::detail {
namespace {

using namespace std::chrono_literals;
using wheeltimer::testing::kMustHappen;

// A node attached to no timer (detach() and a cancel() of a detached node never touch the owner),
// with the creator's two references, dropped at the end.
class DetachedNode {
 public:
  DetachedNode() : node_(TaskNode::create([] {}, Clock::now() + 1h, nullptr)) {}
  ~DetachedNode() { node_->release(2); }
  DetachedNode(const DetachedNode&) = delete;
  DetachedNode& operator=(const DetachedNode&) = delete;
  TaskNode* operator->() const noexcept { return node_; }

 private:
  TaskNode* node_;
};

TEST(TaskNodeTest, ACancelThatWinsBeforeTheCountWaitsForIt) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  std::atomic<bool> counted{false};
  std::promise<bool> canceled;
  std::future<bool> cancel_returned = canceled.get_future();
  std::jthread canceler([&] {
    const bool won = node->cancel();
    // What the owner lowers before counted() is seen by the time cancel() returns.
    canceled.set_value(won && counted.load(std::memory_order_relaxed));
  });
  // Nothing to wait on for "has not returned": a bounded look, as wrong code returns at once.
  EXPECT_EQ(cancel_returned.wait_for(50ms), std::future_status::timeout)
      << "cancel() returned before the owner counted the task";
  EXPECT_EQ(node->state(), TaskState::canceled);
  counted.store(true, std::memory_order_relaxed);
  node->counted();
  ASSERT_EQ(cancel_returned.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_TRUE(cancel_returned.get());
}

TEST(TaskNodeTest, ACancelAfterTheCountReturnsAtOnce) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  node->counted();
  EXPECT_TRUE(node->cancel());  // would spin for good if counted() had left the bit
  EXPECT_EQ(node->state(), TaskState::canceled);
  EXPECT_FALSE(node->cancel());
}

TEST(TaskNodeTest, ACountedNodeStartsAsAHandedBackTask) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  node->counted();
  EXPECT_FALSE(node->detach()) << "detached twice";
  EXPECT_TRUE(node->start_detached());
  EXPECT_EQ(node->state(), TaskState::running);
  EXPECT_FALSE(node->cancel());
}

}  // namespace
}  // namespace wheeltimer::detail
