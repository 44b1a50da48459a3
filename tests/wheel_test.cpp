// The wheel itself, on a ManualClock: time moves only when a test advances it, and advance()
// returns once the indicator has handled everything due by then and gone back to sleep. So these
// tests can assert exactly when each task fires (at the first clock reading at or after its
// deadline, not at the end of its tick), across cascades between levels, and how often the
// indicator wakes up, with no dependence on the machine's speed.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
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
constexpr auto kHalfTick = 500us;

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

  // Task 0 an hour out, then `count` timeouts (task 1) two hours out, all taken into the wheel by
  // the housekeeping wake-up of the last schedule: count + 1 must be a multiple of the period.
  std::vector<TimerFuture> timeouts_in_the_wheel(WheelCore& wheel, std::size_t count) {
    schedule(wheel, 0, start_ + 1h);
    std::vector<TimerFuture> timeouts;
    for (std::size_t i = 0; i < count; ++i) timeouts.push_back(schedule(wheel, 1, start_ + 2h));
    clock_->advance(0ns);
    return timeouts;
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

// Tasks spread over many rotations of a small wheel (so across levels) each fire exactly at their
// deadline: never before, and not one tick late.
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

// A task fires at its deadline, not at the end of its tick: one nanosecond before it nothing has
// run, at it the task has, wherever in the tick the deadline falls.
TEST_F(WheelTest, FiresAtItsDeadlineWithinTheTick) {
  auto wheel = make_wheel(16);
  auto on_tick = schedule(*wheel, 1, start_ + 3 * kTick);
  auto just_after = schedule(*wheel, 2, start_ + 3 * kTick + 1ns);
  auto mid_tick = schedule(*wheel, 3, start_ + 3 * kTick + 250us);
  clock_->advance(3 * kTick - 1ns);
  EXPECT_TRUE(fired_.empty());
  clock_->advance(1ns);
  EXPECT_EQ(fired_ids(), std::vector<int>{1});
  clock_->advance(1ns);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2}));
  clock_->advance(250us - 2ns);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2}));
  clock_->advance(1ns);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(fired_.back().at, start_ + 3 * kTick + 250us);
  EXPECT_EQ(on_tick.state(), TaskState::finished);
  EXPECT_EQ(just_after.state(), TaskState::finished);
  EXPECT_EQ(mid_tick.state(), TaskState::finished);
}

// Deadlines from one tick to 35 years out, on wheels whose level 0 has 1, 8 and 512 slots: each
// cascades down through the levels and fires exactly at its deadline, not a nanosecond before.
TEST_F(WheelTest, CascadesFireEveryScaleExactlyAtItsDeadline) {
  for (std::size_t wheel_size : {std::size_t{1}, std::size_t{8}, std::size_t{512}}) {
    auto wheel = make_wheel(wheel_size);
    const auto base = clock_->now();
    fired_.clear();
    std::vector<Clock::duration> offsets;
    for (std::uint64_t ticks = 1; ticks < (std::uint64_t{1} << 40); ticks = ticks * 3 + 1) {
      offsets.push_back(static_cast<Clock::rep>(ticks) * kTick + 123us);
    }
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      schedule(*wheel, static_cast<int>(i), base + offsets[i]);
    }
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      clock_->advance(base + offsets[i] - 1ns - clock_->now());
      ASSERT_EQ(fired_.size(), i) << "wheel_size " << wheel_size << ", task " << i << " early";
      clock_->advance(1ns);
      ASSERT_EQ(fired_.size(), i + 1) << "wheel_size " << wheel_size << ", task " << i << " late";
      EXPECT_EQ(fired_.back().id, static_cast<int>(i));
      EXPECT_EQ(fired_.back().at, base + offsets[i]);
    }
    EXPECT_EQ(wheel->pending(), 0u);
    wheel->stop();
  }
}

// A big upper slot cascades in chunks, between the firing of due tasks, and ahead of time: 20,000
// tasks 600-1000 ms out on a 512-slot wheel (one level-1 slot), a third of them canceled while they
// wait, each fires exactly at its deadline as the clock moves 1 ms at a time.
TEST_F(WheelTest, BigCascadeInChunksFiresEveryTaskExactlyOnTime) {
  auto wheel = make_wheel(512);
  constexpr int kTasks = 20000;
  std::vector<Clock::time_point> deadlines;
  std::vector<TimerFuture> futures;
  for (int i = 0; i < kTasks; ++i) {
    deadlines.push_back(start_ + 600ms + (i * 7919 % 400000) * 1us);
    futures.push_back(schedule(*wheel, i, deadlines.back()));
  }
  clock_->advance(100ms);
  std::size_t canceled = 0;
  for (int i = 0; i < kTasks; i += 3) canceled += futures[static_cast<std::size_t>(i)].cancel();
  ASSERT_EQ(canceled, static_cast<std::size_t>((kTasks + 2) / 3));
  while (clock_->now() < start_ + 1s) {
    const auto before = clock_->now();
    clock_->advance(1ms);
    for (std::size_t i = 0; i < futures.size(); ++i) {
      const bool due = deadlines[i] <= clock_->now();
      if (i % 3 == 0) continue;
      ASSERT_EQ(futures[i].state(), due ? TaskState::finished : TaskState::waiting)
          << "task " << i << " at " << (clock_->now() - start_).count() << " ns";
    }
    for (const Firing& firing : fired_) {
      if (firing.at <= before) continue;  // checked in an earlier step
      const auto deadline = deadlines[static_cast<std::size_t>(firing.id)];
      EXPECT_GT(deadline, before) << "late: " << firing.id;
      EXPECT_LE(deadline, firing.at) << "early: " << firing.id;
    }
  }
  EXPECT_EQ(fired_.size(), static_cast<std::size_t>(kTasks) - canceled);
  EXPECT_EQ(wheel->pending(), 0u);
}

// With nothing scheduled the indicator never wakes up, however long the clock runs.
TEST_F(WheelTest, IdleTimerNeverWakesUp) {
  auto wheel = make_wheel(512);
  const std::size_t before = clock_->wakeups();
  for (int i = 0; i < 1000; ++i) clock_->advance(kTick);
  clock_->advance(24h);
  EXPECT_EQ(clock_->wakeups(), before);
}

// A jump to the end of time (as far as ManualClock goes: 1 ns short of max(), which means never)
// runs what was due by then, keeps what is due never, and the indicator goes back to sleep (when
// the clock could read max() itself, it had no tick to run to and never slept: advance() hung).
TEST_F(WheelTest, AJumpToTheEndOfTimeRunsWhatIsDueAndKeepsNever) {
  auto wheel = make_wheel(512);
  const TimerFuture soon = schedule(*wheel, 1, start_ + 1h);
  const TimerFuture never = schedule(*wheel, 2, Clock::time_point::max());
  clock_->advance(Clock::duration::max());
  EXPECT_EQ(clock_->now(), Clock::time_point::max() - 1ns);
  EXPECT_EQ(soon.state(), TaskState::finished);
  EXPECT_EQ(never.state(), TaskState::waiting);
  const std::size_t wakeups = clock_->wakeups();
  clock_->advance(Clock::duration::max());
  EXPECT_EQ(clock_->wakeups(), wakeups) << "the indicator did not go back to sleep";
  EXPECT_EQ(fired_ids(), std::vector<int>{1});
}

TEST(ManualClockTest, AStartOutsideTheClocksReadingsIsAnInvalidArgument) {
  EXPECT_THROW(ManualClock::create(Clock::time_point(-1h)), std::invalid_argument);
  EXPECT_THROW(ManualClock::create(Clock::time_point::min()), std::invalid_argument);
  EXPECT_THROW(ManualClock::create(Clock::time_point::max()), std::invalid_argument);
  EXPECT_NO_THROW(ManualClock::create(Clock::time_point()));
  EXPECT_NO_THROW(ManualClock::create(Clock::time_point::max() - 1ns));
}

// Timers an hour out cost no wake-ups while the clock runs a second: the indicator sleeps until
// the next event of the wheel (here a cascade many minutes away), not tick by tick. Reaching the
// hour takes one wake-up per level the tasks cascade through, plus one to fire them.
TEST_F(WheelTest, FarTimersCostNoWakeupsUntilTheirTime) {
  auto wheel = make_wheel(512);
  std::vector<TimerFuture> far;
  for (int i = 0; i < 1000; ++i) far.push_back(schedule(*wheel, i, start_ + 1h + i * 1us));
  clock_->advance(0ns);  // let the indicator take them in
  const std::size_t before = clock_->wakeups();
  for (int i = 0; i < 1000; ++i) clock_->advance(kTick);
  EXPECT_EQ(clock_->wakeups(), before);
  clock_->advance(start_ + 1h + 999us - clock_->now());
  EXPECT_EQ(fired_.size(), 1000u);
  EXPECT_LE(clock_->wakeups() - before, 8u);
}

// A new task due before the indicator's planned wake-up wakes it early; one due later does not.
TEST_F(WheelTest, EarlierTaskWakesTheIndicatorLaterOneWaits) {
  auto wheel = make_wheel(512);
  schedule(*wheel, 1, start_ + 1h);
  clock_->advance(0ns);
  std::size_t before = clock_->wakeups();
  schedule(*wheel, 2, start_ + 2h);  // after the planned wake-up: stays queued, no wake-up
  clock_->advance(0ns);
  EXPECT_EQ(clock_->wakeups(), before);
  schedule(*wheel, 3, start_ + 5 * kTick + 10us);  // before it: wakes the indicator at once
  clock_->advance(0ns);
  EXPECT_EQ(clock_->wakeups(), before + 1);
  clock_->advance(5 * kTick + 10us);
  EXPECT_EQ(fired_ids(), std::vector<int>{3});
  EXPECT_EQ(fired_.back().at, start_ + 5 * kTick + 10us);
  clock_->advance(2h);
  EXPECT_EQ(fired_ids(), (std::vector<int>{3, 1, 2}));
}

// A task due now, scheduled behind a backlog of far-off ones, runs in the indicator's first round
// of intake, not after the backlog: each round publishes the indicator's horizon to the inbound
// lanes, so the task goes to the soon lane, which is taken from first. (With every task in one
// lane, the backlog, about 24 rounds of intake at 512 a round, would all be linked first.)
TEST_F(WheelTest, ATaskDueNowOvertakesABacklogOfFarOnes) {
  auto wheel = make_wheel(512);
  schedule(*wheel, 0, start_ + 1h);
  clock_->advance(0ns);  // asleep, its horizon published; a task due in 2 h does not wake it
  constexpr std::size_t kBacklog = 12'000;
  static_assert(kBacklog + 2 < WheelCore::kHousekeepingPeriod, "no housekeeping wake-up");
  std::vector<TimerFuture> backlog;
  for (std::size_t i = 0; i < kBacklog; ++i) backlog.push_back(schedule(*wheel, 1, start_ + 2h));
  std::size_t linked_when_run = 0;
  auto due_now = wheel->schedule_at([&] { linked_when_run = wheel->linked(); }, start_);
  clock_->advance(0ns);  // waits for the wake-up the task due now asked for
  ASSERT_EQ(due_now.state(), TaskState::finished);
  EXPECT_EQ(wheel->linked(), kBacklog + 1);
  EXPECT_LT(linked_when_run, kBacklog / 2) << "the task waited behind the backlog";
}

// Canceled tasks do not wait for a far-off wake-up to leave the wheel: every
// kHousekeepingPeriod-th task scheduled wakes a sleeping indicator, which takes the new tasks in
// and drops those canceled meanwhile. (Each is scheduled after the one before was canceled, and
// with one cancel fewer than would wake it, so only the schedules wake it here.)
TEST_F(WheelTest, SchedulesWakeTheIndicatorForHousekeeping) {
  auto wheel = make_wheel(512);
  schedule(*wheel, 0, start_ + 1h);
  clock_->advance(0ns);
  const std::size_t before = clock_->wakeups();
  for (std::size_t i = 1; i < WheelCore::kHousekeepingPeriod; ++i) {
    auto future = schedule(*wheel, 1, start_ + 2h);
    clock_->advance(0ns);
    future.cancel();
  }
  clock_->advance(0ns);
  EXPECT_EQ(clock_->wakeups(), before + 1);
  EXPECT_EQ(wheel->pending(), 1u);
}

// Nor does a burst of cancels with no schedule() after it: the kHousekeepingPeriod-th cancel on
// this thread's stripe wakes the sleeping indicator, which unlinks every node listed by then.
TEST_F(WheelTest, ABurstOfCancelsAloneWakesTheIndicatorToUnlinkThem) {
  constexpr std::size_t kPeriod = WheelCore::kHousekeepingPeriod;
  auto wheel = make_wheel(512);
  std::vector<TimerFuture> timeouts = timeouts_in_the_wheel(*wheel, 2 * kPeriod - 1);
  ASSERT_EQ(wheel->linked(), 2 * kPeriod);
  const std::size_t before = clock_->wakeups();
  for (std::size_t i = 0; i < kPeriod; ++i) ASSERT_TRUE(timeouts[i].cancel());
  clock_->advance(0ns);  // waits for the wake-up the last cancel asked for, if any
  EXPECT_EQ(clock_->wakeups(), before + 1);
  EXPECT_EQ(wheel->linked(), kPeriod);
  EXPECT_EQ(wheel->pending(), kPeriod);
}

// The same burst from one of the timer's own tasks, on the indicator thread, which is awake and
// has taken the lists already: the cancel that reaches the multiple (the task's start settled
// first) keeps it from going to sleep before it unlinks them all, within the one wake-up.
TEST_F(WheelTest, ABurstOfCancelsFromATaskIsUnlinkedBeforeTheIndicatorSleeps) {
  constexpr std::size_t kPeriod = WheelCore::kHousekeepingPeriod;
  auto wheel = make_wheel(512);
  std::vector<TimerFuture> timeouts = timeouts_in_the_wheel(*wheel, 2 * kPeriod - 1);
  ASSERT_EQ(wheel->linked(), 2 * kPeriod);
  const std::size_t before = clock_->wakeups();
  std::size_t canceled = 0;
  wheel->schedule_at(
      [&] {
        for (std::size_t i = 0; i < kPeriod; ++i) canceled += timeouts[i].cancel() ? 1 : 0;
      },
      start_);  // due now: wakes the indicator, which runs it inline
  clock_->advance(0ns);
  EXPECT_EQ(canceled, kPeriod);
  EXPECT_EQ(clock_->wakeups(), before + 1);
  EXPECT_EQ(wheel->linked(), kPeriod);
  EXPECT_EQ(wheel->pending(), kPeriod);
}

// Timeouts canceled after they reached the wheel leave it at the indicator's next wake-up, all of
// them, however many piled up while it slept (here more than it unlinks in one round, and one
// fewer than would wake it): none waits in its slot for its deadline.
TEST_F(WheelTest, EveryCanceledTaskLeavesTheWheelAtTheNextWakeUp) {
  constexpr std::size_t kPeriod = WheelCore::kHousekeepingPeriod;
  auto wheel = make_wheel(512);
  std::vector<TimerFuture> timeouts = timeouts_in_the_wheel(*wheel, kPeriod - 1);
  ASSERT_EQ(wheel->linked(), kPeriod);
  for (TimerFuture& timeout : timeouts) ASSERT_TRUE(timeout.cancel());
  clock_->advance(0ns);
  EXPECT_EQ(wheel->linked(), kPeriod) << "the indicator slept through";
  schedule(*wheel, 2, start_);  // due now: wakes the indicator once
  clock_->advance(0ns);
  EXPECT_EQ(wheel->linked(), 1u);
  EXPECT_EQ(wheel->pending(), 1u);
  EXPECT_EQ(fired_ids(), std::vector<int>{2});
}

// Cancels from many threads at once go onto separate lists (one set per thread's stripe); the
// next wake-up unlinks every one of them, from every list.
TEST_F(WheelTest, CanceledTasksFromManyThreadsAllLeaveTheWheel) {
  auto wheel = make_wheel(512);
  constexpr std::size_t kThreads = 20;  // more than the stripes, so some threads share one
  constexpr std::size_t kPerThread = 1000;
  std::vector<std::vector<TimerFuture>> timeouts(kThreads);
  for (auto& mine : timeouts) {
    for (std::size_t i = 0; i < kPerThread; ++i) mine.push_back(schedule(*wheel, 1, start_ + 2h));
  }
  schedule(*wheel, 0, start_ + 1h);
  schedule(*wheel, 2, start_);  // due now: the wake-up takes them all into the wheel
  clock_->advance(0ns);
  ASSERT_EQ(wheel->linked(), kThreads * kPerThread + 1);
  std::vector<std::thread> cancelers;
  for (auto& mine : timeouts) {
    cancelers.emplace_back([&mine] {
      for (TimerFuture& timeout : mine) EXPECT_TRUE(timeout.cancel());
    });
  }
  for (std::thread& canceler : cancelers) canceler.join();
  EXPECT_EQ(wheel->pending(), 1u);
  schedule(*wheel, 3, start_);
  clock_->advance(0ns);
  EXPECT_EQ(wheel->linked(), 1u);
  EXPECT_EQ(fired_ids(), (std::vector<int>{2, 3}));
}

// One round of unlinking takes canceled tasks of both kinds, in turn: those among the due ones
// (within the lookahead), which only lose the list's reference, and those in the wheel, which are
// unlinked a few nodes later. Each leaves exactly once; the two kept fire on time.
TEST_F(WheelTest, CanceledDueAndWheelTasksLeaveInOneRound) {
  auto wheel = make_wheel(512);
  constexpr std::size_t kEach = 40;
  constexpr std::size_t kKeptNear = 5;
  constexpr std::size_t kKeptFar = 27;
  std::vector<TimerFuture> near;
  std::vector<TimerFuture> far;
  for (std::size_t i = 0; i < kEach; ++i) {
    const int id = static_cast<int>(i);
    near.push_back(schedule(*wheel, 100 + id, start_ + 10ms + id * 1ms / 4));
    far.push_back(schedule(*wheel, 200 + id, start_ + 1h + id * 1ms));
  }
  schedule(*wheel, 1, start_);  // due now: the wake-up takes them all in
  clock_->advance(0ns);
  ASSERT_EQ(wheel->linked(), kEach) << "the near ones are due ones";
  for (std::size_t i = 0; i < kEach; ++i) {
    if (i != kKeptNear) {
      ASSERT_TRUE(near[i].cancel());
    }
    if (i != kKeptFar) {
      ASSERT_TRUE(far[i].cancel());
    }
  }
  schedule(*wheel, 2, start_);
  clock_->advance(0ns);
  EXPECT_EQ(wheel->linked(), 1u);
  EXPECT_EQ(wheel->pending(), 2u);
  const int kept_near = 100 + static_cast<int>(kKeptNear);
  const int kept_far = 200 + static_cast<int>(kKeptFar);
  clock_->advance(20ms);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2, kept_near}));
  clock_->advance(1h + 20ms);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2, kept_near, kept_far}));
  EXPECT_EQ(wheel->linked(), 0u);
  EXPECT_EQ(wheel->pending(), 0u);
}

// A task's captures may hold the last handle to the task itself (a job that keeps its own
// future). cancel() destroys them while the indicator may let go of the node, so they must not
// live in the node then. Here the captures' destructor first has the indicator run a round (woken
// by a task due now), which unlinks the canceled node and drops the wheel's and the list's
// references; then `job` drops the last handle, and `payload` is destroyed after that: under
// AddressSanitizer (which CI runs), a heap-use-after-free if the captures were still in the node.
TEST_F(WheelTest, CancelOutlivesCapturesHoldingTheTasksLastHandle) {
  struct Job {
    TimerFuture self;
  };
  struct Round {
    WheelCore* wheel;
    ManualClock* clock;
    Clock::time_point now;
    void run() const {
      wheel->schedule_at([] {}, now);
      clock->advance(0ns);
    }
  };
  struct Captures {  // members die in reverse order: job, then payload
    std::unique_ptr<int> payload;
    std::shared_ptr<Job> job;
    const Round* round_first;  // null once moved from
    Captures(std::shared_ptr<Job> owner, const Round* round)
        : payload(std::make_unique<int>(7)), job(std::move(owner)), round_first(round) {}
    Captures(Captures&& other) noexcept
        : payload(std::move(other.payload)),
          job(std::move(other.job)),
          round_first(std::exchange(other.round_first, nullptr)) {}
    ~Captures() {
      if (round_first != nullptr) round_first->run();
    }
    void operator()() const {}
  };
  static_assert(sizeof(Captures) <= Task::inline_capacity &&
                    std::is_nothrow_move_constructible_v<Captures>,
                "must be stored in the node");

  auto wheel = make_wheel(512);
  const Round round{wheel.get(), clock_.get(), start_};
  auto job = std::make_shared<Job>();
  std::weak_ptr<Job> watch = job;
  job->self = wheel->schedule_at(Captures(job, &round), start_ + 1h);
  Job* const raw = job.get();
  job.reset();  // from now on the task's captures hold the job, and so the task's last handle
  clock_->advance(0ns);
  ASSERT_EQ(wheel->linked(), 1u);
  ASSERT_TRUE(raw->self.cancel());
  EXPECT_TRUE(watch.expired()) << "the captures, and the job with them, were destroyed";
  EXPECT_EQ(wheel->linked(), 0u);
  EXPECT_EQ(wheel->pending(), 0u);
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
  // Let the indicator go back to sleep first, so the jump's round takes every task in before it
  // reads the clock. (A jump in the middle of a round, the indicator woken by a task due before
  // its planned wake-up, would leave the tasks pushed after the round's intake for the next
  // round, after tasks due later that this round found in the wheel.)
  clock_->advance(0ns);
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
    for (int step = 0; step < 300; ++step) clock_->advance(100us);
    ASSERT_EQ(fired_.size(), 200u) << "wheel_size " << wheel_size;
    for (const Firing& firing : fired_) {
      EXPECT_GE(firing.at, deadlines[static_cast<std::size_t>(firing.id)])
          << "wheel_size " << wheel_size;
      EXPECT_LT(firing.at - deadlines[static_cast<std::size_t>(firing.id)], 100us)
          << "fired a clock step late, wheel_size " << wheel_size;
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

// A deadline in a slot the wheel already passed is due at once, not a rotation later.
TEST_F(WheelTest, PassedSlotFiresAtOnce) {
  auto wheel = make_wheel(8);
  clock_->advance(5 * kTick);                     // the wheel is at tick 5
  schedule(*wheel, 1, start_ + 2 * kTick);        // slot 2: already passed in this rotation
  clock_->advance(0ns);
  schedule(*wheel, 2, start_ - 1h);               // long before the wheel started
  clock_->advance(0ns);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2}));
  EXPECT_EQ(fired_.front().at, start_ + 5 * kTick);
  EXPECT_EQ(fired_.back().at, start_ + 5 * kTick);
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

// A canceled task's captures die in cancel() itself, long before its deadline comes round.
TEST_F(WheelTest, CanceledTaskCapturesDieInCancel) {
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

// A task scheduled from inside a task, due at once, runs right after it (never inside schedule()),
// and one due half a tick later runs exactly then.
TEST_F(WheelTest, TaskScheduledFromATaskRunsAfterIt) {
  auto wheel = make_wheel(8);
  wheel->schedule_at(
      [&] {
        fired_.push_back({1, clock_->now()});
        schedule(*wheel, 2, clock_->now());
        EXPECT_EQ(fired_.size(), 1u);  // not run inside schedule()
        schedule(*wheel, 3, clock_->now() + kHalfTick);
      },
      start_ + kTick);
  clock_->advance(kTick);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2}));
  EXPECT_EQ(fired_.back().at, start_ + kTick);
  clock_->advance(kHalfTick);
  EXPECT_EQ(fired_ids(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(fired_.back().at, start_ + kTick + kHalfTick);
}

}  // namespace
}  // namespace wheeltimer
