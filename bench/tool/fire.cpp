// fire: N timers due uniformly over S ms.
#include <chrono>

#include <wheeltimer/wheeltimer.hpp>

#include "delays.hpp"
#include "lateness_log.hpp"
#include "timer_setup.hpp"
#include "usage.hpp"
#include "workloads.hpp"

namespace wheeltimer_bench {

using wheeltimer::Clock;

Report run_fire(const CommonSettings& common, const FireSettings& fire,
                const ProgressFn& progress) {
  const std::size_t count = fire.timers;
  const auto spread = from_ms(fire.spread_ms);
  const auto delays = uniform_delays(count, spread, common.seed);
  LatenessLog log(count);  // outlives the timer, whose tasks write to it
  const ExecutorChoice choice = make_executor(common);

  Usage begin, scheduled, end;
  bool all_ran = false;
  {
    wheeltimer::HashedWheelTimer timer(timer_options(common, choice.executor));
    begin = Usage::now();
    for (std::size_t i = 0; i < count; ++i) {
      // Deadlines count from the moment of each call, so none is already past when scheduled and
      // lateness is the timer's alone.
      const auto deadline = Clock::now() + delays[i];
      timer.schedule_at([&log, i, deadline] { log.record(i, deadline); }, deadline);
    }
    scheduled = Usage::now();
    all_ran = log.wait(scheduled.wall + spread + std::chrono::seconds(60), progress);
    end = Usage::now();
  }  // stop(): anything not run by now is handed back and dropped

  const LatenessSummary lateness = summarize_lateness(log.samples());
  const UsageDelta total = end - begin;
  const UsageDelta scheduling = scheduled - begin;

  Report report;
  report.workload = "fire";
  report.title = with_commas(count) + " timers due uniformly over " +
                 readable(fire.spread_ms) + " ms";
  report.settings = common_settings(common, choice.label);
  report.settings["timers"] = count;
  report.settings["spread_ms"] = fire.spread_ms;
  report.early = lateness.early;
  report.lost = all_ran ? 0 : count - log.finished();
  report.repeated = log.repeated();

  report.add("fired", "timers fired", static_cast<double>(lateness.count));
  report.add_lateness("lateness_", "lateness ", lateness);
  report.add("wall_s", "wall, first schedule to last fire (s)", total.wall_s, 3);
  report.add("cpu_s", "CPU, all threads (s)", total.cpu_s, 3);
  report.add("cpu_user_s", "  of which user (s)", total.user_s, 3);
  report.add("cpu_sys_s", "  of which system (s)", total.sys_s, 3);
  report.add("schedule_loop_cpu_s", "CPU while the loop scheduled (s)", scheduling.cpu_s, 3);
  // A sleeping thread that wakes up counts one voluntary switch: mostly the indicator's wake-ups
  // (the tool's own thread, waiting for the log, is left out).
  report.add("voluntary_switches", "timer's voluntary context switches (wake-ups)",
             static_cast<double>(total.voluntary_switches));
  report.add("schedule_loop_ns_per_timer", "schedule loop, wall per timer (ns)",
             scheduling.wall_s * 1e9 / static_cast<double>(count ? count : 1), 1);
  report.add("threads_running_tasks", "threads that ran tasks",
             static_cast<double>(log.threads_seen()));
  return report;
}

}  // namespace wheeltimer_bench
