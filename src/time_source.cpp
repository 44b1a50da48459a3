#include "time_source.hpp"

namespace wheeltimer::detail {

bool SteadyTimeSource::sleep_until(Clock::time_point due) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!interrupted_) {
    if (Clock::now() >= due) return true;  // checked here, never trusted from the wait's result
    if (due == Clock::time_point::max()) {
      woken_.wait(lock);
    } else {
      woken_.wait_until(lock, due);
    }
  }
  return false;
}

void SteadyTimeSource::interrupt() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
  }
  woken_.notify_all();
}

}  // namespace wheeltimer::detail
