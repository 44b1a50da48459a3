#include "lateness_log.hpp"

#include <algorithm>
#include <chrono>
#include <type_traits>

namespace wheeltimer_bench {

using wheeltimer::Clock;

namespace {

std::atomic<std::uint64_t> next_generation{1};
// The generation of the last log this thread started a task for.
thread_local std::uint64_t seen_generation = 0;

}  // namespace

LatenessLog::LatenessLog(std::size_t tasks)
    : entries_(tasks),  // written now, so the pages are in place before anything is timed
      generation_(next_generation.fetch_add(1, std::memory_order_relaxed)) {
  done_ = tasks == 0;
}

void LatenessLog::start(std::size_t index, Clock::time_point deadline) noexcept {
  static_assert(std::is_same_v<Clock::duration, std::chrono::nanoseconds>);
  const std::int64_t lateness = (Clock::now() - deadline).count();
  // Relaxed: only a unique slot is needed; finish() publishes the entry.
  const std::size_t slot = started_.fetch_add(1, std::memory_order_relaxed);
  if (slot < entries_.size()) entries_[slot] = {index, lateness};  // else repeated() counts it
  if (seen_generation != generation_) {
    seen_generation = generation_;
    threads_.fetch_add(1, std::memory_order_relaxed);
  }
}

void LatenessLog::finish() noexcept {
  if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == entries_.size()) {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    all_finished_.notify_all();
  }
}

bool LatenessLog::wait(Clock::time_point give_up, const ProgressFn& progress,
                       Clock::duration interval) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done_) {
    const auto now = Clock::now();
    if (now >= give_up) return false;
    all_finished_.wait_until(lock, std::min(give_up, now + interval), [this] { return done_; });
    if (progress) {
      lock.unlock();
      progress(finished(), size());
      lock.lock();
    }
  }
  return true;
}

std::vector<std::int64_t> LatenessLog::samples(
    const std::function<bool(std::size_t)>& include) const {
  const std::size_t started = std::min(started_.load(std::memory_order_acquire), entries_.size());
  std::vector<std::int64_t> out;
  out.reserve(started);
  for (std::size_t k = 0; k < started; ++k) {
    if (!include || include(entries_[k].index)) out.push_back(entries_[k].lateness_ns);
  }
  return out;
}

}  // namespace wheeltimer_bench
