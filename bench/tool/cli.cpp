#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>

#include "report.hpp"
#include "timer_setup.hpp"

namespace wheeltimer_bench {
namespace {

// Number checks with plain messages (CLI11's ranges print the type's whole span, and let NaN
// through). Every flag has an upper bound: a duration must fit in 64-bit nanoseconds, and a count
// in the type it lands in, or it would wrap to a value the user never typed. Only plain decimal
// text passes: CLI11 reads an integer with a leading 0 as octal and one with 0x as hex, so a
// check that read "010" as ten would let eight through.

// `zero_ok`: 0 is accepted besides [least, most] (a duration of none, but not one so short that
// it would round to none).
CLI::Validator real_check(double least, bool least_ok, double most, std::string name,
                          bool zero_ok = false) {
  return CLI::Validator(
      [least, least_ok, most, zero_ok](std::string& input) -> std::string {
        double value = 0;
        const char* end = input.data() + input.size();
        const auto [stop, error] = std::from_chars(input.data(), end, value);
        if (error == std::errc::result_out_of_range) return "out of range: " + input;
        if (error != std::errc() || stop != end) return "not a number: " + input;
        if (!std::isfinite(value)) return "not a finite number: " + input;
        if (zero_ok && value == 0) return "";
        if (value < least || (!least_ok && value == least)) {
          return std::string(zero_ok ? "must be 0 or " : "must be ") +
                 (least_ok ? "at least " : "more than ") + shortest(least) + ", got " + input;
        }
        if (value > most) return "must be at most " + shortest(most) + ", got " + input;
        return "";
      },
      std::move(name));
}

CLI::Validator whole_check(std::uint64_t least, std::uint64_t most, std::string name) {
  return CLI::Validator(
      [least, most](std::string& input) -> std::string {
        const std::string got = ", got " + input;
        const std::string too_small = "must be at least " + std::to_string(least) + got;
        const std::string too_big = "must be at most " + std::to_string(most) + got;
        const bool negative = !input.empty() && input[0] == '-';
        const std::string_view digits = std::string_view(input).substr(negative ? 1 : 0);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
          return "not a whole number: " + input;
        }
        if (digits.size() > 1 && digits[0] == '0') {
          return "write it without leading zeros (CLI11 would read it as octal), got " + input;
        }
        if (negative) return too_small;  // "-0" too: CLI11 would not convert it
        std::uint64_t value = 0;
        // Only digits are left, so the parse stops at the end or overflows.
        const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (parsed.ec == std::errc::result_out_of_range || value > most) return too_big;
        if (value < least) return too_small;
        return "";
      },
      std::move(name));
}

// Durations are capped at a million seconds (about 11.6 days), in each flag's unit.
constexpr double kMaxSeconds = 1e6;
constexpr std::uint64_t kMaxCount = 1'000'000'000'000'000;  // 1e15
const CLI::Validator positive_count = whole_check(1, kMaxCount, "POSITIVE");
const CLI::Validator count_or_zero = whole_check(0, kMaxCount, "NON-NEGATIVE");
const CLI::Validator positive_rate = real_check(0, false, 1e15, "POSITIVE");
const CLI::Validator fraction = real_check(0, true, 1, "FRACTION");
// At least a nanosecond, the clock's unit: a shorter window would be rounded to nothing.
const CLI::Validator seconds = real_check(1e-9, true, kMaxSeconds, "SECONDS");
const CLI::Validator ms_or_zero = real_check(1e-6, true, kMaxSeconds * 1e3, "MS", true);
// A tick of at least one nanosecond, the clock's unit (a shorter one would be rounded up to it).
const CLI::Validator tick_us = real_check(1e-3, true, kMaxSeconds * 1e6, "US");
// TbbArenaExecutor takes an int.
const CLI::Validator thread_count =
    whole_check(0, std::numeric_limits<int>::max(), "NON-NEGATIVE");
const CLI::Validator wheel_slots = whole_check(1, std::uint64_t{1} << 30, "SLOTS");
const CLI::Validator seed = whole_check(0, std::numeric_limits<std::uint64_t>::max(), "UINT64");

void add_common(CLI::App& app, CommonSettings& common) {
  app.add_option("--tick-us", common.tick_us, "Tick length in microseconds")
      ->check(tick_us)
      ->capture_default_str();
  app.add_option("--wheel", common.wheel, "Wheel slots (rounded up to a power of two)")
      ->check(wheel_slots)
      ->capture_default_str();
  app.add_option("--executor", common.executor, "Where tasks run")
      ->check(CLI::IsMember(executor_names()))
      ->capture_default_str();
  app.add_option("--threads", common.threads,
                 "Pool threads, or the TBB arena's limit (0: 8 for the pool, automatic for TBB)")
      ->check(thread_count)
      ->capture_default_str();
  app.add_option("--queue", common.queue, "CallerRunsPool queue capacity")
      ->check(positive_count)
      ->capture_default_str();
  app.add_option("--runs", common.runs, "Repeat the workload; the table adds a median column")
      ->check(positive_count)
      ->capture_default_str();
  app.add_option("--seed", common.seed, "Seed for random deadlines and the choice of slow tasks")
      ->check(seed)
      ->capture_default_str();
  app.add_flag("--json", common.json, "One JSON line per run instead of the table");
}

void add_slow_options(CLI::App& sub, SlowSettings& slow) {
  sub.add_option("--timers", slow.timers, "Tasks in all")
      ->check(positive_count)
      ->capture_default_str();
  sub.add_option("--spread-ms", slow.spread_ms, "Deadlines uniform over this many ms")
      ->check(ms_or_zero)
      ->capture_default_str();
  sub.add_option("--slow-fraction", slow.slow_fraction, "Fraction of the tasks that block")
      ->check(fraction)
      ->capture_default_str();
  sub.add_option("--slow-ms", slow.slow_ms, "How long a slow task blocks (sleeps), in ms")
      ->check(ms_or_zero)
      ->capture_default_str();
  sub.add_option("--slow-pick", slow.slow_pick,
                 "Which tasks block: every (1/F)-th in deadline order (even, a steady load) or a "
                 "random set (its clusters can briefly block more threads than a pool has)")
      ->check(CLI::IsMember({"even", "random"}))
      ->capture_default_str();
}

}  // namespace

ParseOutcome parse_command_line(int argc, char** argv) {
  Command command;
  CLI::App app{
      "wheeltimer-bench: whole-program workloads for the wheeltimer hashed-wheel timer.\n"
      "With no arguments it runs the showcase (about 10 s): slow callbacks through each executor.",
      "wheeltimer-bench"};
  app.footer(
      "Examples:\n"
      "  wheeltimer-bench fire --timers 1000000 --spread-ms 1000 --runs 3\n"
      "  wheeltimer-bench slow --executor pool --threads 8 --slow-fraction 0.01 --slow-ms 50\n"
      "  wheeltimer-bench idle --seconds 10 --tick-us 1000\n"
      "  wheeltimer-bench far --far 1000000      (then --far 0 for the baseline)\n"
      "  wheeltimer-bench schedule --timers 1000000 --producers 2 --json");
  app.require_subcommand(0, 1);
  app.fallthrough();  // common flags may follow the subcommand
  add_common(app, command.common);

  auto* showcase = app.add_subcommand(
      "showcase", "The no-argument demo: `slow` through each executor, side by side");
  add_slow_options(*showcase, command.showcase);

  auto* fire =
      app.add_subcommand("fire", "N timers due uniformly over S ms: lateness, wall and CPU time");
  fire->add_option("--timers", command.fire.timers, "Timers to fire")
      ->check(positive_count)
      ->capture_default_str();
  fire->add_option("--spread-ms", command.fire.spread_ms, "Deadlines uniform over this many ms")
      ->check(ms_or_zero)
      ->capture_default_str();

  auto* slow = app.add_subcommand("slow", "Some tasks block for M ms: lateness of the others");
  add_slow_options(*slow, command.slow);

  auto* idle = app.add_subcommand("idle", "CPU used by a timer with nothing due");
  idle->add_option("--seconds", command.idle.seconds, "Length of the measurement")
      ->check(seconds)
      ->capture_default_str();

  auto* far = app.add_subcommand("far", "N timers far out while near timers run: CPU per second");
  far->add_option("--far", command.far.far, "Far timers (0 for the baseline)")
      ->check(count_or_zero)
      ->capture_default_str();
  far->add_option("--far-s", command.far.far_s, "How far out, in seconds")
      ->check(seconds)
      ->capture_default_str();
  far->add_option("--seconds", command.far.seconds, "Length of the measured window")
      ->check(seconds)
      ->capture_default_str();
  far->add_option("--near-rate", command.far.near_rate, "Near timers scheduled per second")
      ->check(positive_rate)
      ->capture_default_str();
  far->add_option("--near-ms", command.far.near_ms,
                  "Near timers' delays are uniform over [0, this] ms")
      ->check(ms_or_zero)
      ->capture_default_str();

  auto* schedule =
      app.add_subcommand("schedule", "ns per schedule and per cancel, bytes per pending timer");
  schedule
      ->add_option("--timers", command.schedule.timers,
                   "Timers in all (the bytes per timer include fixed costs: use a million)")
      ->check(positive_count)
      ->capture_default_str();
  schedule
      ->add_option("--producers", command.schedule.producers,
                   "Threads that schedule (and then cancel)")
      ->check(positive_count)
      ->capture_default_str();
  schedule->add_option("--delay-s", command.schedule.delay_s, "Delay of the timers, in seconds")
      ->check(seconds)
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help is a "parse error" that exits 0; a real one exits 2.
    return {std::nullopt, app.exit(error) == 0 ? 0 : 2};
  }
  const std::pair<CLI::App*, Workload> choices[] = {{fire, Workload::fire},
                                                    {slow, Workload::slow},
                                                    {idle, Workload::idle},
                                                    {far, Workload::far},
                                                    {schedule, Workload::schedule}};
  for (const auto& [sub, workload] : choices) {
    if (sub->parsed()) command.workload = workload;
  }
  // A flag the run would ignore is refused: the JSON settings would not show it had no effect.
  if (command.workload != Workload::showcase) {
    const std::string& executor = command.common.executor;
    const char* ignored = nullptr;
    if (executor == "inline" && app.get_option("--threads")->count() != 0) ignored = "--threads";
    if (executor != "pool" && app.get_option("--queue")->count() != 0) ignored = "--queue";
    if (ignored != nullptr) {
      std::fprintf(stderr, "%s: the %s executor has no use for it\nRun with --help for more "
                   "information.\n", ignored, executor.c_str());
      return {std::nullopt, 2};
    }
  }
  if (command.workload == Workload::showcase) {
    for (const char* flag : {"--runs", "--executor"}) {
      if (app.get_option(flag)->count() != 0) {
        std::fprintf(stderr,
                     "%s: the showcase runs each executor once; to choose one or repeat a run, "
                     "use the slow workload\nRun with --help for more information.\n",
                     flag);
        return {std::nullopt, 2};
      }
    }
  }
  return {command, 0};
}

}  // namespace wheeltimer_bench
