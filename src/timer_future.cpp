#include <wheeltimer/timer_future.hpp>

#include <utility>

#include "task_node.hpp"

namespace wheeltimer {

std::string_view to_string(TaskState state) noexcept {
  switch (state) {
    case TaskState::waiting: return "WAITING";
    case TaskState::running: return "RUNNING";
    case TaskState::finished: return "FINISHED";
    case TaskState::canceled: return "CANCELED";
  }
  return "UNKNOWN";
}

TimerFuture::TimerFuture(const TimerFuture& other) noexcept : node_(other.node_) {
  if (node_ != nullptr) node_->retain();
}

TimerFuture::TimerFuture(TimerFuture&& other) noexcept
    : node_(std::exchange(other.node_, nullptr)) {}

TimerFuture& TimerFuture::operator=(const TimerFuture& other) noexcept {
  if (other.node_ != nullptr) other.node_->retain();
  if (node_ != nullptr) node_->release();
  node_ = other.node_;
  return *this;
}

TimerFuture& TimerFuture::operator=(TimerFuture&& other) noexcept {
  if (this != &other) {
    if (node_ != nullptr) node_->release();
    node_ = std::exchange(other.node_, nullptr);
  }
  return *this;
}

TimerFuture::~TimerFuture() {
  if (node_ != nullptr) node_->release();
}

TaskState TimerFuture::state() const noexcept {
  return node_ != nullptr ? node_->state() : TaskState::canceled;
}

bool TimerFuture::cancel() noexcept { return node_ != nullptr && node_->cancel(); }

Clock::time_point TimerFuture::deadline() const noexcept {
  return node_ != nullptr ? node_->deadline() : Clock::time_point::max();
}

void TimerFuture::wait() const { wait_until(Clock::time_point::max()); }

bool TimerFuture::wait_for(Clock::duration limit) const {
  return wait_until(saturating_add(Clock::now(), limit));
}

bool TimerFuture::wait_until(Clock::time_point limit) const {
  return node_ == nullptr || node_->wait_until(limit);
}

std::exception_ptr TimerFuture::exception() const noexcept {
  return node_ != nullptr ? node_->error() : nullptr;
}

}  // namespace wheeltimer
