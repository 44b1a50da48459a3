// wheeltimer-bench's own checks: bad flags are refused with the value named (never wrapped into
// a number the user did not type, nor read as octal), the order statistics rank exactly, a run
// with nothing to measure says so instead of reporting 0, far's window lasts its --seconds, the
// wake-ups counted are not the tool's own, settings and titles say what ran, a producer thread's
// exception reaches the caller, and a task that runs twice is counted, not written past the log's
// end.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tool/cli.hpp"
#include "tool/lateness_log.hpp"
#include "tool/phases.hpp"
#include "tool/report.hpp"
#include "tool/stats.hpp"
#include "tool/usage.hpp"
#include "tool/workloads.hpp"

namespace wheeltimer_bench {
namespace {

struct Parsed {
  ParseOutcome outcome;
  std::string error;  // what the parser printed on stderr
};

Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "wheeltimer-bench");
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  testing::internal::CaptureStderr();
  ParseOutcome outcome = parse_command_line(static_cast<int>(argv.size()), argv.data());
  return {std::move(outcome), testing::internal::GetCapturedStderr()};
}

void expect_refused(const std::vector<std::string>& args, const std::string& named) {
  const Parsed parsed = parse(args);
  EXPECT_FALSE(parsed.outcome.command.has_value()) << args.back();
  EXPECT_EQ(parsed.outcome.exit_code, 2) << args.back();
  EXPECT_NE(parsed.error.find(named), std::string::npos) << parsed.error;
}

TEST(BenchCommandLine, RefusesValuesThatWouldOverflowOrAreNotNumbers) {
  expect_refused({"fire", "--spread-ms", "inf"}, "not a finite number: inf");
  expect_refused({"fire", "--spread-ms", "1e300"}, "got 1e300");
  expect_refused({"slow", "--slow-fraction", "nan"}, "not a finite number: nan");
  expect_refused({"slow", "--slow-fraction", "1.5"}, "got 1.5");
  expect_refused({"idle", "--seconds", "1e12"}, "got 1e12");
  expect_refused({"far", "--far-s", "9.3e9"}, "got 9.3e9");
  expect_refused({"schedule", "--delay-s", "1e10"}, "got 1e10");
  expect_refused({"fire", "--tick-us", "1e-9"}, "got 1e-9");
  expect_refused({"fire", "--tick-us", "1e300"}, "got 1e300");
  expect_refused({"--executor", "pool", "--threads", "4294967297"}, "got 4294967297");
}

// CLI11 reads "010" as eight and "0x10" as sixteen; a check that read them as decimal let
// `fire --timers 010` run 8 timers. Whole numbers are plain decimal digits, or refused.
TEST(BenchCommandLine, WholeNumbersArePlainDecimalDigits) {
  expect_refused({"fire", "--timers", "010"}, "got 010");
  expect_refused({"--seed", "0x10"}, "not a whole number: 0x10");
  expect_refused({"--runs", "1e3"}, "not a whole number: 1e3");
  expect_refused({"--wheel", "1.5"}, "not a whole number: 1.5");
  expect_refused({"--seed", ""}, "not a whole number: ");
  expect_refused({"--seed", "-1"}, "must be at least 0, got -1");
  expect_refused({"--seed", "18446744073709551616"}, "got 18446744073709551616");
  expect_refused({"far", "--far", "-0"}, "must be at least 0, got -0");
  const Parsed parsed = parse({"fire", "--timers", "10", "--seed", "18446744073709551615"});
  ASSERT_TRUE(parsed.outcome.command.has_value()) << parsed.error;
  EXPECT_EQ(parsed.outcome.command->fire.timers, 10u);
  EXPECT_EQ(parsed.outcome.command->common.seed, 18446744073709551615u);
}

TEST(BenchCommandLine, RefusesFlagsTheExecutorWouldIgnore) {
  expect_refused({"idle", "--threads", "5"}, "--threads: the inline executor has no use for it");
  expect_refused({"idle", "--executor", "tbb", "--queue", "3"}, "--queue: the tbb executor");
  const Parsed parsed = parse({"idle", "--executor", "pool", "--threads", "5", "--queue", "3"});
  ASSERT_TRUE(parsed.outcome.command.has_value()) << parsed.error;
  EXPECT_EQ(parsed.outcome.command->common.queue, 3u);
}

TEST(BenchCommandLine, RealNumbersAreDecimalAndInRange) {
  expect_refused({"fire", "--spread-ms", "0x10"}, "not a number: 0x10");
  expect_refused({"fire", "--spread-ms", "1e-400"}, "out of range: 1e-400");
  expect_refused({"idle", "--seconds", "1e-12"}, "got 1e-12");  // rounds to 0 ns
  expect_refused({"slow", "--slow-ms", "1e-7"}, "must be 0 or at least 1e-06, got 1e-7");
  const Parsed parsed = parse({"slow", "--slow-ms", "0", "--spread-ms", "1e-6"});
  ASSERT_TRUE(parsed.outcome.command.has_value()) << parsed.error;
}

TEST(BenchCommandLine, TheShowcaseRefusesFlagsItWouldIgnore) {
  expect_refused({"--runs", "3"}, "--runs");
  expect_refused({"showcase", "--executor", "pool"}, "--executor");
  const Parsed parsed = parse({"--threads", "4", "--tick-us", "500"});
  ASSERT_TRUE(parsed.outcome.command.has_value()) << parsed.error;
  EXPECT_EQ(parsed.outcome.command->workload, Workload::showcase);
}

TEST(BenchCommandLine, TakesTheLimitsItStates) {
  const Parsed parsed = parse({"fire", "--tick-us", "0.001", "--spread-ms", "0", "--executor",
                               "pool", "--threads", "2147483647", "--timers", "10"});
  ASSERT_TRUE(parsed.outcome.command.has_value()) << parsed.error;
  EXPECT_EQ(parsed.outcome.command->workload, Workload::fire);
  EXPECT_EQ(parsed.outcome.command->common.threads, 2147483647u);
  EXPECT_EQ(parsed.outcome.command->fire.timers, 10u);
}

TEST(BenchStats, PercentilesRankInWholeNumbers) {
  // 1..1000: the nearest-rank p99.9 is the 999th sample, not the maximum.
  std::vector<std::int64_t> samples(1000);
  std::iota(samples.begin(), samples.end(), std::int64_t{1});
  EXPECT_EQ(percentile(samples, 500), 500);
  EXPECT_EQ(percentile(samples, 990), 990);
  EXPECT_EQ(percentile(samples, 999), 999);
  EXPECT_EQ(percentile(samples, 1000), 1000);
  samples.resize(1'000'000);
  std::iota(samples.begin(), samples.end(), std::int64_t{1});
  EXPECT_EQ(percentile(samples, 999), 999'000);
  EXPECT_EQ(percentile({7}, 500), 7);
}

TEST(BenchStats, NoSamplesIsNotAPerfectZero) {
  const LatenessSummary none = summarize_lateness({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_TRUE(std::isnan(none.p50_ms));
  EXPECT_TRUE(std::isnan(none.p99_ms));
  EXPECT_TRUE(std::isnan(none.max_ms));

  const LatenessSummary some = summarize_lateness({-1'000'000, 2'000'000, 3'000'000});
  EXPECT_EQ(some.count, 3u);
  EXPECT_EQ(some.early, 1u);
  EXPECT_DOUBLE_EQ(some.p50_ms, 2.0);
  EXPECT_DOUBLE_EQ(some.max_ms, 3.0);

  EXPECT_DOUBLE_EQ(median({3, std::nan(""), 1, 2}), 2.0);
  EXPECT_TRUE(std::isnan(median({std::nan("")})));
}

TEST(BenchWorkloads, RefuseRunsWithNothingToMeasure) {
  CommonSettings common;
  SlowSettings all_slow{.timers = 20, .spread_ms = 10, .slow_fraction = 1, .slow_ms = 1};
  EXPECT_THROW(measure_slow(common, all_slow, {}), std::invalid_argument);
  // 0.98 of 20 rounds to all 20. The showcase asks before its banner, which would promise a run.
  EXPECT_THROW(refuse_all_slow({.timers = 20, .slow_fraction = 0.98}), std::invalid_argument);
  EXPECT_NO_THROW(refuse_all_slow({.timers = 20, .slow_fraction = 0.97}));
  testing::internal::CaptureStdout();
  EXPECT_THROW(run_showcase(common, all_slow), std::invalid_argument);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  ScheduleSettings idle_producers{.timers = 3, .producers = 4};
  EXPECT_THROW(run_schedule(common, idle_producers), std::invalid_argument);
}

TEST(BenchWorkloads, RefuseDelaysPastTheClocksRange) {
  // Each flag is in range; together the far timers' deadlines would pass 64-bit nanoseconds.
  const CommonSettings coarse{.tick_us = 562949953421, .wheel = 16384};
  EXPECT_THROW(run_far(coarse, FarSettings{.far = 10, .far_s = 1e6}, {}), std::invalid_argument);
  EXPECT_THROW(run_schedule(coarse, ScheduleSettings{.timers = 10, .delay_s = 1e6}),
               std::invalid_argument);
}

TEST(BenchWorkloads, FarMeasuresAWindowOfExactlyItsSeconds) {
  // One near timer a second over 0.2 s: the window used to end with the last schedule, at once.
  const Report report = run_far(CommonSettings{}, FarSettings{.far = 0, .seconds = 0.2,
                                                              .near_rate = 1, .near_ms = 1},
                                {});
  double window = 0;
  for (const Metric& metric : report.metrics) {
    if (metric.key == "window_s") window = metric.value;
  }
  EXPECT_GE(window, 0.2);
  EXPECT_EQ(report.lost, 0u);
}

// The thread that takes the samples sleeps through idle's window: its own wake-up is not the
// timer's (idle reported 1 / --seconds wake-ups a second for a timer that never woke).
TEST(BenchUsage, WakeUpsLeaveOutTheSamplingThread) {
  const Usage begin = Usage::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Usage end = Usage::now();
  EXPECT_GE(end.own_voluntary_switches - begin.own_voluntary_switches, 1);  // it did sleep
  EXPECT_EQ((end - begin).voluntary_switches, 0);  // and no other thread of this test did
}

// idle's "timer's threads" CPU is the process's less the sampling thread's.
TEST(BenchUsage, TheSamplingThreadsCpuIsTakenApart) {
  const Usage begin = Usage::now();
  while (Usage::now().own_cpu_s - begin.own_cpu_after_s < 0.01) {
  }
  const UsageDelta used = Usage::now() - begin;
  EXPECT_GE(used.own_cpu_s, 0.01);
  EXPECT_LT(used.cpu_s - used.own_cpu_s, 0.005);  // this test has no other thread at work
}

TEST(BenchReport, SettingsAndTitlesSayWhatRan) {
  const auto settings = common_settings(CommonSettings{.wheel = 300}, "inline");
  EXPECT_EQ(settings["wheel"], 512u);  // the slots the timer rounds 300 up to
  EXPECT_EQ(readable(0.5), "0.5");
  EXPECT_EQ(readable(1000), "1,000");
  EXPECT_EQ(readable(99.6), "99.6");
}

TEST(BenchPhases, AThrowingProducerIsRethrownAfterAllAreJoined) {
  std::atomic<int> finished{0};
  EXPECT_THROW(run_phase(4, 8,
                         [&](std::size_t begin, std::size_t) {
                           if (begin == 2) throw std::runtime_error("producer failed");
                           finished.fetch_add(1);
                         }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);  // the others ran to the end and were joined
}

TEST(BenchPhases, ThreadsShareTheCallsOutWithoutGapOrOverlap) {
  std::mutex mutex;
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  run_phase(3, 10, [&](std::size_t begin, std::size_t end) {
    const std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(begin, end);
  });
  std::sort(ranges.begin(), ranges.end());
  const std::vector<std::pair<std::size_t, std::size_t>> expected{{0, 3}, {3, 6}, {6, 10}};
  EXPECT_EQ(ranges, expected);
}

TEST(BenchLatenessLog, ATaskThatRunsTwiceIsCountedNotWrittenPastTheEnd) {
  LatenessLog log(1);
  const auto deadline = wheeltimer::Clock::now();
  log.record(0, deadline);
  EXPECT_EQ(log.repeated(), 0u);
  log.record(0, deadline);
  EXPECT_EQ(log.repeated(), 1u);
  EXPECT_EQ(log.samples().size(), 1u);
}

}  // namespace
}  // namespace wheeltimer_bench
