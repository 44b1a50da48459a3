// Turns the common flags into what a workload needs to build its timer: the executor (a fresh one
// per run, so no run inherits another's threads or queue) and the TimerOptions.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <wheeltimer/wheeltimer.hpp>

#include "settings.hpp"

namespace wheeltimer_bench {

// The executor names --executor accepts; "tbb" only when the library was built with oneTBB.
std::vector<std::string> executor_names();

struct ExecutorChoice {
  std::shared_ptr<wheeltimer::Executor> executor;  // null: inline, on the indicator thread
  std::string label;                               // e.g. "CallerRunsPool(8, queue 10000)"
};

ExecutorChoice make_executor(const CommonSettings& common);

// CallerRunsPool threads for these settings: --threads, or 8 when it is 0.
std::size_t pool_threads(const CommonSettings& common);

wheeltimer::TimerOptions timer_options(const CommonSettings& common,
                                       std::shared_ptr<wheeltimer::Executor> executor);

wheeltimer::Clock::duration tick_of(const CommonSettings& common);

// How long to give the indicator to take `timers` new timers into the wheel (or to free as many
// canceled ones) before memory or CPU is read. A generous allowance, not a measurement: once woken
// (every 16,384th schedule() wakes it), the indicator takes queued timers in without sleeping,
// about a microsecond each here. 300 ms, and two ticks for each 4,096 timers, at most 10 s. The
// last few thousand queued after the last such wake-up may wait for the indicator's next one.
std::chrono::duration<double> intake_time(const CommonSettings& common, std::size_t timers);

// One rotation of level 0: the tick times the wheel's slots (--wheel rounded up to a power of two).
// std::invalid_argument naming both flags if it does not fit in the clock's 64-bit nanoseconds,
// or, added to `base` (the value of `base_flag`, a delay), would not fit.
wheeltimer::Clock::duration rotation_of(const CommonSettings& common,
                                        wheeltimer::Clock::duration base = {},
                                        const std::string& base_flag = "");

}  // namespace wheeltimer_bench
