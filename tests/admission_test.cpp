// What schedule() and schedule_at() refuse (an empty task, a stopped timer, a full one) and the
// exact count behind max_pending: pending() drops once per task that runs, is canceled or is
// handed back, before cancel() returns, whichever threads cancel.
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

namespace wheeltimer {
namespace {

using namespace std::chrono_literals;
using testing::kMustHappen;

TEST(Admission, EmptyTaskIsInvalidArgument) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  void (*null_function)() = nullptr;
  std::function<void()> empty_function;
  EXPECT_THROW(timer.schedule(Task{}, 1ms), std::invalid_argument);
  EXPECT_THROW(timer.schedule(nullptr, 1ms), std::invalid_argument);
  EXPECT_THROW(timer.schedule(null_function, 1ms), std::invalid_argument);
  EXPECT_THROW(timer.schedule(empty_function, 1ms), std::invalid_argument);
  EXPECT_THROW(timer.schedule_at(Task{}, Clock::now()), std::invalid_argument);
  EXPECT_THROW(timer.schedule_at(null_function, Clock::now()), std::invalid_argument);
  EXPECT_THROW(timer.schedule_at(empty_function, Clock::now() + 1h), std::invalid_argument);
  EXPECT_EQ(timer.pending(), 0u);
}

TEST(Admission, EmptyTaskWinsOverRejected) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .max_pending = 1});
  TimerFuture far = timer.schedule([] {}, 1h);
  ASSERT_EQ(timer.pending(), 1u);
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);  // it is full
  EXPECT_THROW(timer.schedule(Task{}, 1h), std::invalid_argument);
  EXPECT_THROW(timer.schedule_at(std::function<void()>{}, Clock::now()), std::invalid_argument);
  EXPECT_EQ(timer.pending(), 1u);
}

TEST(Admission, EmptyTaskWinsOverStopped) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  timer.stop();
  EXPECT_THROW(timer.schedule([] {}, 1ms), Stopped);
  EXPECT_THROW(timer.schedule(Task{}, 1ms), std::invalid_argument);
  void (*null_function)() = nullptr;
  EXPECT_THROW(timer.schedule_at(null_function, Clock::now()), std::invalid_argument);
}

TEST(Admission, ScheduleAfterStopThrowsStopped) {
  static_assert(std::is_base_of_v<std::logic_error, Stopped>);
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  timer.stop();
  auto ran = std::make_shared<std::atomic<bool>>(false);
  EXPECT_THROW(timer.schedule([ran] { ran->store(true); }, 0ms), Stopped);
  EXPECT_THROW(timer.schedule_at([ran] { ran->store(true); }, Clock::now()), Stopped);
  EXPECT_THROW(timer.schedule([] {}, 1h), std::logic_error);
  EXPECT_EQ(timer.pending(), 0u);
  EXPECT_FALSE(ran->load());
}

TEST(Admission, MaxPendingRejectsBeyondLimitUntilACancel) {
  static_assert(std::is_base_of_v<std::runtime_error, Rejected>);
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .max_pending = 2});
  EXPECT_EQ(timer.pending(), 0u);
  TimerFuture first = timer.schedule([] {}, 1h);
  EXPECT_EQ(timer.pending(), 1u);
  TimerFuture second = timer.schedule_at([] {}, Clock::now() + 2h);
  EXPECT_EQ(timer.pending(), 2u);
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);
  EXPECT_THROW(timer.schedule_at([] {}, Clock::now()), std::runtime_error);
  EXPECT_EQ(timer.pending(), 2u);

  ASSERT_TRUE(first.cancel());
  EXPECT_EQ(timer.pending(), 1u) << "cancel() returned before pending() dropped";
  TimerFuture third = timer.schedule([] {}, 1h);
  EXPECT_TRUE(third.valid());
  EXPECT_EQ(timer.pending(), 2u);
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);
}

TEST(Admission, PendingDropsOnceWhenTaskRuns) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .max_pending = 1});
  TimerFuture ran = timer.schedule([] {}, 0ms);
  ASSERT_TRUE(ran.wait_for(kMustHappen));
  EXPECT_EQ(timer.pending(), 0u);
  EXPECT_FALSE(ran.cancel());  // must not decrement a second time
  EXPECT_EQ(timer.pending(), 0u);
  // Exactly one slot is free again.
  TimerFuture next = timer.schedule([] {}, 1h);
  EXPECT_EQ(timer.pending(), 1u);
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);
}

// A RUNNING task is no longer pending (API.md: "accepted and not yet started"): the task itself
// sees the count without it, and the max_pending slot it held is free for a task it schedules.
void expect_running_task_not_counted(std::shared_ptr<Executor> executor) {
  HashedWheelTimer timer(
      TimerOptions{.tick = 1ms, .max_pending = 1, .executor = std::move(executor)});
  struct Seen {
    std::size_t pending = 0;
    bool accepted = false;
    TimerFuture scheduled;
  };
  auto seen = std::make_shared<Seen>();
  TimerFuture running = timer.schedule(
      [&timer, seen] {
        seen->pending = timer.pending();
        try {
          seen->scheduled = timer.schedule([] {}, 1h);
          seen->accepted = true;
        } catch (const Rejected&) {
        }
      },
      0ms);
  ASSERT_TRUE(running.wait_for(kMustHappen));
  EXPECT_EQ(seen->pending, 0u);
  EXPECT_TRUE(seen->accepted) << "the running task still held the only max_pending slot";
  EXPECT_EQ(timer.pending(), 1u);  // the task it scheduled
}

TEST(Admission, RunningTaskIsNotPendingInline) { expect_running_task_not_counted(nullptr); }

TEST(Admission, RunningTaskIsNotPendingOnPool) {
  expect_running_task_not_counted(std::make_shared<CallerRunsPool>(1, 4));
}

TEST(Admission, PendingDropsOnceWhenCanceledThenStopped) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  TimerFuture canceled = timer.schedule([] {}, 1h);
  TimerFuture kept = timer.schedule([] {}, 2h);
  ASSERT_EQ(timer.pending(), 2u);
  ASSERT_TRUE(canceled.cancel());
  EXPECT_EQ(timer.pending(), 1u);
  EXPECT_FALSE(canceled.cancel());
  EXPECT_EQ(timer.pending(), 1u);
  std::vector<PendingTask> handed = timer.stop();
  ASSERT_EQ(handed.size(), 1u);  // the canceled task is not handed back
  EXPECT_EQ(handed[0].future(), kept);
  EXPECT_EQ(timer.pending(), 0u);
  // Canceling a handed-back task does not touch the stopped timer's count.
  EXPECT_TRUE(kept.cancel());
  EXPECT_EQ(timer.pending(), 0u);
}

// Expiry and cancel race on the same tasks; afterwards the count must be exactly zero: neither
// leaked (then the refill below would be Rejected early) nor decremented twice (then it would
// accept too many, or wrap around).
TEST(Admission, PendingExactUnderExpiryCancelRace) {
  constexpr std::size_t kLimit = 64;
  auto pool = std::make_shared<CallerRunsPool>(2, 256);
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .max_pending = kLimit, .executor = pool});
  std::mt19937 random(777);
  std::uniform_int_distribution<int> micros(0, 3000);
  for (int round = 0; round < 20; ++round) {
    std::vector<TimerFuture> futures;
    for (std::size_t i = 0; i < kLimit; ++i) {
      futures.push_back(timer.schedule([] {}, std::chrono::microseconds(micros(random))));
    }
    std::thread canceler([copies = futures]() mutable {
      for (auto& f : copies) f.cancel();
    });
    canceler.join();
    for (auto& f : futures) ASSERT_TRUE(f.wait_for(kMustHappen));
    ASSERT_EQ(timer.pending(), 0u) << "round " << round;
  }
  std::vector<TimerFuture> refill;
  for (std::size_t i = 0; i < kLimit; ++i) refill.push_back(timer.schedule([] {}, 1h));
  EXPECT_EQ(timer.pending(), kLimit);
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);
  EXPECT_EQ(timer.stop().size(), kLimit);
  EXPECT_EQ(timer.pending(), 0u);
}

// Cancels from many threads, more threads than the timer has internal counters for them, so every
// one of those is used: the count is exact whenever no cancel is under way, each thread sees its
// own cancels at once, and it ends at exactly zero.
TEST(Admission, PendingExactWithCancelsFromManyThreads) {
  constexpr std::size_t kThreads = 24;
  constexpr std::size_t kPerThread = 40;
  constexpr std::size_t kFirst = kPerThread / 4;                  // per thread, one at a time
  constexpr std::size_t kHalf = (kPerThread - kFirst) / 2;        // per thread, all at once
  constexpr std::size_t kTotal = kThreads * kPerThread;
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  std::vector<TimerFuture> futures;
  for (std::size_t i = 0; i < kTotal; ++i) futures.push_back(timer.schedule([] {}, 1h));
  ASSERT_EQ(timer.pending(), kTotal);

  std::atomic<int> lost_cancels{0};
  std::size_t canceled = 0;
  for (std::size_t t = 0; t < kThreads; ++t) {
    std::thread([&, t] {
      for (std::size_t i = 0; i < kFirst; ++i) {
        if (!futures[t * kPerThread + i].cancel()) lost_cancels.fetch_add(1);
      }
    }).join();
    canceled += kFirst;
    ASSERT_EQ(timer.pending(), kTotal - canceled) << "after thread " << t;
  }

  // Halfway, the barrier's completion runs while every thread waits: nothing moves.
  std::atomic<std::size_t> at_halfway{0};
  std::barrier halfway(static_cast<std::ptrdiff_t>(kThreads),
                       [&]() noexcept { at_halfway.store(timer.pending()); });
  std::atomic<int> own_cancel_unseen{0};
  {
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t i = 0; i < 2 * kHalf; ++i) {
          if (i == kHalf) halfway.arrive_and_wait();
          if (!futures[t * kPerThread + kFirst + i].cancel()) lost_cancels.fetch_add(1);
          // cancel() lowers pending() before it returns, for the canceling thread too. Before the
          // barrier, other threads' cancels could make up for a missing own one; after it, every
          // thread's first kHalf are known to be done, so the bound is tight for this thread's.
          const std::size_t known = i < kHalf ? i + 1 : kThreads * kHalf + (i + 1 - kHalf);
          if (timer.pending() > kTotal - canceled - known) own_cancel_unseen.fetch_add(1);
        }
      });
    }
  }
  EXPECT_EQ(lost_cancels.load(), 0);
  EXPECT_EQ(own_cancel_unseen.load(), 0);
  EXPECT_EQ(at_halfway.load(), kTotal - canceled - kThreads * kHalf);
  canceled += kThreads * 2 * kHalf;
  EXPECT_EQ(timer.pending(), kTotal - canceled);
  for (std::size_t t = 0; t < kThreads; ++t) {
    for (std::size_t i = kFirst + 2 * kHalf; i < kPerThread; ++i) {
      ASSERT_TRUE(futures[t * kPerThread + i].cancel());
    }
  }
  EXPECT_EQ(timer.pending(), 0u);
  EXPECT_TRUE(timer.stop().empty());
}

// max_pending counts cancels from any thread: full means exactly max_pending, and exactly as many
// as were canceled fit in again, round after round (new threads each round).
TEST(Admission, MaxPendingExactWithCancelsFromManyThreads) {
  constexpr std::size_t kLimit = 64;
  constexpr std::size_t kThreads = 8;
  constexpr std::size_t kPerThread = kLimit / 2 / kThreads;
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .max_pending = kLimit});
  std::vector<TimerFuture> held;
  for (int round = 0; round < 6; ++round) {
    while (held.size() < kLimit) held.push_back(timer.schedule([] {}, 1h));
    ASSERT_EQ(timer.pending(), kLimit) << "round " << round;
    EXPECT_THROW(timer.schedule([] {}, 1h), Rejected) << "round " << round;
    ASSERT_EQ(timer.pending(), kLimit) << "round " << round;
    std::atomic<int> lost_cancels{0};
    {
      std::vector<std::jthread> threads;
      for (std::size_t t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          for (std::size_t i = 0; i < kPerThread; ++i) {
            if (!held[t * kPerThread + i].cancel()) lost_cancels.fetch_add(1);
          }
        });
      }
    }
    ASSERT_EQ(lost_cancels.load(), 0);
    held.erase(held.begin(), held.begin() + kThreads * kPerThread);
    ASSERT_EQ(timer.pending(), kLimit - kThreads * kPerThread) << "round " << round;
  }
  while (held.size() < kLimit) held.push_back(timer.schedule([] {}, 1h));
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);
  EXPECT_EQ(timer.stop().size(), kLimit);
  EXPECT_EQ(timer.pending(), 0u);
}

// Schedule-and-cancel from several threads at once, each holding at most one task. With
// max_pending equal to the number of threads there is always room for the thread that asks, so
// nothing may be Rejected; and a thread's own task counts in pending() until it cancels it.
TEST(Admission, PendingAndMaxPendingUnderConcurrentChurn) {
  constexpr std::size_t kThreads = 6;
  constexpr int kRounds = WHEELTIMER_TEST_TSAN ? 3000 : 30000;
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .max_pending = kThreads});
  std::atomic<int> rejected{0};
  std::atomic<int> own_task_unseen{0};
  std::atomic<int> above_limit{0};
  std::atomic<int> lost_cancels{0};
  {
    std::vector<std::jthread> threads;
    for (std::size_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < kRounds; ++i) {
          TimerFuture future;
          try {
            future = timer.schedule([] {}, 1h);
          } catch (const Rejected&) {
            rejected.fetch_add(1);
            continue;
          }
          const std::size_t pending = timer.pending();
          if (pending < 1) own_task_unseen.fetch_add(1);
          if (pending > kThreads) above_limit.fetch_add(1);
          if (!future.cancel()) lost_cancels.fetch_add(1);
        }
      });
    }
  }
  EXPECT_EQ(rejected.load(), 0);
  EXPECT_EQ(own_task_unseen.load(), 0);
  EXPECT_EQ(above_limit.load(), 0);
  EXPECT_EQ(lost_cancels.load(), 0);
  EXPECT_EQ(timer.pending(), 0u);
  std::vector<TimerFuture> held;
  for (std::size_t i = 0; i < kThreads; ++i) held.push_back(timer.schedule([] {}, 1h));
  EXPECT_THROW(timer.schedule([] {}, 1h), Rejected);
  EXPECT_EQ(timer.pending(), kThreads);
}

}  // namespace
}  // namespace wheeltimer
