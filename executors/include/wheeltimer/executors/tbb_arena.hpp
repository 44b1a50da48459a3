// TbbArenaExecutor: runs work in a oneTBB task_arena of its own, enqueued fire-and-forget
// (task_arena::enqueue never makes the caller join the arena). No slot is reserved for outside
// threads, so TbbArenaExecutor(1) runs everything on one arena worker (but see the destructor).
//
// execute() may be called from any thread. An exception from a task is swallowed on the worker.
// The destructor waits for every queued task to finish; it must not run inside the arena. Run
// inside a oneTBB task (on a oneTBB worker, perhaps the process's only one), it joins the arena
// and runs the queued work itself, in one of the arena's slots: waiting there could hold the very
// worker the work needs. That is the one time a thread from outside runs the arena's work.
//
// Memory ordering: everything before execute() happens before the work starts (TBB's enqueue);
// every task's effects happen before the destructor returns (mutex_).
#pragma once

#include <wheeltimer/config.hpp>
#if !defined(WHEELTIMER_HAS_TBB)
#error "this wheeltimer was built without oneTBB: TbbArenaExecutor is not in the library"
#endif

#include <condition_variable>
#include <cstddef>
#include <mutex>

#include <oneapi/tbb/task_arena.h>

#include <wheeltimer/executor.hpp>

namespace wheeltimer {

class WHEELTIMER_API TbbArenaExecutor final : public Executor {
 public:
  // max_concurrency: tbb::task_arena::automatic (the default: as many threads as oneTBB has
  // workers, its allowed parallelism minus one, at least 1) or any positive value; other values
  // are std::invalid_argument. oneTBB keeps memory for each unit, so a value over 65,536 is
  // taken as 65,536, which max_concurrency() then returns.
  explicit TbbArenaExecutor(int max_concurrency = tbb::task_arena::automatic);
  ~TbbArenaExecutor() override;
  TbbArenaExecutor(const TbbArenaExecutor&) = delete;
  TbbArenaExecutor& operator=(const TbbArenaExecutor&) = delete;

  void execute(Task work) override;

  int max_concurrency() const { return arena_.max_concurrency(); }

 private:
  struct Helper;  // a destructor that runs the queued work itself (tbb_arena.cpp)

  void run_queued_work_here() noexcept;
  void finished_one() noexcept;

  tbb::task_arena arena_;
  std::mutex mutex_;
  std::condition_variable drained_;
  std::size_t in_flight_ = 0;  // enqueued and not yet returned; guarded by mutex_
  Helper* helper_ = nullptr;   // guarded by mutex_
};

}  // namespace wheeltimer
