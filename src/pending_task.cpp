#include <wheeltimer/pending_task.hpp>

#include "task_node.hpp"

namespace wheeltimer {

void PendingTask::discard() noexcept {
  detail::TaskNode* node = release();
  node->cancel();  // detached, so this touches no timer
  node->release();
}

Clock::time_point PendingTask::deadline() const noexcept {
  return node_ != nullptr ? node_->deadline() : Clock::time_point::max();
}

TimerFuture PendingTask::future() const noexcept {
  if (node_ == nullptr) return {};
  node_->retain();
  return TimerFuture(node_);
}

void PendingTask::run() noexcept {
  // The handle keeps its reference, so deadline() and future() still answer afterwards. The timer
  // that handed the task back may be gone: the exception reaches only the future.
  if (node_ == nullptr || !node_->start_detached()) return;
  // The run's own reference, which its last step drops: without it, a task that destroys this
  // handle while it runs (through something its captures own) could free the node under itself.
  node_->retain();
  node_->run([](const std::exception_ptr&) {});
}

}  // namespace wheeltimer
