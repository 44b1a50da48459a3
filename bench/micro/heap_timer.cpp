#include "heap_timer.hpp"

#include <algorithm>

namespace micro {
namespace {
constexpr std::uint8_t kWaiting = 0;
constexpr std::uint8_t kRunning = 1;
constexpr std::uint8_t kCanceled = 2;
// Purge only heaps big enough for it to matter.
constexpr std::size_t kMinPurgeSize = 1024;
}  // namespace

void HeapTimer::Queue::purge_canceled() {
  const std::size_t before = c.size();
  std::erase_if(c, [](const Entry& e) {
    return e.job->state.load(std::memory_order_relaxed) == kCanceled;
  });
  std::make_heap(c.begin(), c.end(), comp);
  purged = before - c.size();
}

HeapTimer::HeapTimer() : worker_([this] { run(); }) {}

HeapTimer::~HeapTimer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void HeapTimer::purge_if_worth_it() {
  const auto half = static_cast<std::int64_t>(queue_.size() / 2);
  if (queue_.size() >= kMinPurgeSize && canceled_in_queue_.load(std::memory_order_relaxed) > half) {
    queue_.purge_canceled();
    const auto purged = static_cast<std::int64_t>(queue_.purged);
    canceled_in_queue_.fetch_sub(purged, std::memory_order_relaxed);
    queued_.store(queue_.size(), std::memory_order_relaxed);
  }
}

HeapTimer::Handle HeapTimer::schedule_at(std::function<void()> fn, Clock::time_point deadline) {
  auto job = std::make_shared<Job>(std::move(fn));
  bool earliest = false;
  {
    std::lock_guard lock(mutex_);
    purge_if_worth_it();
    earliest = queue_.empty() || deadline < queue_.top().deadline;
    queue_.push(Entry{deadline, job});
    queued_.store(queue_.size(), std::memory_order_relaxed);
  }
  // Only a new earliest deadline changes how long the worker must sleep.
  if (earliest) wake_.notify_one();
  return job;
}

bool HeapTimer::cancel(const Handle& job) noexcept {
  std::uint8_t expected = kWaiting;
  if (!job->state.compare_exchange_strong(expected, kCanceled, std::memory_order_acq_rel)) {
    return false;
  }
  const std::int64_t canceled = canceled_in_queue_.fetch_add(1, std::memory_order_relaxed) + 1;
  // A guess without the lock (the size may be stale): only a cancel that may cross the line takes
  // the lock, and purge_if_worth_it() checks again under it.
  const std::size_t size = queued_.load(std::memory_order_relaxed);
  if (size >= kMinPurgeSize && canceled > static_cast<std::int64_t>(size / 2)) {
    std::lock_guard lock(mutex_);
    purge_if_worth_it();
  }
  return true;
}

void HeapTimer::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (queue_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const Clock::time_point deadline = queue_.top().deadline;
    if (Clock::now() < deadline) {
      wake_.wait_until(lock, deadline);
      continue;
    }
    // top() is const; moving the handle out before pop() saves a reference-count round trip.
    Handle job = std::move(const_cast<Entry&>(queue_.top()).job);
    queue_.pop();
    queued_.store(queue_.size(), std::memory_order_relaxed);
    lock.unlock();
    std::uint8_t expected = kWaiting;
    if (job->state.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) {
      job->fn();
    } else {
      canceled_in_queue_.fetch_sub(1, std::memory_order_relaxed);
    }
    job.reset();
    lock.lock();
  }
}

}  // namespace micro
