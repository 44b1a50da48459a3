// Tests for SteadyTimeSource, the real clock a timer's indicator sleeps on: its sleeps end by the
// time (never early, and never sooner than the coalescing interval after the last one that ended by
// the time), by wake(), or by interrupt().
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "time_source.hpp"

using namespace std::chrono_literals;
using wheeltimer::Clock;
using wheeltimer::detail::SteadyTimeSource;
using wheeltimer::testing::kLateBound;
using wheeltimer::testing::kMustHappen;
using wheeltimer::testing::thread_sleeps;

namespace {

TEST(SteadyTimeSource, SleepEndsNoSoonerThanItsDeadline) {
  SteadyTimeSource source;
  const Clock::time_point due = Clock::now() + 2ms;
  ASSERT_TRUE(source.sleep_until(due));
  EXPECT_GE(Clock::now(), due);
}

TEST(SteadyTimeSource, SleepsEndAtLeastTheCoalescingIntervalApart) {
  constexpr auto kCoalescing = 3ms;
  SteadyTimeSource source(kCoalescing);
  // Read before the first sleep ends, so it is at or before that end.
  const Clock::time_point before = Clock::now();
  ASSERT_TRUE(source.sleep_until(before));  // the first sleep has nothing to keep apart from
  for (int i = 1; i <= 3; ++i) {
    // Due already: without coalescing each would return at once.
    ASSERT_TRUE(source.sleep_until(Clock::now()));
    EXPECT_GE(Clock::now() - before, i * kCoalescing) << "sleep " << i;
  }
}

// source.sleep_until(due) on a thread of its own, returned once that thread sleeps in the kernel
// (or the sleep is over, or kMustHappen has passed), so that what the test does next meets a
// sleep in progress.
std::future<bool> sleep_in_background(SteadyTimeSource& source, Clock::time_point due) {
  auto tid = std::make_shared<std::atomic<pid_t>>(0);
  auto slept = std::async(std::launch::async, [&source, due, tid] {
    tid->store(gettid());
    return source.sleep_until(due);
  });
  const Clock::time_point give_up = Clock::now() + kMustHappen;
  while (slept.wait_for(0s) != std::future_status::ready &&
         (tid->load() == 0 || !thread_sleeps(tid->load())) && Clock::now() < give_up) {
    std::this_thread::yield();
  }
  return slept;
}

// Whether the sleep `slept` ended within kLateBound. If not, `rescue` (the other way to end a
// sleep) ends it, so that the test fails instead of waiting out an hour, or forever.
bool ends_soon(std::future<bool>& slept, const std::function<void()>& rescue) {
  if (slept.wait_for(kLateBound) == std::future_status::ready) return true;
  rescue();
  slept.wait();
  return false;
}

TEST(SteadyTimeSource, WakeEndsACoalescedSleep) {
  SteadyTimeSource source(std::chrono::hours(1));
  ASSERT_TRUE(source.sleep_until(Clock::now()));
  source.wake();  // a wake() before the call ends it at once; without it this waits an hour
  auto slept = std::async(std::launch::async, [&] { return source.sleep_until(Clock::now()); });
  ASSERT_TRUE(ends_soon(slept, [&] { source.interrupt(); }))
      << "the sleep waited out the interval";
  EXPECT_TRUE(slept.get());
}

// A sleep until `due`, in progress on another thread, ends soon after `end` is called and returns
// `returns`. `rescue`, the other way to end a sleep, ends it if `end` did not.
void expect_ending_a_sleep_in_progress(Clock::time_point due, void (SteadyTimeSource::*end)(),
                                       void (SteadyTimeSource::*rescue)(), bool returns) {
  SteadyTimeSource source(std::chrono::hours(1));
  auto slept = sleep_in_background(source, due);
  (source.*end)();
  ASSERT_TRUE(ends_soon(slept, [&] { (source.*rescue)(); }))
      << "the call did not reach the sleeping thread";
  EXPECT_EQ(slept.get(), returns);
}

TEST(SteadyTimeSource, WakeEndsASleepInProgress) {
  expect_ending_a_sleep_in_progress(Clock::now() + std::chrono::hours(1), &SteadyTimeSource::wake,
                                    &SteadyTimeSource::interrupt, true);
}

TEST(SteadyTimeSource, InterruptEndsASleepInProgress) {
  expect_ending_a_sleep_in_progress(Clock::time_point::max(), &SteadyTimeSource::interrupt,
                                    &SteadyTimeSource::wake, false);
}

// A wake() means a task is due sooner than planned: the sleep it ends must not hold back the sleep
// for that task by another interval.
TEST(SteadyTimeSource, AWokenSleepDoesNotPostponeTheNext) {
  SteadyTimeSource source(std::chrono::hours(1));
  source.wake();
  ASSERT_TRUE(source.sleep_until(Clock::time_point::max()));  // ended by the wake()
  const Clock::time_point due = Clock::now() + 1ms;
  auto slept = std::async(std::launch::async, [&] { return source.sleep_until(due); });
  ASSERT_TRUE(ends_soon(slept, [&] { source.interrupt(); }))
      << "the sleep after a wake() waited out the coalescing interval";
  EXPECT_TRUE(slept.get());
  EXPECT_GE(Clock::now(), due);
}

// ...but the interval from the last sleep that did run to its time still holds, and a sleep that
// ran to its time while a wake() was pending counts as one.
TEST(SteadyTimeSource, AWokenSleepKeepsTheIntervalOfTheLastTimedOne) {
  constexpr auto kCoalescing = 50ms;
  SteadyTimeSource source(kCoalescing);
  const Clock::time_point before = Clock::now();
  ASSERT_TRUE(source.sleep_until(before));  // by the time: the interval starts at its end
  source.wake();
  ASSERT_TRUE(source.sleep_until(Clock::time_point::max()));  // by the wake()
  ASSERT_TRUE(source.sleep_until(Clock::now()));
  EXPECT_GE(Clock::now() - before, kCoalescing) << "the interval was lost with the wake()";

  source.wake();
  std::this_thread::sleep_for(kCoalescing);  // time passing, not a wait: the interval is over
  const Clock::time_point third = Clock::now();
  ASSERT_TRUE(source.sleep_until(third));  // woken, and due too: it counts as by the time
  ASSERT_TRUE(source.sleep_until(Clock::now()));
  EXPECT_GE(Clock::now() - third, kCoalescing) << "a sleep due by its end did not count";
}

TEST(SteadyTimeSource, InterruptEndsACoalescedSleep) {
  SteadyTimeSource source(std::chrono::hours(1));
  ASSERT_TRUE(source.sleep_until(Clock::now()));
  source.interrupt();  // before the call: it returns false at once
  auto slept = std::async(std::launch::async, [&] { return source.sleep_until(Clock::now()); });
  ASSERT_TRUE(ends_soon(slept, [&] { source.wake(); })) << "the sleep waited out the interval";
  EXPECT_FALSE(slept.get());
}

}  // namespace
