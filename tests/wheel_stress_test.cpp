// The "stress" suite, for the two moving parts of the hierarchical wheel that only real threads on
// a real clock reach (API.md guarantees 1-3):
//  - the wake-up handshake: a push landing while the indicator is on its way to sleep;
//  - a cascade of an upper slot too big for one chunk, met part-way by cancel() and stop().
// The model fuzzer (tests/fuzz) checks the same structure step by step on a manual clock, where a
// push never races the indicator's sleep, and with at most 64 tasks, which never fill a cascade
// past its first chunk.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

using namespace std::chrono_literals;
using wheeltimer::Clock;
using wheeltimer::HashedWheelTimer;
using wheeltimer::PendingTask;
using wheeltimer::TaskState;
using wheeltimer::TimerFuture;
using wheeltimer::TimerOptions;
using wheeltimer::testing::ExecutorKind;
using wheeltimer::testing::kLateBound;
using wheeltimer::testing::kMustHappen;
using wheeltimer::testing::spin_for;

namespace {

// ---- Wake-ups --------------------------------------------------------------------------------

// One task at a time: the test schedules a task due within 100 us (some at once), watches for its
// start by spinning on what the task writes (a blocking wait would need a wake-up of its own, and
// by its end the indicator would be asleep again), spins a random 0 to 2 us more, and schedules
// the next. So the pushes land all along the indicator's way from running a task back to its sleep
// on a task an hour out, with nothing else pending that could wake it: a lost wake-up leaves a task
// waiting for that hour, and the test gives up on it after kLateBound. The window that matters
// (after the indicator's last intake, before it publishes its wake-up time) is short: a build that
// skipped the indicator's last look at the inbound queues before sleeping lost 1 to 6 of a timer's
// 10,000 tasks, on every timer of three runs here. Each timer takes fewer than 16,384 tasks, so the
// wake-up that every 16,384th schedule() makes (guarantee 9) cannot cover for a lost one.
TEST(WakeUpStressTest, EveryEarlierTaskWakesTheSleepingIndicator) {
  constexpr int kTimers = WHEELTIMER_TEST_TSAN ? 1 : 3;
  constexpr int kTasksEach = WHEELTIMER_TEST_TSAN ? 1'000 : 10'000;
  for (int round = 0; round < kTimers; ++round) {
    // Declared before the timer, so a task started after the test gave up on it still writes here.
    std::vector<std::atomic<Clock::rep>> started(kTasksEach);
    int late = 0;
    int early = 0;
    HashedWheelTimer timer;
    const TimerFuture anchor = timer.schedule([] {}, 1h);
    std::mt19937 random(static_cast<unsigned>(round) + 1);
    for (std::atomic<Clock::rep>& start : started) {
      const TimerFuture future =
          timer.schedule([&start] { start.store(Clock::now().time_since_epoch().count()); },
                         std::chrono::nanoseconds(random() % 100'000));
      const Clock::time_point give_up = Clock::now() + kLateBound;
      while (start.load() == 0 && Clock::now() < give_up) {
      }
      if (start.load() == 0) {
        ++late;  // the next task's push wakes the indicator again
      } else if (start.load() < future.deadline().time_since_epoch().count()) {
        ++early;
      }
      spin_for(std::chrono::nanoseconds(random() % 2'000));
    }
    EXPECT_EQ(late, 0) << "tasks not started within kLateBound of being scheduled (a lost "
                          "wake-up), timer "
                       << round;
    EXPECT_EQ(early, 0);
    EXPECT_EQ(anchor.state(), TaskState::waiting);
    EXPECT_EQ(timer.stop().size(), 1u) << "only the task an hour out is left";
  }
}

// ---- Cascades --------------------------------------------------------------------------------

// With a wheel of 8 one-millisecond slots, a level-1 slot spans 8 ms. The big group's kBig tasks,
// due 200 to 206 ms out, sit in one such slot. The wheel runs 64 ms ahead of the clock, so it
// reaches the slot, and queues its cascade, about 136 ms out, and then moves it down 1,024 nodes at
// a time (kCascadeChunk), starting between chunks what is due: the small group, due 128 to 144 ms
// out. A canceller cancels tasks of both groups from 120 ms on (one every 5 us or so). A trigger
// task due 136 ms out tells the test that the cascade has begun, and stop() follows a random 0 to
// 1 ms later: part-way through the cascade in most rounds (a build that printed it found a cascade
// still queued at 19 of the 24 stop() calls, in each of two runs here). Whatever the moment, every
// task must end exactly one way, and none early. Under the sanitizers the big group is smaller, so
// that scheduling it still ends before the cascade.
#if WHEELTIMER_TEST_TSAN
constexpr std::size_t kBig = 6'000;
#elif defined(WHEELTIMER_TEST_LSAN)
constexpr std::size_t kBig = 30'000;
#else
constexpr std::size_t kBig = 150'000;
#endif
constexpr std::size_t kSmall = 2'000;
constexpr int kRounds = WHEELTIMER_TEST_TSAN ? 2 : 6;

// Every task's deadline is its own, so a handed-back task is found by its deadline.
Clock::duration deadline_of(std::size_t index) {
  return index < kBig ? 200ms + index * 40ns : 128ms + (index - kBig) * 8us;
}
std::optional<std::size_t> index_of(Clock::duration deadline) {
  if (deadline < 128ms) return {};
  const std::size_t index =
      deadline >= 200ms ? static_cast<std::size_t>((deadline - 200ms) / 40ns)
                        : kBig + static_cast<std::size_t>((deadline - 128ms) / 8us);
  if (index >= kBig + kSmall || deadline_of(index) != deadline) return {};
  return index;
}

struct Record {
  std::atomic<int> runs{0};
  std::atomic<Clock::rep> started{0};
  std::atomic<int> cancel_wins{0};
  TimerFuture future;   // written before the canceller starts
  int handed_back = 0;  // main thread, after stop()
};

struct RoundResult {
  std::string problems;  // the first few, empty if none
  bool on_time = false;  // every task was scheduled before the canceller began
};

class CascadeStressTest : public ::testing::TestWithParam<ExecutorKind> {
 protected:
  RoundResult run_round(unsigned seed) {
    std::mt19937 random(seed);
    const std::size_t count = kBig + kSmall;
    // Outlives the timer and its executor, which may still start a task while they shut down.
    auto records = std::make_unique<Record[]>(count);
    auto timer = std::make_unique<HashedWheelTimer>(
        TimerOptions{.tick = 1ms, .wheel_size = 8, .executor = GetParam().make()});

    const Clock::time_point base = Clock::now();
    for (std::size_t i = 0; i < count; ++i) {
      Record& record = records[i];
      record.future = timer->schedule_at(
          [&record] {
            record.started.store(Clock::now().time_since_epoch().count());
            record.runs.fetch_add(1);
          },
          base + deadline_of(i));
    }
    // Between two of the small group's deadlines, so that it is nobody else's.
    wheeltimer::testing::Gate cascade_begun;
    timer->schedule_at([&cascade_begun] { cascade_begun.open(); }, base + 136ms + 4us);
    const bool on_time = Clock::now() < base + 120ms;

    std::atomic<bool> stopped{false};
    std::jthread canceller([&, seed] {
      std::mt19937 pick(seed * 7 + 1);
      std::this_thread::sleep_until(base + 120ms);
      // A few thousand cancels a round, and never more than a sixteenth of the tasks: were stop()
      // to lose tasks, its wait for pending() to reach zero must not be ended by this thread
      // canceling them all.
      for (std::size_t tries = 0; tries < count / 16 && !stopped.load(); ++tries) {
        Record& record = records[pick() % count];
        if (record.future.cancel()) record.cancel_wins.fetch_add(1);
        spin_for(5us);
      }
    });
    // A test that could not see the trigger still checks what it finds.
    EXPECT_TRUE(cascade_begun.wait()) << "the trigger task did not run";
    spin_for(std::chrono::microseconds(random() % 1'000));
    // stop() waits until every accepted task has settled: one lost in the wheel would hold it up
    // for good, with nothing left to check and a timer that cannot be destroyed.
    auto stopping = std::async(std::launch::async, [&timer] { return timer->stop(); });
    if (stopping.wait_for(kMustHappen) != std::future_status::ready) {
      std::fprintf(stderr, "stop() did not return within kMustHappen: a task was lost\n");
      std::abort();
    }
    std::vector<PendingTask> handed_back = stopping.get();
    const std::size_t pending_after = timer->pending();
    long runs_at_stop = 0;
    for (std::size_t i = 0; i < count; ++i) runs_at_stop += records[i].runs.load();
    stopped.store(true);
    canceller.join();

    std::vector<std::string> problems;
    const auto problem = [&problems](std::string what) {
      if (problems.size() < 10) problems.push_back(std::move(what));
    };
    if (pending_after != 0) {
      problem("pending() = " + std::to_string(pending_after) + " after stop()");
    }
    if (!std::is_sorted(handed_back.begin(), handed_back.end(),
                        [](const PendingTask& a, const PendingTask& b) {
                          return a.deadline() < b.deadline();
                        })) {
      problem("stop() did not hand back in deadline order");
    }
    for (const PendingTask& task : handed_back) {
      const std::optional<std::size_t> index = index_of(task.deadline() - base);
      if (!index || !(records[*index].future == task.future())) {
        problem("stop() handed back a task that was never scheduled");
        continue;
      }
      ++records[*index].handed_back;
    }
    for (std::size_t i = 0; i < count; ++i) {
      const Record& record = records[i];
      const int runs = record.runs.load();
      const int wins = record.cancel_wins.load();
      const TaskState state = record.future.state();
      const bool ran = runs == 1 && state == TaskState::finished && wins == 0 &&
                       record.handed_back == 0;
      const bool canceled = runs == 0 && state == TaskState::canceled && wins == 1 &&
                            record.handed_back == 0;
      // The canceller may also have won on a task stop() had just handed back.
      const bool returned = runs == 0 && record.handed_back == 1 &&
                            ((state == TaskState::waiting && wins == 0) ||
                             (state == TaskState::canceled && wins == 1));
      if (ran + canceled + returned != 1) {
        problem("task " + std::to_string(i) + ": runs " + std::to_string(runs) + ", state " +
                std::string(wheeltimer::to_string(state)) + ", cancel wins " +
                std::to_string(wins) + ", handed back " + std::to_string(record.handed_back));
      }
      if (runs != 0 && record.started.load() < record.future.deadline().time_since_epoch().count())
        problem("task " + std::to_string(i) + " started before its deadline");
    }
    // Dropping the handed-back tasks cancels them, and the executor goes with the timer, running
    // what it still holds as no-ops.
    handed_back.clear();
    timer.reset();
    long runs_at_end = 0;
    for (std::size_t i = 0; i < count; ++i) runs_at_end += records[i].runs.load();
    if (runs_at_end != runs_at_stop) problem("a task ran after stop() returned");

    RoundResult result;
    for (const std::string& line : problems) result.problems += "  " + line + "\n";
    result.on_time = on_time;
    return result;
  }
};

TEST_P(CascadeStressTest, CancelAndStopPartWayThroughACascadeLoseNothing) {
  int on_time = 0;
  for (int round = 0; round < kRounds; ++round) {
    const RoundResult result = run_round(static_cast<unsigned>(round) + 1);
    ASSERT_TRUE(result.problems.empty()) << "round " << round << ":\n" << result.problems;
    on_time += result.on_time;
  }
  // The checks hold whenever stop() comes; only the rounds scheduled in time meet a cascade.
  if (on_time == 0) GTEST_SKIP() << "no round was scheduled before the cascade began";
}

INSTANTIATE_TEST_SUITE_P(Executors, CascadeStressTest,
                         ::testing::ValuesIn(wheeltimer::testing::executor_kinds(1024)),
                         [](const ::testing::TestParamInfo<ExecutorKind>& info) {
                           return info.param.name;
                         });

}  // namespace
