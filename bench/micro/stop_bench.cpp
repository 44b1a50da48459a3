// stop() of a timer with 1,000,000 pending tasks: the hand-off at a service's shutdown. The row's
// time is the manual time of the stop() call per task it hands back (taking every task out of the
// wheel and sorting them by deadline); the counter drop_ns_per_task is what dropping the returned
// PendingTasks then costs (each cancels its future). wheeltimer alone: the baselines have no
// stop() that hands tasks back.
//
// Two rows: every deadline an hour out (timeouts of one length), and deadlines spread uniformly
// from a minute to an hour out (fixed seed), which leaves the wheel's order far from deadline
// order. None is due before stop().
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include <wheeltimer/wheeltimer.hpp>

#include "marker.hpp"
#include "registry.hpp"
#include "timer_kinds.hpp"

namespace micro {
namespace {

constexpr std::size_t kTimers = 1'000'000;
constexpr auto kHour = std::chrono::milliseconds(3'600'000);

void bm_stop(benchmark::State& state, bool spread) {
  std::mt19937_64 random(42);
  std::uniform_int_distribution<Clock::rep> offset(60'000, kHour.count());
  std::uint64_t runs = 0;  // what each task's 8-byte capture points at; they never run
  double drop_seconds = 0;
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(kTimers))) {
    WheelKind timer;
    if (!run_marker(timer, Clock::duration::zero())) {
      state.SkipWithError("the timer did not run a task due now within 10 s");
      return;
    }
    for (std::size_t i = 0; i < kTimers; ++i) {
      const auto delay = spread ? std::chrono::milliseconds(offset(random)) : kHour;
      timer.schedule([counter = &runs] { ++*counter; }, delay);
    }
    if (!run_marker(timer, kMarkerDelay)) {  // stop() then finds the whole burst in the wheel
      state.SkipWithError("the timer did not take the burst in within 10 s");
      return;
    }
    const auto start = Clock::now();
    std::vector<wheeltimer::PendingTask> handed_back = timer.stop();
    const auto stopped = Clock::now();
    if (handed_back.size() != kTimers) state.SkipWithError("stop() did not hand back every task");
    handed_back.clear();
    drop_seconds += std::chrono::duration<double>(Clock::now() - stopped).count();
    state.SetIterationTime(std::chrono::duration<double>(stopped - start).count());
  }
  state.counters["drop_ns_per_task"] = benchmark::Counter(
      drop_seconds * 1e9 / static_cast<double>(state.iterations()));
  benchmark::DoNotOptimize(runs);
}

}  // namespace

void register_stop_benchmarks() {
  benchmark::RegisterBenchmark("BM_StopHandBack/wheeltimer/one_length", bm_stop, false)
      ->Iterations(static_cast<benchmark::IterationCount>(kTimers))
      ->UseManualTime();
  benchmark::RegisterBenchmark("BM_StopHandBack/wheeltimer/spread_over_an_hour", bm_stop, true)
      ->Iterations(static_cast<benchmark::IterationCount>(kTimers))
      ->UseManualTime();
}

}  // namespace micro
