// ExecutorThreadMark: which of the library's executors is running work on the calling thread.
//
// A timer holds a reference to its executor. If a job on one of that executor's threads drops the
// last reference to the timer, or builds a timer there that fails, the timer must not release the
// executor's last reference there: the executor's destructor would wait for (or join) the very
// thread it runs on. The library's executors mark their threads while they run work, and the
// timer checks the mark (see ExecutorReference).
//
// Threads: the mark is per thread.
#pragma once

#include <wheeltimer/executor.hpp>

namespace wheeltimer::detail {

class ExecutorThreadMark {
 public:
  // Marks the calling thread as running `executor`'s work until destroyed (then restores the
  // previous mark, for an executor that runs work inside another's).
  explicit ExecutorThreadMark(const Executor* executor) noexcept;
  ~ExecutorThreadMark();
  ExecutorThreadMark(const ExecutorThreadMark&) = delete;
  ExecutorThreadMark& operator=(const ExecutorThreadMark&) = delete;

  // The executor whose work the calling thread is running, or null.
  static const Executor* current() noexcept;

 private:
  const Executor* previous_;
};

}  // namespace wheeltimer::detail
