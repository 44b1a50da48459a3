// The "stress" suite, for the two moving parts of the hierarchical wheel that only real threads on
// a real clock reach (API.md guarantees 1-3):
//  - the wake-up handshake: producers pushing while the indicator is on its way to sleep;
//  - a cascade of an upper slot too big for one chunk, met part-way by cancel() and stop().
// The model fuzzer (tests/fuzz) checks the same structure step by step on a manual clock, but with
// one producer, which never races the indicator's sleep, and at most 64 tasks, which never fill a
// cascade past its first chunk.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
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

namespace {

// Busy for `length`: puts the next push at a random point of the indicator's cycle. Not a wait
// for anything.
void spin_for(Clock::duration length) {
  const Clock::time_point end = Clock::now() + length;
  while (Clock::now() < end) {
  }
}

// ---- Wake-ups --------------------------------------------------------------------------------

// Each producer schedules a task due within 2 ms (some at once), waits for it, and goes again, so
// the indicator keeps running a task and going back to sleep on one an hour out while the others
// push. A lost wake-up leaves a task waiting for that hour, and its wait runs into kLateBound.
// Fewer than 16,384 tasks in all, so the wake-up that every 16,384th schedule() makes (guarantee 9)
// cannot cover for a lost one.
TEST(WakeUpStressTest, EveryEarlierTaskWakesTheSleepingIndicator) {
  constexpr int kProducers = 3;
  constexpr int kTasksEach = WHEELTIMER_TEST_TSAN ? 300 : 4000;
  // Declared before the timer, so a task started late (after its wait gave up) still writes here.
  std::vector<std::atomic<Clock::rep>> started(kProducers * kTasksEach);
  std::atomic<int> late{0};
  std::atomic<int> early{0};
  HashedWheelTimer timer;
  const TimerFuture anchor = timer.schedule([] {}, 1h);
  {
    std::vector<std::jthread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        std::mt19937 random(static_cast<unsigned>(p) + 1);
        for (int i = 0; i < kTasksEach; ++i) {
          spin_for(std::chrono::microseconds(random() % 50));
          std::atomic<Clock::rep>* slot = &started[p * kTasksEach + i];
          const TimerFuture future = timer.schedule(
              [slot] { slot->store(Clock::now().time_since_epoch().count()); },
              std::chrono::nanoseconds(random() % 2'000'000));
          if (!future.wait_for(kLateBound)) {
            late.fetch_add(1);
          } else if (slot->load() < future.deadline().time_since_epoch().count()) {
            early.fetch_add(1);
          }
        }
      });
    }
  }
  EXPECT_EQ(late.load(), 0) << "tasks not started within kLateBound of being scheduled: a lost "
                               "wake-up";
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(anchor.state(), TaskState::waiting);
  EXPECT_EQ(timer.stop().size(), 1u) << "only the task an hour out is left";
}

// ---- Cascades --------------------------------------------------------------------------------

// With a wheel of 8 one-millisecond slots, a level-1 slot spans 8 ms. The big group's kBig tasks,
// due 200 to 206 ms out, sit in one such slot. The wheel runs 64 ms ahead of the clock, so it
// reaches the slot, and queues its cascade, about 136 ms out, and then moves it down 1,024 nodes at
// a time (kCascadeChunk), starting between chunks what is due: the small group, due 128 to 144 ms
// out. A canceller cancels tasks of both groups from 120 ms on (one every 5 us or so). A trigger
// task due 136 ms out tells the test that the cascade has begun, and stop() follows a random 0 to
// 1 ms later: part-way through the cascade in most rounds (a build that printed it found a cascade
// still queued at 18 and 19 of the 24 stop() calls of two runs here). Whatever the moment, every
// task must end exactly one way, and none early.
constexpr std::size_t kBig = WHEELTIMER_TEST_TSAN ? 6'000 : 150'000;
constexpr std::size_t kSmall = 2'000;
constexpr int kRounds = WHEELTIMER_TEST_TSAN ? 2 : 6;

struct Record {
  std::atomic<int> runs{0};
  std::atomic<Clock::rep> started{0};
  std::atomic<int> cancel_wins{0};
  TimerFuture future;   // written before the canceller starts
  int handed_back = 0;  // main thread, after stop()
};

class CascadeStressTest : public ::testing::TestWithParam<ExecutorKind> {
 protected:
  // One round; returns the first few problems found, empty if none.
  std::string run_round(unsigned seed) {
    std::mt19937 random(seed);
    const std::size_t count = kBig + kSmall;
    // Outlives the timer and its executor, which may still start a task while they shut down.
    auto records = std::make_unique<Record[]>(count);
    auto timer = std::make_unique<HashedWheelTimer>(
        TimerOptions{.tick = 1ms, .wheel_size = 8, .executor = GetParam().make()});

    // Distinct deadlines, so each handed-back task is found by its deadline.
    const Clock::time_point base = Clock::now();
    std::unordered_map<Clock::rep, std::size_t> by_deadline;
    for (std::size_t i = 0; i < count; ++i) {
      const Clock::time_point deadline =
          i < kBig ? base + 200ms + i * 40ns : base + 128ms + (i - kBig) * 8us;
      Record& record = records[i];
      record.future = timer->schedule_at(
          [&record] {
            record.started.store(Clock::now().time_since_epoch().count());
            record.runs.fetch_add(1);
          },
          deadline);
      by_deadline.emplace(deadline.time_since_epoch().count(), i);
    }

    wheeltimer::testing::Gate cascade_begun;
    timer->schedule_at([&cascade_begun] { cascade_begun.open(); }, base + 136ms);

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
      const auto found = by_deadline.find(task.deadline().time_since_epoch().count());
      if (found == by_deadline.end() || !(records[found->second].future == task.future())) {
        problem("stop() handed back a task that was never scheduled");
        continue;
      }
      ++records[found->second].handed_back;
    }
    long runs_now = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const Record& record = records[i];
      const int runs = record.runs.load();
      runs_now += runs;
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
    if (runs_now != runs_at_stop) problem("a task ran after stop() returned");
    handed_back.clear();  // cancels them
    timer.reset();

    std::string report;
    for (const std::string& line : problems) report += "  " + line + "\n";
    return report;
  }
};

TEST_P(CascadeStressTest, CancelAndStopPartWayThroughACascadeLoseNothing) {
  for (int round = 0; round < kRounds; ++round) {
    const std::string problems = run_round(static_cast<unsigned>(round) + 1);
    ASSERT_TRUE(problems.empty()) << "round " << round << ":\n" << problems;
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, CascadeStressTest,
                         ::testing::ValuesIn(wheeltimer::testing::executor_kinds(1024)),
                         [](const ::testing::TestParamInfo<ExecutorKind>& info) {
                           return info.param.name;
                         });

}  // namespace
