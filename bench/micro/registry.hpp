// Each benchmark source registers its rows through one of these; main() calls them in this order,
// which is the order of the report. Within an operation the rows go wheeltimer, heap, asio.
#pragma once

namespace micro {

void register_memory_benchmarks();    // memory_bench.cpp: bytes per pending timer
void register_timer_op_benchmarks();  // timer_ops_bench.cpp: schedule, cancel, churn
void register_dispatch_benchmarks();  // dispatch_bench.cpp: cost per expired task, run or handed on
void register_task_benchmarks();      // task_bench.cpp: Task vs std::function construction
void register_floor_benchmarks();     // floor_bench.cpp: the steps schedule and cancel cannot skip
void register_stop_benchmarks();      // stop_bench.cpp: stop() handing back 1,000,000 tasks
void register_rearm_benchmarks();     // rearm_bench.cpp: cancel + schedule among 1,000,000 pending

}  // namespace micro
