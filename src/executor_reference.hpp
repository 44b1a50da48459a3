// ExecutorReference: a timer's reference to its executor, never released on one of that
// executor's own threads.
//
// If a job on one of the executor's threads drops the last reference to a timer, or builds a
// timer there that fails to construct, the timer's reference may be the executor's last. The
// executor's destructor would then wait for, or join, the very thread it runs on: std::terminate
// for CallerRunsPool, a hang for TbbArenaExecutor. So on such a thread, or any other thread of the
// library's executors (see ExecutorThreadMark), the reference is handed to a short-lived thread
// of its own and released there; with no thread to be had, it is kept for good, a leak being the
// lesser harm.
//
// Threads: like a std::shared_ptr; each instance is used by one thread at a time.
#pragma once

#include <memory>
#include <utility>

#include <wheeltimer/executor.hpp>

namespace wheeltimer::detail {

class ExecutorReference {
 public:
  explicit ExecutorReference(std::shared_ptr<Executor> executor) noexcept
      : executor_(std::move(executor)) {}
  ~ExecutorReference() { release(); }
  ExecutorReference(const ExecutorReference&) = delete;
  ExecutorReference& operator=(const ExecutorReference&) = delete;

  Executor* get() const noexcept { return executor_.get(); }
  explicit operator bool() const noexcept { return executor_ != nullptr; }

  // Drops the reference now; on a thread of the library's executors, hands it to a short-lived
  // thread to drop instead (or keeps it for good if no thread can be had).
  void release() noexcept;

 private:
  std::shared_ptr<Executor> executor_;
};

}  // namespace wheeltimer::detail
