// The wheel itself, on a ManualClock: time moves only when a test advances it, and advance()
// returns once the indicator has processed every tick due by then. So these tests can assert
// exactly which tick each task fires on, with no dependence on the machine's speed.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "manual_clock.hpp"
#include "test_support.hpp"
#include "wheel_core.hpp"

namespace wheeltimer {
namespace {

using namespace std::chrono_literals;
using detail::ManualClock;
using detail::WheelCore;

constexpr auto kTick = 1ms;

// Everything a task saw when it ran: which one, and the clock's time then.
struct Firing {
  int id;
  Clock::time_point at;
};

class WheelTest : public ::testing::Test {
 protected:
  std::unique_ptr<WheelCore> make_wheel(std::size_t wheel_size) {
    TimerOptions options;
    options.tick = kTick;
    options.wheel_size = wheel_size;
    return std::make_unique<WheelCore>(options, clock_->source());
  }

  // Schedules task `id` at `deadline`; it records when it ran.
  TimerFuture schedule(WheelCore& wheel, int id, Clock::time_point deadline) {
    return wheel.schedule_at([this, id] { fired_.push_back({id, clock_->now()}); }, deadline);
  }

  // Only the indicator appends to fired_, and advance() returns after it went back to sleep.
  std::vector<int> fired_ids() const {
    std::vector<int> ids;
    for (const Firing& firing : fired_) ids.push_back(firing.id);
    return ids;
  }

  std::shared_ptr<ManualClock> clock_ = ManualClock::create();
  const Clock::time_point start_ = clock_->now();
  std::vector<Firing> fired_;
};

// Tasks spread over many rotations of a small wheel each fire on exactly their own tick: never
// before, and not one tick late.
TEST_F(WheelTest, PlacementAcrossManyRotationsFiresOnTheExactTick) {
  auto wheel = make_wheel(8);
  constexpr int kTicks = 100;  // 12.5 rotations
  for (int tick = 1; tick <= kTicks; ++tick) schedule(*wheel, tick, start_ + tick * kTick);
  for (int tick = 1; tick <= kTicks; ++tick) {
    clock_->advance(kTick);
    ASSERT_EQ(fired_.size(), static_cast<std::size_t>(tick)) << "after tick " << tick;
    EXPECT_EQ(fired_.back().id, tick);
    EXPECT_EQ(fired_.back().at, start_ + tick * kTick);
  }
  EXPECT_EQ(wheel->pending(), 0u);
}

// A deadline exactly on a tick fires on that tick; one nanosecond later waits for the next.
TEST_F(WheelTest, DeadlinesOnAndJustAfterATickBoundary) {
  auto wheel = make_wheel(16);
  auto on_tick = schedule(*wheel, 1, start_ + 3 * kTick);
  auto just_after = schedule(*wheel, 2, start_ + 3 * kTick + 1ns);
  clock_->advance(3 * kTick - 1ns);
  EXPECT_TRUE(fired_.empty());
  clock_->advance(1ns);
  EXPECT_EQ(fired_ids(), std::vector<int>{1});
  clock_->advance(kTick - 1ns);
  EXPECT_EQ(fired_ids(), std::vector<int>{1});
  clock_->advance(1ns);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2}));
  EXPECT_EQ(on_tick.state(), TaskState::finished);
  EXPECT_EQ(just_after.state(), TaskState::finished);
}

// The machine was suspended: the clock jumps 1000 ticks at once. The wheel catches up tick by
// tick, runs everything that became due, in deadline order, and nothing early.
TEST_F(WheelTest, LateByManyTicksCatchesUpInOrderWithoutLosingAnything) {
  auto wheel = make_wheel(32);
  std::vector<int> expected;
  for (int i = 0; i < 300; ++i) {
    const auto deadline = start_ + (i * 7 % 1500) * kTick + (i % 3) * 100us;
    schedule(*wheel, i, deadline);
    if (deadline <= start_ + 1000 * kTick) expected.push_back(i);
  }
  clock_->advance(1000 * kTick);
  ASSERT_EQ(fired_.size(), expected.size());
  for (std::size_t i = 1; i < fired_.size(); ++i) {
    const auto previous = fired_[i - 1].id, current = fired_[i].id;
    EXPECT_LE((previous * 7 % 1500) * kTick + (previous % 3) * 100us,
              (current * 7 % 1500) * kTick + (current % 3) * 100us)
        << "fired out of deadline order";
  }
  std::vector<int> ids = fired_ids();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(wheel->pending(), 300u - expected.size());
}

// Nothing ever runs before its deadline, whatever the wheel size: compare every firing's time.
TEST_F(WheelTest, NeverEarlyForAnyWheelSize) {
  for (std::size_t wheel_size : {std::size_t{1}, std::size_t{2}, std::size_t{512},
                                 std::size_t{1} << 20}) {
    auto wheel = make_wheel(wheel_size);
    const auto base = clock_->now();
    fired_.clear();
    std::vector<Clock::time_point> deadlines;
    for (int i = 0; i < 200; ++i) {
      deadlines.push_back(base + (i * 37 % 250) * 100us + 1ns);
      schedule(*wheel, i, deadlines.back());
    }
    for (int step = 0; step < 30; ++step) clock_->advance(kTick);
    ASSERT_EQ(fired_.size(), 200u) << "wheel_size " << wheel_size;
    for (const Firing& firing : fired_) {
      EXPECT_GE(firing.at, deadlines[static_cast<std::size_t>(firing.id)])
          << "wheel_size " << wheel_size;
      EXPECT_LT(firing.at - deadlines[static_cast<std::size_t>(firing.id)], kTick)
          << "fired a tick late, wheel_size " << wheel_size;
    }
    wheel->stop();
  }
}

// A wheel of one slot holds everything in that slot; tasks far out still wait their turn.
TEST_F(WheelTest, WheelOfSizeOneWorks) {
  auto wheel = make_wheel(1);
  EXPECT_EQ(wheel->wheel_size(), 1u);
  schedule(*wheel, 1, start_ + 5 * kTick);
  schedule(*wheel, 2, start_ + 2 * kTick);
  clock_->advance(4 * kTick);
  EXPECT_EQ(fired_ids(), std::vector<int>{2});
  clock_->advance(kTick);
  EXPECT_EQ(fired_ids(), (std::vector<int>{2, 1}));
}

// A deadline in a slot the wheel already passed fires on the next tick, not a rotation later.
TEST_F(WheelTest, PassedSlotFiresOnTheNextTick) {
  auto wheel = make_wheel(8);
  clock_->advance(5 * kTick);                     // the wheel is at tick 5
  schedule(*wheel, 1, start_ + 2 * kTick);        // slot 2: already passed in this rotation
  schedule(*wheel, 2, start_ - 1h);               // long before the wheel started
  clock_->advance(kTick);
  EXPECT_EQ(fired_ids(), (std::vector<int>{2, 1}));  // both on tick 6, in deadline order
}

// Every task scheduled while the clock stands still is still there, untouched, after many
// rotations' worth of ticks pass without reaching it.
TEST_F(WheelTest, FarTaskSurvivesRotationsUntilItsOwn) {
  auto wheel = make_wheel(4);
  auto far = schedule(*wheel, 1, start_ + 1000 * kTick);
  for (int i = 0; i < 999; ++i) clock_->advance(kTick);
  EXPECT_TRUE(fired_.empty());
  EXPECT_EQ(far.state(), TaskState::waiting);
  clock_->advance(kTick);
  EXPECT_EQ(fired_ids(), std::vector<int>{1});
}

// A canceled task leaves the wheel on the next tick: its captures die in cancel() and the node
// is released by the wheel long before its deadline's rotation comes round.
TEST_F(WheelTest, CanceledTaskIsUnlinkedOnTheNextTick) {
  auto wheel = make_wheel(8);
  auto capture = std::make_shared<int>(0);
  std::weak_ptr<int> watch = capture;
  auto future = wheel->schedule_at([capture] {}, start_ + 1000 * kTick);
  capture.reset();
  clock_->advance(kTick);  // the task is in the wheel now
  EXPECT_FALSE(watch.expired());
  EXPECT_TRUE(future.cancel());
  EXPECT_TRUE(watch.expired());  // captures destroyed by cancel() itself
  EXPECT_EQ(wheel->pending(), 0u);
  clock_->advance(kTick);
  EXPECT_EQ(future.state(), TaskState::canceled);
  EXPECT_TRUE(wheel->stop().empty());
}

// Saturated deadlines never fire, however far the clock moves, and stop() hands them back.
TEST_F(WheelTest, SaturatedDeadlineNeverFires) {
  auto wheel = make_wheel(8);
  auto never = schedule(*wheel, 1, Clock::time_point::max());
  clock_->advance(24h);
  EXPECT_TRUE(fired_.empty());
  auto handed_back = wheel->stop();
  ASSERT_EQ(handed_back.size(), 1u);
  EXPECT_EQ(handed_back.front().future(), never);
}

// A task scheduled from inside a task, due at once, runs on the following tick.
TEST_F(WheelTest, TaskScheduledFromATaskRunsOnTheNextTick) {
  auto wheel = make_wheel(8);
  wheel->schedule_at(
      [&] {
        fired_.push_back({1, clock_->now()});
        schedule(*wheel, 2, clock_->now());
      },
      start_ + kTick);
  clock_->advance(kTick);
  EXPECT_EQ(fired_ids(), std::vector<int>{1});
  clock_->advance(kTick);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2}));
  EXPECT_EQ(fired_.back().at, start_ + 2 * kTick);
}

}  // namespace
}  // namespace wheeltimer
