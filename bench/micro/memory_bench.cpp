// Memory per pending timer: RSS growth / N after scheduling N = 1,000,000 far-future timers whose
// task captures 8 bytes, on a fresh timer. Reported as the counter bytes_per_timer.
//
// What the user keeps is not counted: wheeltimer's TimerFuture and the heap's shared_ptr handle
// are dropped at once (the timer still owns the task). asio has no such choice, destroying a
// steady_timer cancels its wait, so its timers live in a vector of unique_ptr that is allocated
// and touched before the first reading; only the timer objects and what asio allocates count.
// Everything the timer allocates does count, including queues that grew for the burst (e.g.
// wheeltimer's inbound queue blocks).
//
// The row's time is the manual time of the schedule loop per timer (at 0 to 1,000,000 pending).
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "marker.hpp"
#include "registry.hpp"
#include "rss.hpp"
#include "timer_kinds.hpp"

namespace micro {
namespace {

constexpr std::size_t kTimers = 1'000'000;
constexpr auto kFar = std::chrono::hours(1);

template <class Kind>
void bm_memory(benchmark::State& state) {
  std::uint64_t runs = 0;  // what each task's 8-byte capture points at; they never run
  Kind timer;
  std::vector<typename Kind::Handle> kept;  // declared after the timer: destroyed before it
  if constexpr (handle_owns_timer<Kind>) kept.resize(kTimers);
  if (!run_marker(timer, Clock::duration::zero())) {
    state.SkipWithError("the timer did not run a task due now within 10 s");
    return;
  }

  release_free_memory();
  const std::size_t before = resident_bytes();
  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(kTimers))) {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < kTimers; ++i) {
      auto handle = timer.schedule([counter = &runs] { ++*counter; }, kFar);
      if constexpr (handle_owns_timer<Kind>) kept[i] = std::move(handle);
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  // Read once the timer has taken the burst into its wheel.
  if (!run_marker(timer, kMarkerDelay)) {
    state.SkipWithError("the timer did not take the burst in within 10 s");
    return;
  }
  const std::size_t after = resident_bytes();
  state.counters["bytes_per_timer"] =
      (static_cast<double>(after) - static_cast<double>(before)) / static_cast<double>(kTimers);
  benchmark::DoNotOptimize(runs);
}

}  // namespace

void register_memory_benchmarks() {
  for_each_kind([]<class Kind>() {
    // One repetition whatever --benchmark_repetitions says: allocators keep what a timer freed
    // (wheeltimer's node pool keeps its cells for good), so a repeat would find it resident
    // already and measure next to nothing.
    benchmark::RegisterBenchmark(row_name<Kind>("BM_MemoryPerTimer").c_str(), bm_memory<Kind>)
        ->Iterations(static_cast<benchmark::IterationCount>(kTimers))
        ->Repetitions(1)
        ->UseManualTime();
  });
}

}  // namespace micro
