// For tests that drive the due queue or the wheel directly: task nodes made at offsets from a
// start time, lent to the structure under test, and released (both references) when the test
// ends, whatever the structure did with them.
#pragma once

#include <vector>

#include <wheeltimer/clock.hpp>

#include "task_node.hpp"

namespace wheeltimer::detail {

class LentNodes {
 public:
  explicit LentNodes(Clock::time_point start) : start_(start) {}
  ~LentNodes() {
    for (TaskNode* node : nodes_) node->release(2);  // the structure's (lent) and the creator's
  }
  LentNodes(const LentNodes&) = delete;
  LentNodes& operator=(const LentNodes&) = delete;

  // A node due `offset` after the start, attached to no timer.
  TaskNode* at(Clock::duration offset) {
    TaskNode* node = TaskNode::create([] {}, start_ + offset, nullptr);
    nodes_.push_back(node);
    return node;
  }
  const std::vector<TaskNode*>& all() const noexcept { return nodes_; }

 private:
  Clock::time_point start_;
  std::vector<TaskNode*> nodes_;
};

}  // namespace wheeltimer::detail
