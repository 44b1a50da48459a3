// Tests for the saturating time arithmetic in <wheeltimer/clock.hpp>, and that a real timer treats
// a saturated delay as "never before stop()".
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ratio>
#include <stdexcept>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace std::chrono_literals;
using wheeltimer::Clock;
using wheeltimer::saturating_add;
using wheeltimer::saturating_deadline;
using wheeltimer::testing::kMustHappen;

namespace {

constexpr Clock::time_point kEnd = Clock::time_point::max();

class SaturatingDeadlineTest : public ::testing::Test {
 protected:
  // A fixed "now" well inside the clock's range, so results are exact and reproducible.
  const Clock::time_point now_ = Clock::time_point(std::chrono::hours(24 * 365));
};

TEST_F(SaturatingDeadlineTest, HoursMaxSaturates) {
  EXPECT_EQ(saturating_deadline(std::chrono::hours::max(), now_), kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::hours::max(), Clock::now()), kEnd);
}

TEST_F(SaturatingDeadlineTest, NanosecondsMaxSaturates) {
  EXPECT_EQ(saturating_deadline(std::chrono::nanoseconds::max(), now_), kEnd);
  // Even at the epoch, where now + nanoseconds::max() is exactly the end of time.
  EXPECT_EQ(saturating_deadline(std::chrono::nanoseconds::max(), Clock::time_point{}), kEnd);
}

TEST_F(SaturatingDeadlineTest, OtherHugeIntegralDelaysSaturate) {
  EXPECT_EQ(saturating_deadline(std::chrono::seconds::max(), now_), kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::milliseconds::max(), now_), kEnd);
  // 400 years: representable as a duration, past the end of a nanosecond steady_clock.
  EXPECT_EQ(saturating_deadline(std::chrono::hours(24 * 365 * 400), now_), kEnd);
}

#if defined(__SIZEOF_INT128__) && !defined(__STRICT_ANSI__)
// GNU mode (this test is built with gnu++20): the standard library counts __int128 as integral.
// A delay beyond 64 bits must saturate, not be cut down to its low 64 bits.
TEST_F(SaturatingDeadlineTest, Int128DelaysSaturate) {
  __extension__ typedef __int128 Int128;
  using Int128Milliseconds = std::chrono::duration<Int128, std::milli>;
  static_assert(std::is_integral_v<Int128>);
  EXPECT_EQ(saturating_deadline(Int128Milliseconds((Int128{1} << 64) + 5), now_), kEnd);
  EXPECT_EQ(saturating_deadline(Int128Milliseconds(5), now_), now_ + std::chrono::milliseconds(5));
}
#endif

TEST_F(SaturatingDeadlineTest, HugeFloatingPointDelaysSaturate) {
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double>(1e300), now_), kEnd);
  EXPECT_EQ(
      saturating_deadline(std::chrono::duration<double>(std::numeric_limits<double>::max()), now_),
      kEnd);
  EXPECT_EQ(saturating_deadline(
                std::chrono::duration<double>(std::numeric_limits<double>::infinity()), now_),
            kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<float, std::ratio<3600>>(1e30f), now_), kEnd);
}

TEST_F(SaturatingDeadlineTest, ZeroAndNegativeDelaysAreDueNow) {
  EXPECT_EQ(saturating_deadline(0ns, now_), now_);
  EXPECT_EQ(saturating_deadline(0s, now_), now_);
  EXPECT_EQ(saturating_deadline(-1ns, now_), now_);
  EXPECT_EQ(saturating_deadline(-5ms, now_), now_);
  EXPECT_EQ(saturating_deadline(std::chrono::hours::min(), now_), now_);
  EXPECT_EQ(saturating_deadline(std::chrono::nanoseconds::min(), now_), now_);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double>(-1e300), now_), now_);
  EXPECT_EQ(saturating_deadline(
                std::chrono::duration<double>(-std::numeric_limits<double>::infinity()), now_),
            now_);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double>(-0.0), now_), now_);
}

TEST_F(SaturatingDeadlineTest, NormalDelaysAreExact) {
  EXPECT_EQ(saturating_deadline(1ns, now_), now_ + 1ns);
  EXPECT_EQ(saturating_deadline(10ms, now_), now_ + 10ms);
  EXPECT_EQ(saturating_deadline(3us, now_), now_ + 3us);
  EXPECT_EQ(saturating_deadline(90s, now_), now_ + 90s);
  EXPECT_EQ(saturating_deadline(2h, now_), now_ + 2h);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double, std::milli>(2.0), now_), now_ + 2ms);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double>(0.25), now_), now_ + 250ms);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<unsigned, std::milli>(5), now_), now_ + 5ms);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<std::int8_t>(100), now_), now_ + 100s);
}

TEST_F(SaturatingDeadlineTest, LargeButRepresentableDelayIsExact) {
  // Close to the end of time but short of it: every nanosecond must survive.
  const Clock::time_point start = Clock::time_point(1h);
  const Clock::duration delay = Clock::duration::max() - 2h + 1ns;
  EXPECT_EQ(saturating_deadline(delay, start), start + delay);
  EXPECT_LT(start + delay, kEnd);
}

TEST_F(SaturatingDeadlineTest, FractionalDelaysRoundUp) {
  using fnanos = std::chrono::duration<double, std::nano>;
  EXPECT_EQ(saturating_deadline(fnanos(1.5), now_), now_ + 2ns);
  EXPECT_EQ(saturating_deadline(fnanos(0.1), now_), now_ + 1ns);
  EXPECT_EQ(saturating_deadline(fnanos(1e-9), now_), now_ + 1ns);  // tiny but positive: not "now"
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double, std::micro>(1.0001), now_),
            now_ + 1001ns);
  // Integral representations with a period the clock cannot express exactly: 1/3 s.
  using thirds = std::chrono::duration<std::int64_t, std::ratio<1, 3>>;
  EXPECT_EQ(saturating_deadline(thirds(1), now_), now_ + 333'333'334ns);
  EXPECT_EQ(saturating_deadline(thirds(3), now_), now_ + 1s);
}

TEST_F(SaturatingDeadlineTest, NaNIsInvalidArgument) {
  EXPECT_THROW(saturating_deadline(std::chrono::duration<double>(std::nan("")), now_),
               std::invalid_argument);
  EXPECT_THROW(
      saturating_deadline(
          std::chrono::duration<float, std::milli>(std::numeric_limits<float>::quiet_NaN()), now_),
      std::invalid_argument);
}

TEST_F(SaturatingDeadlineTest, NowCloseToEndOfTime) {
  const Clock::time_point late = kEnd - 5ns;
  EXPECT_EQ(saturating_deadline(3ns, late), kEnd - 2ns);
  EXPECT_EQ(saturating_deadline(5ns, late), kEnd);
  EXPECT_EQ(saturating_deadline(6ns, late), kEnd);
  EXPECT_EQ(saturating_deadline(1h, late), kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double, std::nano>(4.5), late), kEnd);
  EXPECT_EQ(saturating_deadline(-1h, late), late);
  EXPECT_EQ(saturating_deadline(0ns, kEnd), kEnd);
  EXPECT_EQ(saturating_deadline(1ns, kEnd), kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::hours::max(), kEnd), kEnd);
}

TEST_F(SaturatingDeadlineTest, CoarseIntegralUnitsNearTheEndOfTime) {
  // 2.5 ms of headroom: 2 whole milliseconds fit, 3 do not.
  const Clock::time_point late = kEnd - 2500us;
  EXPECT_EQ(saturating_deadline(2ms, late), late + 2ms);
  EXPECT_EQ(saturating_deadline(3ms, late), kEnd);
  // Headroom of exactly 3 ms: adding them reaches the end of time itself.
  EXPECT_EQ(saturating_deadline(3ms, kEnd - 3ms), kEnd);
  EXPECT_EQ(saturating_deadline(2ms, kEnd - 3ms), kEnd - 1ms);
  // Unsigned and narrow representations compare without wrapping.
  using useconds = std::chrono::duration<unsigned long long>;
  EXPECT_EQ(saturating_deadline(useconds(std::numeric_limits<unsigned long long>::max()), now_),
            kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<std::int8_t, std::ratio<3600>>(127), late),
            kEnd);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<char, std::milli>(2), late), late + 2ms);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<bool>(true), now_), now_ + 1s);
}

// A time point before the clock's epoch (steady_clock never reads one, but a caller may make one
// up): max() - now would overflow, so it must not be computed.
TEST_F(SaturatingDeadlineTest, BeforeTheEpochDoesNotOverflow) {
  const Clock::time_point early = Clock::time_point(-1h);
  EXPECT_EQ(saturating_deadline(10ms, early), early + 10ms);
  EXPECT_EQ(saturating_deadline(std::chrono::duration<double, std::milli>(10), early),
            early + 10ms);
  EXPECT_EQ(saturating_deadline(std::chrono::hours::max(), early), kEnd);
  EXPECT_EQ(saturating_deadline(-1s, early), early);
}

TEST_F(SaturatingDeadlineTest, DefaultNowIsTheCurrentTime) {
  const Clock::time_point before = Clock::now();
  const Clock::time_point deadline = saturating_deadline(10ms);
  const Clock::time_point after = Clock::now();
  EXPECT_GE(deadline, before + 10ms);
  EXPECT_LE(deadline, after + 10ms);
}

class SaturatingAddTest : public ::testing::Test {
 protected:
  const Clock::time_point now_ = Clock::time_point(std::chrono::hours(24 * 365));
};

static_assert(noexcept(saturating_add(std::declval<Clock::time_point>(),
                                      std::declval<Clock::duration>())));

TEST_F(SaturatingAddTest, DurationMaxMeansNoLimit) {
  EXPECT_EQ(saturating_add(now_, Clock::duration::max()), kEnd);
  EXPECT_EQ(saturating_add(Clock::now(), Clock::duration::max()), kEnd);
  EXPECT_EQ(saturating_add(Clock::time_point{}, Clock::duration::max()), kEnd);
}

TEST_F(SaturatingAddTest, ZeroAndNegativeLimitsAreNow) {
  EXPECT_EQ(saturating_add(now_, 0ns), now_);
  EXPECT_EQ(saturating_add(now_, -1s), now_);
  EXPECT_EQ(saturating_add(now_, Clock::duration::min()), now_);
}

TEST_F(SaturatingAddTest, NormalLimitsAreExact) {
  EXPECT_EQ(saturating_add(now_, 5ms), now_ + 5ms);
  EXPECT_EQ(saturating_add(now_, 1ns), now_ + 1ns);
}

TEST_F(SaturatingAddTest, BeforeTheEpochDoesNotOverflow) {
  const Clock::time_point early = Clock::time_point(-1h);
  EXPECT_EQ(saturating_add(early, 10ms), early + 10ms);
  EXPECT_EQ(saturating_add(early, Clock::duration::max()), kEnd);  // still "no limit"
  EXPECT_EQ(saturating_add(Clock::time_point::min(), 1h), Clock::time_point::min() + 1h);
}

TEST_F(SaturatingAddTest, NearEndOfTimeSaturates) {
  EXPECT_EQ(saturating_add(kEnd - 3ns, 2ns), kEnd - 1ns);
  EXPECT_EQ(saturating_add(kEnd - 1ns, 1ns), kEnd);
  EXPECT_EQ(saturating_add(kEnd - 1ns, 2ns), kEnd);
  EXPECT_EQ(saturating_add(kEnd, 1ns), kEnd);
  EXPECT_EQ(saturating_add(kEnd - 1h, Clock::duration::max() - 1ns), kEnd);
}

// ---------------------------------------------------------------------------------------------
// Through a real timer.

class TimerSaturationTest : public ::testing::Test {
 protected:
  // A tiny wheel: a wrapped-around or overflowed deadline would land in a slot that comes round
  // every 4 ticks, so the rotations we wait out below would expose it.
  wheeltimer::HashedWheelTimer timer_{wheeltimer::TimerOptions{.tick = 1ms, .wheel_size = 4}};

  // Lets the wheel turn many times: returns once a task 20 ticks out has run.
  void wait_some_rotations() {
    auto probe = timer_.schedule([] {}, 20ms);
    ASSERT_TRUE(probe.wait_for(kMustHappen));
    ASSERT_TRUE(probe.is_done());
  }
};

TEST_F(TimerSaturationTest, SaturatedDelaysNeverRunBeforeStop) {
  std::atomic<int> runs{0};
  auto count = [&runs] { runs.fetch_add(1); };
  std::vector<wheeltimer::TimerFuture> futures;
  futures.push_back(timer_.schedule(count, std::chrono::hours::max()));
  futures.push_back(timer_.schedule(count, std::chrono::nanoseconds::max()));
  futures.push_back(timer_.schedule(count, std::chrono::seconds::max()));
  futures.push_back(timer_.schedule(count, std::chrono::duration<double>(1e300)));
  futures.push_back(timer_.schedule_at(count, kEnd));
  for (const auto& f : futures) EXPECT_EQ(f.deadline(), kEnd);

  wait_some_rotations();
  for (const auto& f : futures) EXPECT_EQ(f.state(), wheeltimer::TaskState::waiting);
  EXPECT_EQ(timer_.pending(), futures.size());
  EXPECT_EQ(runs.load(), 0);

  // stop() hands every one of them back, unrun.
  std::vector<wheeltimer::PendingTask> handed_back = timer_.stop();
  ASSERT_EQ(handed_back.size(), futures.size());
  for (const auto& f : futures) {
    int matches = 0;
    for (const auto& p : handed_back) {
      if (p.future() == f) {
        ++matches;
        EXPECT_EQ(p.deadline(), kEnd);
      }
    }
    EXPECT_EQ(matches, 1);
    EXPECT_EQ(f.state(), wheeltimer::TaskState::waiting);
  }
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(timer_.pending(), 0u);
}

TEST_F(TimerSaturationTest, NegativeDelayIsDueNow) {
  std::atomic<int> runs{0};
  const Clock::time_point before = Clock::now();
  auto future = timer_.schedule([&runs] { runs.fetch_add(1); }, -1h);
  const Clock::time_point after = Clock::now();
  EXPECT_GE(future.deadline(), before);
  EXPECT_LE(future.deadline(), after);
  ASSERT_TRUE(future.wait_for(kMustHappen));
  EXPECT_TRUE(future.is_done());
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(TimerSaturationTest, ScheduleUsesSaturatingDeadline) {
  const Clock::time_point before = Clock::now();
  // An hour and half a nanosecond: far enough that the task is still there to cancel.
  const std::chrono::duration<double, std::milli> delay(3'600'000.0000005);
  auto future = timer_.schedule([] {}, delay);
  const Clock::time_point after = Clock::now();
  // Rounded up: never earlier than asked.
  EXPECT_GE(future.deadline(), before + 1h + 1ns);
  EXPECT_LE(future.deadline(), after + 1h + 1ns);
  EXPECT_TRUE(future.cancel());
}

TEST_F(TimerSaturationTest, NaNDelayIsRejectedBeforeScheduling) {
  std::atomic<int> runs{0};
  EXPECT_THROW(
      timer_.schedule([&runs] { runs.fetch_add(1); }, std::chrono::duration<double>(std::nan(""))),
      std::invalid_argument);
  EXPECT_EQ(timer_.pending(), 0u);
  EXPECT_TRUE(timer_.stop().empty());
  EXPECT_EQ(runs.load(), 0);
}

}  // namespace
