#include "time_source.hpp"

#include <algorithm>

namespace wheeltimer::detail {

bool SteadyTimeSource::sleep_until(Clock::time_point due) {
  // See "Coalescing" in the header; a sleep for good has nothing to coalesce.
  if (due != Clock::time_point::max()) due = std::max(due, last_end_ + coalescing_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!interrupted_) {
    // Both checked here, never trusted from the wait's result (spurious wake-ups).
    const Clock::time_point now = Clock::now();
    if (woken_ || now >= due) {
      // Only a sleep that lasted until its time starts a new interval. A wake() means a task is
      // due sooner than planned: counting it would hold back the sleep for that very task.
      if (now >= due) last_end_ = now;
      woken_ = false;
      return true;
    }
    if (due == Clock::time_point::max()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, due);
    }
  }
  return false;
}

void SteadyTimeSource::wake() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    woken_ = true;
  }
  changed_.notify_one();
}

void SteadyTimeSource::interrupt() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
  }
  changed_.notify_all();
}

}  // namespace wheeltimer::detail
