// schedule, cancel, and schedule+cancel churn, for every timer kind, with 1 and 2 producer threads.
//
// All threads of a run share one timer, built in Setup and stopped in Teardown (both untimed).
// Deadlines are an hour out, so nothing fires while we measure. Each thread does a fixed
// kOpsPerThread operations per run, keeping every handle, so a run leaves up to 1,000,000 timers
// pending: the regime the library is built for, and no draining inside the timed loop.
//
// Reported times: real (wall) time per operation, aggregated over threads (with 2 threads and
// perfect scaling it halves), and CPU time of the whole process per operation, which also
// counts work a timer pushes onto its own thread (wheeltimer's indicator moving new timers into
// the wheel, asio's io thread delivering operation_aborted).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>

#include "marker.hpp"
#include "registry.hpp"
#include "timer_kinds.hpp"

namespace micro {
namespace {

constexpr auto kFar = std::chrono::hours(1);
constexpr benchmark::IterationCount kOpsPerThread = 500'000;

// What every task's 8-byte capture points at; these far-future tasks never run.
std::atomic<std::uint64_t> g_runs{0};
auto far_task() {
  return [counter = &g_runs] { counter->fetch_add(1, std::memory_order_relaxed); };
}

template <class Kind>
std::unique_ptr<Kind>& shared_timer() {
  static std::unique_ptr<Kind> timer;
  return timer;
}
// Whether the shared timer ran a task due now (see marker.hpp), before any row's threads start.
template <class Kind>
bool& shared_timer_ready() {
  static bool ready = false;
  return ready;
}
template <class Kind>
void create_timer(const benchmark::State&) {
  shared_timer<Kind>() = std::make_unique<Kind>();
  shared_timer_ready<Kind>() = run_marker(*shared_timer<Kind>(), Clock::duration::zero());
}
template <class Kind>
void destroy_timer(const benchmark::State&) {
  shared_timer<Kind>().reset();
}

template <class Kind>
void bm_schedule(benchmark::State& state) {
  Kind& timer = *shared_timer<Kind>();
  std::vector<typename Kind::Handle> handles;
  handles.reserve(static_cast<std::size_t>(state.max_iterations));
  for (auto _ : state) handles.push_back(timer.schedule(far_task(), kFar));
  state.SetItemsProcessed(state.iterations());
  // The handles die here, untimed (for asio that cancels each wait); the timer in Teardown.
}

template <class Kind>
void bm_cancel(benchmark::State& state) {
  Kind& timer = *shared_timer<Kind>();
  const auto count = static_cast<std::size_t>(state.max_iterations);
  std::vector<typename Kind::Handle> handles;
  handles.reserve(count);
  for (std::size_t i = 0; i < count; ++i) handles.push_back(timer.schedule(far_task(), kFar));
  // A timeout is usually canceled well after it was scheduled: the timer has taken these in.
  if (!shared_timer_ready<Kind>() || !run_marker(timer, kMarkerDelay)) {
    state.SkipWithError("the timer did not run a marker task within 10 s");
    return;
  }

  std::size_t next = 0;
  std::size_t canceled = 0;
  for (auto _ : state) canceled += timer.cancel(handles[next++]);
  if (canceled != count) state.SkipWithError("a cancel() of a pending timer returned false");
  state.SetItemsProcessed(state.iterations());
}

// A request timeout answered in time: schedule, then cancel the same timer at once.
template <class Kind>
void bm_churn(benchmark::State& state) {
  Kind& timer = *shared_timer<Kind>();
  std::size_t canceled = 0;
  for (auto _ : state) {
    auto handle = timer.schedule(far_task(), kFar);
    canceled += timer.cancel(handle);
  }
  if (canceled != static_cast<std::size_t>(state.iterations())) {
    state.SkipWithError("a cancel() of a pending timer returned false");
  }
  state.SetItemsProcessed(state.iterations());
}

template <class Kind>
void configure(benchmark::internal::Benchmark* bench) {
  bench->Setup(create_timer<Kind>)
      ->Teardown(destroy_timer<Kind>)
      ->Iterations(kOpsPerThread)
      ->Threads(1)
      ->Threads(2)
      ->MeasureProcessCPUTime()
      ->UseRealTime();
}

}  // namespace

void register_timer_op_benchmarks() {
  for_each_kind([]<class Kind>() {
    configure<Kind>(
        benchmark::RegisterBenchmark(row_name<Kind>("BM_Schedule").c_str(), bm_schedule<Kind>));
  });
  for_each_kind([]<class Kind>() {
    configure<Kind>(
        benchmark::RegisterBenchmark(row_name<Kind>("BM_Cancel").c_str(), bm_cancel<Kind>));
  });
  for_each_kind([]<class Kind>() {
    configure<Kind>(
        benchmark::RegisterBenchmark(row_name<Kind>("BM_Churn").c_str(), bm_churn<Kind>));
  });
}

}  // namespace micro
