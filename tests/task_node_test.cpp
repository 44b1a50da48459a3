// TaskNode on its own: the handshake that lets cancel() return with pending() right even when it
// wins on a task a timer is counting at that moment. stop() detaches the node, lowers its count,
// then calls counted(); adopt() marks it uncounted, raises its count, then attaches it (or, if it
// was canceled meanwhile, lowers the count again and calls counted()). A cancel() that wins in
// between must not return before counted() or attach().
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "task_node.hpp"
#include "test_support.hpp"

namespace wheeltimer::detail {
namespace {

using namespace std::chrono_literals;
using wheeltimer::testing::kMustHappen;

// A node attached to no timer (detach(), mark_uncounted() and a cancel() of a detached node never
// touch the owner), with the creator's two references, dropped at the end.
class DetachedNode {
 public:
  DetachedNode() : node_(TaskNode::create([] {}, Clock::now() + 1h, nullptr)) {}
  ~DetachedNode() { node_->release(references_); }
  DetachedNode(const DetachedNode&) = delete;
  DetachedNode& operator=(const DetachedNode&) = delete;
  TaskNode* operator->() const noexcept { return node_; }
  // Runs the started task, which drops one of the references.
  void run() {
    node_->run([](const std::exception_ptr&) {});
    --references_;
  }

 private:
  TaskNode* node_;
  std::uint32_t references_ = 2;
};

// Cancels `node` on another thread, checks that cancel() wins but does not return until
// `settle` has run, and that it then returns true having seen what `settle` did before.
template <class Settle>
void expect_cancel_waits_for(const DetachedNode& node, Settle settle) {
  std::atomic<bool> settled{false};
  std::promise<bool> canceled;
  std::future<bool> cancel_returned = canceled.get_future();
  std::jthread canceler([&] {
    const bool won = node->cancel();
    canceled.set_value(won && settled.load(std::memory_order_relaxed));
  });
  // The state turns CANCELED in cancel()'s first step, before it waits.
  const auto give_up = Clock::now() + kMustHappen;
  while (node->state() != TaskState::canceled && Clock::now() < give_up) {
    std::this_thread::yield();
  }
  ASSERT_EQ(node->state(), TaskState::canceled);
  // Nothing to wait on for "has not returned": a bounded look, as wrong code returns at once.
  EXPECT_EQ(cancel_returned.wait_for(50ms), std::future_status::timeout)
      << "cancel() returned before the count was right";
  settled.store(true, std::memory_order_relaxed);
  settle();
  ASSERT_EQ(cancel_returned.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_TRUE(cancel_returned.get());
}

TEST(TaskNodeTest, ACancelThatWinsOnADetachedNodeWaitsForTheCount) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  expect_cancel_waits_for(node, [&] { node->counted(); });
}

TEST(TaskNodeTest, ACancelThatWinsOnANodeBeingAdoptedWaitsForTheCount) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  node->counted();
  ASSERT_TRUE(node->mark_uncounted());
  expect_cancel_waits_for(node, [&] {
    EXPECT_FALSE(node->attach(nullptr)) << "attached a canceled node";
    node->counted();
  });
}

TEST(TaskNodeTest, ACancelAfterTheCountReturnsAtOnce) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  node->counted();
  EXPECT_TRUE(node->cancel());  // would spin for good if counted() had left the mark
  EXPECT_EQ(node->state(), TaskState::canceled);
  EXPECT_FALSE(node->cancel());
  EXPECT_FALSE(node->mark_uncounted()) << "marked a canceled node";
}

TEST(TaskNodeTest, ACountedNodeStartsAsAHandedBackTask) {
  DetachedNode node;
  ASSERT_TRUE(node->detach());
  node->counted();
  EXPECT_FALSE(node->detach()) << "detached twice";
  ASSERT_TRUE(node->start_detached());
  EXPECT_EQ(node->state(), TaskState::running);
  EXPECT_FALSE(node->cancel());
  node.run();
  EXPECT_EQ(node->state(), TaskState::finished);
}

}  // namespace
}  // namespace wheeltimer::detail
