// slow: a fraction of the tasks block (sleep) for M ms, an IO stand-in; the lateness of the others
// shows whether the executor keeps a blocked callback from delaying them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
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

// How many of `count` tasks block: round(fraction * count).
std::size_t slow_count(std::size_t count, double fraction) {
  return std::min(count,
                  static_cast<std::size_t>(std::llround(fraction * static_cast<double>(count))));
}

// Exactly slow_count() of the tasks, chosen as `how` says (see SlowSettings).
std::vector<bool> pick_slow(const std::vector<Clock::duration>& delays, double fraction,
                            const std::string& how, std::uint64_t seed) {
  const std::size_t count = delays.size();
  const std::size_t slow = slow_count(count, fraction);
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<bool> is_slow(count, false);
  if (how == "random") {
    std::mt19937_64 random(seed);
    std::shuffle(order.begin(), order.end(), random);
    for (std::size_t k = 0; k < slow; ++k) is_slow[order[k]] = true;
  } else {
    // Deadline order is delay order: every task is scheduled within a few ms of the first.
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return delays[a] < delays[b]; });
    for (std::size_t k = 0; k < slow; ++k) {
      is_slow[order[(2 * k + 1) * count / (2 * slow)]] = true;  // the middle of each 1/slow share
    }
  }
  return is_slow;
}

}  // namespace

void refuse_all_slow(const SlowSettings& slow) {
  if (slow_count(slow.timers, slow.slow_fraction) == slow.timers) {
    throw std::invalid_argument("--slow-fraction " + shortest(slow.slow_fraction) +
                                " makes all " + std::to_string(slow.timers) +
                                " tasks block: no other task is left to measure");
  }
}

SlowResult measure_slow(const CommonSettings& common, const SlowSettings& slow,
                        const ProgressFn& progress) {
  const std::size_t count = slow.timers;
  refuse_all_slow(slow);
  const auto spread = from_ms(slow.spread_ms);
  const auto block = from_ms(slow.slow_ms);
  const auto delays = uniform_delays(count, spread, common.seed);
  const auto is_slow = pick_slow(delays, slow.slow_fraction, slow.slow_pick, common.seed + 1);
  const auto slow_tasks =
      static_cast<std::size_t>(std::count(is_slow.begin(), is_slow.end(), true));
  LatenessLog log(count);  // outlives the timer, whose tasks write to it
  const ExecutorChoice choice = make_executor(common);

  Usage begin, end;
  bool all_ran = false;
  {
    wheeltimer::HashedWheelTimer timer(timer_options(common, choice.executor));
    begin = Usage::now();
    for (std::size_t i = 0; i < count; ++i) {
      const auto deadline = Clock::now() + delays[i];
      const auto sleep = is_slow[i] ? block : Clock::duration::zero();
      timer.schedule_at(
          [&log, i, deadline, sleep] {
            log.start(i, deadline);
            if (sleep > Clock::duration::zero()) std::this_thread::sleep_for(sleep);
            log.finish();
          },
          deadline);
    }
    // Worst case, every slow task runs after the other: allow for that, and then some. In
    // floating point and saturated: --slow-ms times the slow tasks may pass 64-bit nanoseconds.
    using Seconds = std::chrono::duration<double>;
    const auto give_up = wheeltimer::saturating_deadline(
        Seconds(spread) + Seconds(block) * static_cast<double>(slow_tasks) + Seconds(60));
    all_ran = log.wait(give_up, progress);
    end = Usage::now();
  }

  SlowResult result;
  result.executor = choice.label;
  result.slow_tasks = slow_tasks;
  result.others = summarize_lateness(log.samples([&](std::size_t i) { return !is_slow[i]; }));
  result.slow = summarize_lateness(log.samples([&](std::size_t i) { return is_slow[i]; }));
  result.early = result.others.early + result.slow.early;
  result.lost = all_ran ? 0 : count - log.finished();
  result.repeated = log.repeated();
  result.threads_seen = log.threads_seen();
  const UsageDelta used = end - begin;
  result.wall_s = used.wall_s;
  result.cpu_s = used.cpu_s;
  return result;
}

Report slow_report(const CommonSettings& common, const SlowSettings& slow, const SlowResult& r) {
  const double tick_ms = std::chrono::duration<double, std::milli>(tick_of(common)).count();
  Report report;
  report.workload = "slow";
  report.title = with_commas(slow.timers) + " timers over " +
                 readable(slow.spread_ms) + " ms; " +
                 with_commas(r.slow_tasks) + " of them (picked " + slow.slow_pick + ") block " +
                 readable(slow.slow_ms) +
                 " ms; lateness of the others";
  report.settings = common_settings(common, r.executor);
  report.settings["timers"] = slow.timers;
  report.settings["spread_ms"] = slow.spread_ms;
  report.settings["slow_fraction"] = slow.slow_fraction;
  report.settings["slow_ms"] = slow.slow_ms;
  report.settings["slow_pick"] = slow.slow_pick;
  report.early = r.early;
  report.lost = r.lost;
  report.repeated = r.repeated;

  report.add("other_tasks", "other tasks (count)", static_cast<double>(r.others.count));
  report.add_lateness("others_lateness_", "others' lateness ", r.others);
  report.add("others_lateness_p99_ticks", "others' lateness p99 (ticks)", r.others.p99_ms / tick_ms,
             2);
  report.add("slow_tasks", "slow tasks (count)", static_cast<double>(r.slow.count));
  report.add("slow_lateness_p50_ms", "slow tasks' lateness p50 (ms)", r.slow.p50_ms, 3);
  report.add("slow_lateness_max_ms", "slow tasks' lateness max (ms)", r.slow.max_ms, 3);
  report.add("early", "early, all tasks (count)", static_cast<double>(r.early));
  report.add("wall_s", "wall (s)", r.wall_s, 3);
  report.add("cpu_s", "CPU, all threads (s)", r.cpu_s, 3);
  report.add("threads_running_tasks", "threads that ran tasks",
             static_cast<double>(r.threads_seen));
  return report;
}

}  // namespace wheeltimer_bench
