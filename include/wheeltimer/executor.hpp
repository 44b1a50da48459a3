// Executor: where a timer runs its expired tasks. Implementations live in <wheeltimer/executors/>.
//
// execute() may be called from any thread, concurrently (a timer calls it from its indicator
// thread; several timers may share one executor). The work a timer hands over never throws and
// runs as a no-op if its task was canceled or handed back by stop() while queued.
//
// Memory ordering: an implementation must make everything before execute() happen before `work`
// runs on its thread (a mutex, or a queue with release/acquire hand-off, does). The timer relies
// on that alone to pass the task's captures, and its own reference to the task, to that thread.
#pragma once

#include <wheeltimer/config.hpp>
#include <wheeltimer/task.hpp>

namespace wheeltimer {

class WHEELTIMER_API Executor {
 public:
  virtual ~Executor() = default;
  // Runs `work` once, on some thread, eventually. An empty Task is std::invalid_argument.
  virtual void execute(Task work) = 0;
};

}  // namespace wheeltimer
