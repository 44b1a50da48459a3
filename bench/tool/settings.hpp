// The settings of each workload, as the command line fills them in. Plain values with the
// defaults a user gets when leaving a flag out; cli.cpp binds the flags, the workloads read them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wheeltimer_bench {

// Flags every workload takes.
struct CommonSettings {
  double tick_us = 1000;            // --tick-us
  std::size_t wheel = 512;          // --wheel
  std::string executor = "inline";  // --executor: inline | pool | tbb
  std::size_t threads = 0;          // --threads: pool threads / TBB arena limit; 0: the default
                                    //   (8 for the pool, oneTBB's automatic for the arena)
  std::size_t queue = 10000;        // --queue: CallerRunsPool queue capacity
  std::size_t runs = 1;             // --runs: repeat the workload; the table adds a median column
  bool json = false;                // --json: one JSON line per run instead of the table
  std::uint64_t seed = 42;          // --seed: for deadlines and the choice of slow tasks
};

struct FireSettings {
  std::size_t timers = 1'000'000;
  double spread_ms = 1000;
};

struct SlowSettings {
  std::size_t timers = 20'000;
  double spread_ms = 2000;
  double slow_fraction = 0.01;
  double slow_ms = 50;
  // Which tasks block. "even": every (1/F)-th in deadline order, a steady load; "random": a random
  // set, whose clusters can briefly block more threads than a pool has.
  std::string slow_pick = "even";
};

struct IdleSettings {
  double seconds = 10;
};

struct FarSettings {
  std::size_t far = 1'000'000;
  double far_s = 3600;        // how far out the far timers are
  double seconds = 5;         // length of the measured window
  double near_rate = 10'000;  // near timers scheduled per second
  double near_ms = 100;       // near timers' delays are uniform over [0, near_ms]
};

struct ScheduleSettings {
  std::size_t timers = 1'000'000;
  std::size_t producers = 1;
  double delay_s = 3600;  // far enough that nothing fires while we measure
};

}  // namespace wheeltimer_bench
