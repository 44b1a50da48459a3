// idle: a timer with nothing scheduled. The tool's thread sleeps through the measured window, so
// the process's CPU time is the timer's.
#include <chrono>
#include <thread>

#include <wheeltimer/wheeltimer.hpp>

#include "delays.hpp"
#include "timer_setup.hpp"
#include "usage.hpp"
#include "workloads.hpp"

namespace wheeltimer_bench {

Report run_idle(const CommonSettings& common, const IdleSettings& idle) {
  const ExecutorChoice choice = make_executor(common);
  wheeltimer::HashedWheelTimer timer(timer_options(common, choice.executor));
  // Let the indicator (and any executor threads) start before the window opens.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const Usage begin = Usage::now();
  std::this_thread::sleep_for(from_s(idle.seconds));
  const Usage end = Usage::now();
  const UsageDelta used = end - begin;

  Report report;
  report.workload = "idle";
  report.title = "a timer with nothing scheduled, for " +
                 readable(idle.seconds) + " s";
  report.settings = common_settings(common, choice.label);
  report.settings["seconds"] = idle.seconds;
  report.add("wall_s", "wall (s)", used.wall_s, 3);
  report.add("cpu_s", "CPU, all threads (s)", used.cpu_s, 4);
  report.add("cpu_percent_of_core", "CPU (% of one core)", 100.0 * used.cpu_s / used.wall_s, 3);
  // The tool's own thread, waking from its sleep through the window, is charged too: on this VM
  // up to a few hundred microseconds at times. The timer's share leaves it out.
  report.add("timer_cpu_percent_of_core", "  of which the timer's threads (% of one core)",
             100.0 * (used.cpu_s - used.own_cpu_s) / used.wall_s, 4);
  // A sleeping thread that wakes up and sleeps again counts one voluntary switch. The tool's own
  // thread, asleep through the window, is left out.
  report.add("wakeups_per_s", "timer's wake-ups per second (voluntary switches)",
             static_cast<double>(used.voluntary_switches) / used.wall_s, 1);
  report.add("nominal_ticks_per_s", "ticks per second at this tick",
             1e9 / static_cast<double>(tick_of(common).count()), 1);
  return report;
}

}  // namespace wheeltimer_bench
