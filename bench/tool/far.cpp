// far: N timers far in the future sit in the wheel while a steady stream of near timers runs.
// A wheel that walks over its far timers on every rotation pays for them in CPU; run with --far 0
// for the baseline.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include <wheeltimer/wheeltimer.hpp>

#include "delays.hpp"
#include "lateness_log.hpp"
#include "timer_setup.hpp"
#include "usage.hpp"
#include "workloads.hpp"

namespace wheeltimer_bench {

using wheeltimer::Clock;

namespace {
constexpr double kMaxNearTimers = 1e15;  // as for every count flag; it fits in std::size_t
}  // namespace

Report run_far(const CommonSettings& common, const FarSettings& far, const ProgressFn& progress) {
  // One rotation's worth of spread puts far timers in every slot of the wheel.
  const auto far_base = from_s(far.far_s);
  const auto rotation = rotation_of(common, far_base, "--far-s " + shortest(far.far_s));
  const auto far_delays = uniform_delays(far.far, rotation, common.seed);
  if (far.near_rate * far.seconds > kMaxNearTimers) {
    throw std::invalid_argument("--near-rate " + shortest(far.near_rate) + " with --seconds " +
                                shortest(far.seconds) + " asks for more than " +
                                shortest(kMaxNearTimers) + " near timers");
  }
  const auto near_count = static_cast<std::size_t>(std::ceil(far.near_rate * far.seconds));
  const auto near_delays = uniform_delays(near_count, from_ms(far.near_ms), common.seed + 1);
  LatenessLog log(near_count);
  std::atomic<std::size_t> far_fired{0};
  const ExecutorChoice choice = make_executor(common);

  Usage begin, end;
  std::size_t resident = 0;
  bool all_ran = false;
  {
    wheeltimer::HashedWheelTimer timer(timer_options(common, choice.executor));
    for (const auto delay : far_delays) {
      timer.schedule([&far_fired] { far_fired.fetch_add(1, std::memory_order_relaxed); },
                     far_base + delay);
    }
    // Every 16,384th schedule() wakes the indicator to move new timers into the wheel: give it
    // time to take them all in before the window opens.
    std::this_thread::sleep_for(intake_time(common, far.far));
    resident = resident_bytes();

    // The near stream: paced by the millisecond, catching up if a sleep overran, over a window
    // of exactly --seconds (the last step is its end, when the stream is complete).
    begin = Usage::now();
    const auto window_end = begin.wall + from_s(far.seconds);
    std::size_t next = 0;
    constexpr auto kStep = std::chrono::milliseconds(1);
    for (auto step = begin.wall;; step = std::min(step + kStep, window_end)) {
      std::this_thread::sleep_until(step);
      const bool last = step == window_end;
      const double elapsed = std::chrono::duration<double>(Clock::now() - begin.wall).count();
      const auto due =
          last ? near_count
               : std::min(near_count, static_cast<std::size_t>(far.near_rate * elapsed) + 1);
      for (; next < due; ++next) {
        const auto deadline = Clock::now() + near_delays[next];
        const std::size_t i = next;
        timer.schedule_at([&log, i, deadline] { log.record(i, deadline); }, deadline);
      }
      if (last) break;
    }
    end = Usage::now();
    all_ran = log.wait(end.wall + from_ms(far.near_ms) + std::chrono::seconds(60), progress);
  }

  const UsageDelta used = end - begin;
  const LatenessSummary lateness = summarize_lateness(log.samples());
  Report report;
  report.workload = "far";
  report.title = with_commas(far.far) + " timers " +
                 readable(far.far_s) + " s out, while " + readable(far.near_rate) +
                 " near timers a second run";
  report.settings = common_settings(common, choice.label);
  report.settings["far"] = far.far;
  report.settings["far_s"] = far.far_s;
  report.settings["seconds"] = far.seconds;
  report.settings["near_rate"] = far.near_rate;
  report.settings["near_ms"] = far.near_ms;
  report.early = lateness.early;
  report.lost = all_ran ? 0 : near_count - log.finished();
  report.repeated = log.repeated();

  report.add("cpu_s_per_s", "CPU per second, all threads (s/s)", used.cpu_s / used.wall_s, 4);
  report.add("cpu_percent_of_core", "CPU (% of one core)", 100.0 * used.cpu_s / used.wall_s, 2);
  report.add("window_s", "measured window (s)", used.wall_s, 3);
  report.add("near_fired", "near timers fired", static_cast<double>(lateness.count));
  report.add("near_lateness_p50_ms", "near timers' lateness p50 (ms)", lateness.p50_ms, 3);
  report.add("near_lateness_p99_ms", "near timers' lateness p99 (ms)", lateness.p99_ms, 3);
  report.add("near_lateness_max_ms", "near timers' lateness max (ms)", lateness.max_ms, 3);
  report.add("near_early", "near timers early (count)", static_cast<double>(lateness.early));
  report.add("far_fired", "far timers that fired (count)",
             static_cast<double>(far_fired.load(std::memory_order_relaxed)));
  report.add("resident_mb", "resident memory with the far timers in (MB)",
             static_cast<double>(resident) / 1e6, 1);
  return report;
}

}  // namespace wheeltimer_bench
