// wheeltimer-bench: whole-program workloads for wheeltimer. With no arguments it runs the
// showcase: the same workload, some of whose callbacks block, through each executor, side by side.
// `wheeltimer-bench --help` lists the workloads (fire, slow, idle, far, schedule); each prints a
// table, or with --json one JSON line per run. The exit code is 1 if any task started before its
// deadline, never ran or ran twice, 2 for a bad command line or an error.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "tool/cli.hpp"
#include "tool/progress.hpp"
#include "tool/report.hpp"
#include "tool/workloads.hpp"

namespace wheeltimer_bench {
namespace {

Report run_once(const Command& command, const ProgressFn& progress) {
  switch (command.workload) {
    case Workload::fire:
      return run_fire(command.common, command.fire, progress);
    case Workload::slow:
      return slow_report(command.common, command.slow,
                         measure_slow(command.common, command.slow, progress));
    case Workload::idle:
      return run_idle(command.common, command.idle);
    case Workload::far:
      return run_far(command.common, command.far, progress);
    case Workload::schedule:
      return run_schedule(command.common, command.schedule);
    case Workload::showcase:
      break;
  }
  throw std::logic_error("run_once: the showcase has its own runner");
}

// The flags that decide how much memory a run takes, for an out-of-memory message.
std::string sizing_flags(const Command& command) {
  using std::to_string;
  std::string flags;
  switch (command.workload) {
    case Workload::fire:
      flags = "--timers " + to_string(command.fire.timers);
      break;
    case Workload::slow:
      flags = "--timers " + to_string(command.slow.timers);
      break;
    case Workload::showcase:
      flags = "--timers " + to_string(command.showcase.timers);
      break;
    case Workload::far:
      flags = "--far " + to_string(command.far.far) + ", --near-rate " +
              shortest(command.far.near_rate) + " with --seconds " + shortest(command.far.seconds);
      break;
    case Workload::schedule:
      flags = "--timers " + to_string(command.schedule.timers) + ", --producers " +
              to_string(command.schedule.producers);
      break;
    case Workload::idle:
      break;
  }
  // The showcase runs a pool and an arena whatever --executor says.
  if (command.common.executor != "inline" || command.workload == Workload::showcase) {
    flags += (flags.empty() ? "" : ", ") + std::string("--threads ") +
             to_string(command.common.threads);
  }
  return flags.empty() ? "" : " (" + flags + ")";
}

int run(const Command& command) {
  if (command.workload == Workload::showcase) return run_showcase(command.common, command.showcase);

  std::vector<Report> runs;
  std::size_t bad = 0;
  for (std::size_t r = 1; r <= command.common.runs; ++r) {
    // Progress goes to stderr, and only to a terminal, so stdout stays clean for the results.
    std::unique_ptr<ProgressLine> progress;
    if (isatty(STDERR_FILENO) == 1) {
      progress = std::make_unique<ProgressLine>(
          stderr, "run " + std::to_string(r) + "/" + std::to_string(command.common.runs));
    }
    runs.push_back(run_once(command, progress ? progress->callback() : ProgressFn{}));
    if (progress) progress->finish("done");
    bad += runs.back().early + runs.back().lost + runs.back().repeated;
    if (command.common.json) print_json_line(stdout, runs.back(), r);
  }
  if (!command.common.json) print_table(stdout, runs);
  if (bad != 0) {
    std::fprintf(stderr, "ERROR: %zu tasks started early, never ran or ran twice\n", bad);
  }
  return bad == 0 ? 0 : 1;
}

}  // namespace
}  // namespace wheeltimer_bench

int main(int argc, char** argv) {
  const auto parsed = wheeltimer_bench::parse_command_line(argc, argv);
  if (!parsed.command) return parsed.exit_code;
  try {
    const int code = wheeltimer_bench::run(*parsed.command);
    // Results that could not be written (a full disk, a closed stdout) are no results. (A pipe
    // closed by its reader ends the process with SIGPIPE before this.)
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
      std::fprintf(stderr, "wheeltimer-bench: could not write the results: %s\n",
                   std::strerror(errno));
      return 2;
    }
    return code;
  } catch (const std::exception& error) {
    // std::length_error: a vector asked for more than it can ever hold, out of memory too.
    const bool no_memory = dynamic_cast<const std::bad_alloc*>(&error) != nullptr ||
                           dynamic_cast<const std::length_error*>(&error) != nullptr;
    if (no_memory) {
      std::fprintf(stderr, "wheeltimer-bench: out of memory for this run%s\n",
                   wheeltimer_bench::sizing_flags(*parsed.command).c_str());
    } else {
      std::fprintf(stderr, "wheeltimer-bench: %s\n", error.what());
    }
    return 2;
  }
}
