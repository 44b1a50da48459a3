// schedule: the cost of schedule() and cancel() from P producer threads, and the resident memory
// a pending timer takes (its task captures 8 bytes: one pointer).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

#include "delays.hpp"
#include "phases.hpp"
#include "timer_setup.hpp"
#include "usage.hpp"
#include "workloads.hpp"

namespace wheeltimer_bench {

using wheeltimer::Clock;

Report run_schedule(const CommonSettings& common, const ScheduleSettings& settings) {
  const std::size_t count = settings.timers;
  const std::size_t producers = settings.producers;
  if (producers > count) {
    // A thread with nothing to do would count its empty loop as a call.
    throw std::invalid_argument("--producers " + std::to_string(producers) +
                                " is more than --timers " + std::to_string(count));
  }
  const ExecutorChoice choice = make_executor(common);
  const auto tick = tick_of(common);
  const auto base = from_s(settings.delay_s);
  rotation_of(common, base, "--delay-s " + shortest(settings.delay_s));  // checks they fit
  std::atomic<std::size_t> fired{0};
  // Allocated and written before the baseline, so the futures' own 8 bytes each are not counted.
  std::vector<wheeltimer::TimerFuture> futures(count);

  wheeltimer::HashedWheelTimer timer(timer_options(common, choice.executor));
  const std::size_t wheel = timer.wheel_size();
  // Time for the indicator to move what was scheduled into the wheel (every 16,384th schedule
  // wakes it), or to free what was canceled, before memory is read.
  const auto settle = intake_time(common, count);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  trim_heap();
  const std::size_t resident_before = resident_bytes();

  const PhaseTiming scheduling =
      run_phase(producers, count, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          // Spread over one rotation so every slot gets its share.
          futures[i] = timer.schedule(
              [counter = &fired] { counter->fetch_add(1, std::memory_order_relaxed); },
              base + tick * static_cast<Clock::rep>(i % wheel));
        }
      });
  const std::size_t pending = timer.pending();
  std::this_thread::sleep_for(settle);
  trim_heap();
  const std::size_t resident_pending = resident_bytes();

  std::atomic<std::size_t> canceled{0};
  const PhaseTiming canceling =
      run_phase(producers, count, [&](std::size_t begin, std::size_t end) {
        std::size_t mine = 0;
        for (std::size_t i = begin; i < end; ++i) mine += futures[i].cancel() ? 1 : 0;
        canceled.fetch_add(mine);
      });
  for (auto& future : futures) future = {};  // drop the handles; the vector itself stays
  std::this_thread::sleep_for(settle);
  trim_heap();
  const std::size_t resident_after = resident_bytes();

  const auto per_timer = [&](std::size_t resident) {
    return (static_cast<double>(resident) - static_cast<double>(resident_before)) /
           static_cast<double>(count ? count : 1);
  };
  Report report;
  report.workload = "schedule";
  report.title = with_commas(count) + " timers scheduled, then canceled, by " +
                 std::to_string(producers) + " thread" + (producers == 1 ? "" : "s");
  report.settings = common_settings(common, choice.label);
  report.settings["timers"] = count;
  report.settings["producers"] = producers;
  report.settings["delay_s"] = settings.delay_s;
  report.add("schedule_ns", "schedule, per call per thread (ns)", scheduling.ns_per_call, 1);
  report.add("schedule_mops", "schedule, all threads (M calls/s)", scheduling.calls_per_s / 1e6, 2);
  report.add("cancel_ns", "cancel, per call per thread (ns)", canceling.ns_per_call, 1);
  report.add("cancel_mops", "cancel, all threads (M calls/s)", canceling.calls_per_s / 1e6, 2);
  // Growth over N includes fixed costs (threads, the pool's and the queue's first blocks, ~180 KB
  // here): a per-timer figure only for large N, as in the README's 1,000,000.
  report.add("bytes_per_pending_timer", "resident growth / timers, pending (bytes)",
             per_timer(resident_pending), 1);
  report.add("bytes_per_timer_after_cancel", "resident growth / timers, after cancel (bytes)",
             per_timer(resident_after), 1);
  report.add("pending_after_schedule", "pending() after scheduling", static_cast<double>(pending));
  report.add("canceled", "cancel() calls that succeeded", static_cast<double>(canceled.load()));
  report.add("fired", "timers that fired (expect 0)", static_cast<double>(fired.load()));
  return report;
}

}  // namespace wheeltimer_bench
