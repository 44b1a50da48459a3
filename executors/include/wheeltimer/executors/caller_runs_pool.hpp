// CallerRunsPool: a fixed set of threads fed by a bounded FIFO queue. When the queue is full,
// execute() runs the work on the calling thread instead (PowerJob's caller-runs policy): for a
// timer that is back-pressure on its indicator thread, never a lost task.
//
// execute() may be called from any thread, including the pool's own. An exception from a task is
// swallowed on the worker (the timer's wrapped tasks never throw; it reports them through the
// future and on_error). The destructor finishes every queued task, then joins the threads; it
// must not run on one of the pool's own threads.
//
// Memory ordering: everything before execute() happens before the work starts (the queue mutex).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <wheeltimer/config.hpp>
#include <wheeltimer/executor.hpp>

namespace wheeltimer {

class WHEELTIMER_API CallerRunsPool final : public Executor {
 public:
  // Both arguments >= 1, and threads at most 65,536, else std::invalid_argument naming the value.
  CallerRunsPool(std::size_t threads, std::size_t queue_capacity);
  ~CallerRunsPool() override;
  CallerRunsPool(const CallerRunsPool&) = delete;
  CallerRunsPool& operator=(const CallerRunsPool&) = delete;

  void execute(Task work) override;

  std::size_t thread_count() const noexcept { return workers_.size(); }
  std::size_t queue_capacity() const noexcept { return capacity_; }

 private:
  void work_loop();
  void shut_down() noexcept;  // lets the workers finish the queue, then joins them

  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::deque<Task> queue_;  // guarded by mutex_
  bool closing_ = false;    // guarded by mutex_
  std::vector<std::thread> workers_;
};

}  // namespace wheeltimer
