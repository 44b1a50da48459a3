// The workloads of wheeltimer-bench. Each builds its own timer (and executor) from the settings,
// runs once, and reports what it measured. Lateness is always start minus deadline on
// wheeltimer::Clock, as the task itself sees it; CPU time is the whole process's (the indicator,
// executor threads and the tool's own thread), which is why the tool's own thread sleeps rather
// than spins wherever it waits.
#pragma once

#include <cstddef>

#include "progress.hpp"
#include "report.hpp"
#include "settings.hpp"
#include "stats.hpp"

namespace wheeltimer_bench {

// fire: N timers due uniformly over S ms, scheduled as fast as one thread can; how late they
// start, and what firing them all costs in wall and CPU time.
Report run_fire(const CommonSettings& common, const FireSettings& fire, const ProgressFn& progress);

// slow: like fire, but a fraction of the tasks block for M ms (an IO stand-in). What matters is
// the lateness of the other tasks: does a blocked callback delay them?
struct SlowResult {
  std::string executor;  // label of the executor as built
  std::size_t slow_tasks = 0;
  LatenessSummary others;  // the tasks that do not block
  LatenessSummary slow;    // the blocking ones
  std::size_t early = 0;   // over all tasks
  std::size_t lost = 0;
  std::size_t repeated = 0;
  std::size_t threads_seen = 0;  // threads that ran tasks
  double wall_s = 0, cpu_s = 0;
};
// Throws std::invalid_argument if every task would block, leaving none to measure.
void refuse_all_slow(const SlowSettings& slow);
SlowResult measure_slow(const CommonSettings& common, const SlowSettings& slow,
                        const ProgressFn& progress);
Report slow_report(const CommonSettings& common, const SlowSettings& slow,
                   const SlowResult& result);

// idle: a timer with nothing scheduled; the CPU its ticking costs.
Report run_idle(const CommonSettings& common, const IdleSettings& idle);

// far: N timers far out (an hour by default) sit in the wheel while a stream of near timers runs;
// CPU per second. Compare with --far 0 to see what the far timers cost.
Report run_far(const CommonSettings& common, const FarSettings& far, const ProgressFn& progress);

// schedule: P threads schedule N timers in all, then cancel them; ns per call, and resident memory
// per pending timer.
Report run_schedule(const CommonSettings& common, const ScheduleSettings& schedule);

// The no-argument showcase: the slow workload through every executor, side by side. Returns the
// process exit code (non-zero if any task started early or was lost).
int run_showcase(const CommonSettings& common, const SlowSettings& slow);

}  // namespace wheeltimer_bench
