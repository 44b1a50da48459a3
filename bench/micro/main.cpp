// wheeltimer-micro: per-operation costs of wheeltimer next to two baselines built into the same
// binary, a hand-written priority_queue timer (heap_timer.hpp) and Boost.Asio's steady_timer
// (asio_timer.hpp). All Google Benchmark flags work, e.g. --benchmark_filter=Schedule.
#include <benchmark/benchmark.h>

#include "registry.hpp"

int main(int argc, char** argv) {
  // Memory first: later rows free their timers into allocators that keep the pages, and RSS
  // growth measured after them would count that reused memory as free.
  micro::register_memory_benchmarks();
  micro::register_timer_op_benchmarks();
  micro::register_dispatch_benchmarks();
  micro::register_task_benchmarks();
  micro::register_floor_benchmarks();
  micro::register_stop_benchmarks();
  micro::register_rearm_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
