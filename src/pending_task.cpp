#include <wheeltimer/pending_task.hpp>

#include "task_node.hpp"

namespace wheeltimer {

PendingTask& PendingTask::operator=(PendingTask&& other) noexcept {
  if (this != &other) {
    discard();
    node_ = std::exchange(other.node_, nullptr);
  }
  return *this;
}

PendingTask::~PendingTask() { discard(); }

void PendingTask::discard() noexcept {
  if (detail::TaskNode* node = release()) {
    node->cancel();  // detached, so this touches no timer
    node->release();
  }
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
  detail::TaskNode* node = release();
  if (node == nullptr) return;
  // The timer that handed the task back may be gone: the exception reaches only the future.
  // This handle's reference goes with the run's last step, or here if the task was canceled.
  if (node->start_detached()) {
    node->run([](const std::exception_ptr&) {}, 1);
  } else {
    node->release();
  }
}

}  // namespace wheeltimer
