// Re-arming an idle timeout while a million others are pending: what a server does on each
// request of a connection it would close when idle (Netty's IdleStateHandler). Each operation
// cancels the timer of a connection picked at random and schedules its replacement an hour out.
//
// Untimed, before each run: 1,000,000 timers with deadlines spread uniformly from a minute to an
// hour out (fixed seed), then a marker task that runs only once the timer has taken them all in.
// Timed: kRearms cancel + schedule pairs on one thread, each on a connection picked from a fixed
// sequence, then a second marker that runs once the timer has caught up with them. The row's time
// (manual) is the process's CPU time over that, per pair, as in the other per-operation rows: it
// also counts the timer's own thread taking the new timers in and unlinking the old ones. The
// counter wall_ns_per_rearm is the calling thread's wall time per pair, without the second marker.
//
// The heap leaves canceled entries in its queue until they are more than half of it, then purges
// them all: with a million live timers, once per 1,000,001 re-arms. kRearms is a little over
// that, so its row counts one purge, about the share a long-running server pays.
//
// Asio's row cancels the old steady_timer and arms a new one, like its other rows; an Asio user
// would rather move the same steady_timer's expiry, which also cancels the pending wait.
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "cpu_clock.hpp"
#include "marker.hpp"
#include "registry.hpp"
#include "timer_kinds.hpp"

namespace micro {
namespace {

constexpr std::size_t kConnections = 1'000'000;
constexpr benchmark::IterationCount kRearms = 1'100'000;
constexpr auto kIdleTimeout = std::chrono::hours(1);

template <class Kind>
void bm_rearm(benchmark::State& state) {
  std::mt19937_64 random(42);
  std::uniform_int_distribution<Clock::rep> spread_ms(60'000, 3'600'000);
  std::uniform_int_distribution<std::size_t> connection(0, kConnections - 1);
  std::vector<std::size_t> picks(static_cast<std::size_t>(kRearms));
  for (std::size_t& pick : picks) pick = connection(random);
  std::uint64_t runs = 0;  // what each task's 8-byte capture points at; none is due in the run
  const auto task = [counter = &runs] { ++*counter; };

  std::chrono::nanoseconds wall{0};
  while (state.KeepRunningBatch(kRearms)) {
    auto timer = std::make_unique<Kind>();
    if (!run_marker(*timer, Clock::duration::zero())) {
      state.SkipWithError("the timer did not run a task due now within 10 s");
      return;
    }
    std::vector<typename Kind::Handle> handles;
    handles.reserve(kConnections);
    for (std::size_t i = 0; i < kConnections; ++i) {
      handles.push_back(timer->schedule(task, std::chrono::milliseconds(spread_ms(random))));
    }
    if (!run_marker(*timer, kMarkerDelay)) {
      state.SkipWithError("the timer did not take the million timers in within 10 s");
      return;
    }

    std::size_t canceled = 0;
    const std::int64_t cpu_before = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    const auto start = Clock::now();
    for (const std::size_t pick : picks) {
      canceled += timer->cancel(handles[pick]);
      handles[pick] = timer->schedule(task, kIdleTimeout);
    }
    wall += Clock::now() - start;
    const bool caught_up = run_marker(*timer, kMarkerDelay);
    state.SetIterationTime(static_cast<double>(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_before) *
                          1e-9);

    if (!caught_up) state.SkipWithError("the timer did not catch up within 10 s");
    // A pick that repeats cancels a timer this run scheduled, still pending: every cancel counts.
    if (canceled != picks.size()) {
      state.SkipWithError("a cancel() of a pending timer returned false");
    }
    handles.clear();
    timer.reset();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["wall_ns_per_rearm"] =
      static_cast<double>(wall.count()) / static_cast<double>(state.iterations());
  benchmark::DoNotOptimize(runs);
}

}  // namespace

void register_rearm_benchmarks() {
  for_each_kind([]<class Kind>() {
    benchmark::RegisterBenchmark(row_name<Kind>("BM_Rearm").c_str(), bm_rearm<Kind>)
        ->Iterations(kRearms)
        ->UseManualTime();
  });
}

}  // namespace micro
