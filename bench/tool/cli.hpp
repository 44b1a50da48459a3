// The command line of wheeltimer-bench (CLI11): one subcommand per workload, the common flags on
// the top level (accepted before or after the subcommand), and no subcommand at all meaning the
// showcase.
#pragma once

#include <optional>

#include "settings.hpp"

namespace wheeltimer_bench {

enum class Workload { showcase, fire, slow, idle, far, schedule };

struct Command {
  Workload workload = Workload::showcase;
  CommonSettings common;
  FireSettings fire;
  SlowSettings slow;
  // The showcase is the slow workload, scaled to run through three executors in about 10 s.
  SlowSettings showcase{.timers = 30'000, .spread_ms = 3000, .slow_fraction = 0.001, .slow_ms = 50};
  IdleSettings idle;
  FarSettings far;
  ScheduleSettings schedule;
};

struct ParseOutcome {
  std::optional<Command> command;  // empty: exit with exit_code (after --help, or a bad flag)
  int exit_code = 0;
};

ParseOutcome parse_command_line(int argc, char** argv);

}  // namespace wheeltimer_bench
