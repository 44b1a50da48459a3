// InlineExecutor: runs work on the thread that calls execute(). For a timer that is its indicator
// thread, so a slow task delays every later tick: use it only for short, non-blocking callbacks.
// Stateless; any thread.
#pragma once

#include <wheeltimer/config.hpp>
#include <wheeltimer/executor.hpp>

namespace wheeltimer {

class WHEELTIMER_API InlineExecutor final : public Executor {
 public:
  // Runs `work` now. An exception from `work` reaches the caller; an empty Task is
  // std::invalid_argument.
  void execute(Task work) override;
};

}  // namespace wheeltimer
