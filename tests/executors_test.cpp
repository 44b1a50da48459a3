// Tests for the executors in executors/: InlineExecutor, CallerRunsPool and (when built with
// oneTBB) TbbArenaExecutor, alone and as the executor of a HashedWheelTimer.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <latch>
#include <limits>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <wheeltimer/config.hpp>
#if WHEELTIMER_HAS_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#endif

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

using namespace std::chrono_literals;
using wheeltimer::CallerRunsPool;
using wheeltimer::Clock;
using wheeltimer::Executor;
using wheeltimer::HashedWheelTimer;
using wheeltimer::InlineExecutor;
using wheeltimer::Task;
using wheeltimer::TaskState;
using wheeltimer::TimerFuture;
using wheeltimer::TimerOptions;
using wheeltimer::testing::kLateBound;
using wheeltimer::testing::ExecutorKind;
using wheeltimer::testing::Gate;
using wheeltimer::testing::HandOffCounter;
using wheeltimer::testing::kMustHappen;

namespace {

// Blocks whichever thread runs its task() until release() (or its own destruction, so a failed
// assertion cannot leave a worker blocked forever). The task shares the state, so the Blocker may
// go away before the worker wakes up.
class Blocker {
 public:
  Blocker() = default;
  Blocker(const Blocker&) = delete;
  Blocker& operator=(const Blocker&) = delete;
  ~Blocker() { release(); }

  Task task() {
    return [state = state_] {
      state->worker_id = std::this_thread::get_id();
      state->started.set_value();
      state->release_future.wait();
    };
  }
  bool wait_started() { return started_future_.wait_for(kMustHappen) == std::future_status::ready; }
  void release() {
    if (!released_) {
      released_ = true;
      state_->release.set_value();
    }
  }
  // Valid once wait_started() returned true.
  std::thread::id worker_id() const { return state_->worker_id; }

 private:
  struct State {
    std::promise<void> started;
    std::promise<void> release;
    std::shared_future<void> release_future = release.get_future().share();
    std::thread::id worker_id;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::future<void> started_future_ = state_->started.get_future();
  bool released_ = false;
};

// Waits for a std::future<void> with the must-happen limit.
template <class Future>
bool ready(Future& f) {
  return f.wait_for(kMustHappen) == std::future_status::ready;
}

// ---------------------------------------------------------------------------------------------
// InlineExecutor

class InlineExecutorTest : public ::testing::Test {
 protected:
  InlineExecutor executor_;
};

TEST_F(InlineExecutorTest, RunsOnCallerThreadBeforeReturning) {
  std::thread::id ran_on;
  bool ran = false;
  executor_.execute([&] {
    ran_on = std::this_thread::get_id();
    ran = true;
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST_F(InlineExecutorTest, WorksThroughExecutorInterface) {
  int calls = 0;
  Executor& base = executor_;
  base.execute([&calls] { ++calls; });
  base.execute([&calls] { ++calls; });
  EXPECT_EQ(calls, 2);
}

TEST_F(InlineExecutorTest, ExceptionReachesCaller) {
  EXPECT_THROW(executor_.execute([] { throw std::runtime_error("task failed"); }),
               std::runtime_error);
  // Still usable afterwards.
  bool ran = false;
  executor_.execute([&ran] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST_F(InlineExecutorTest, EmptyTaskIsInvalidArgument) {
  EXPECT_THROW(executor_.execute(Task{}), std::invalid_argument);
  void (*null_fn)() = nullptr;
  EXPECT_THROW(executor_.execute(null_fn), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// CallerRunsPool

class CallerRunsPoolTest : public ::testing::Test {};

TEST_F(CallerRunsPoolTest, ZeroThreadsIsInvalidArgumentNamingTheValue) {
  try {
    CallerRunsPool pool(0, 4);
    FAIL() << "CallerRunsPool(0, 4) did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find('0'), std::string::npos) << e.what();
  }
}

TEST_F(CallerRunsPoolTest, ZeroCapacityIsInvalidArgumentNamingTheValue) {
  try {
    CallerRunsPool pool(2, 0);
    FAIL() << "CallerRunsPool(2, 0) did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find('0'), std::string::npos) << e.what();
  }
}

TEST_F(CallerRunsPoolTest, MoreThreadsThanAnyMachineRunsIsInvalidArgumentNamingTheValue) {
  for (const std::size_t threads : {std::size_t{65'537}, std::numeric_limits<std::size_t>::max()}) {
    try {
      CallerRunsPool pool(threads, 4);
      FAIL() << "CallerRunsPool(" << threads << ", 4) did not throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(threads)), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CallerRunsPoolTest, ReportsItsSize) {
  CallerRunsPool pool(3, 7);
  EXPECT_EQ(pool.thread_count(), 3u);
  EXPECT_EQ(pool.queue_capacity(), 7u);
}

TEST_F(CallerRunsPoolTest, RunsOnAPoolThread) {
  CallerRunsPool pool(2, 8);
  std::promise<std::thread::id> ran_on;
  auto result = ran_on.get_future();
  pool.execute([&ran_on] { ran_on.set_value(std::this_thread::get_id()); });
  ASSERT_TRUE(ready(result));
  EXPECT_NE(result.get(), std::this_thread::get_id());
}

TEST_F(CallerRunsPoolTest, OneThreadRunsInFifoOrder) {
  constexpr int kTasks = 100;
  std::vector<int> order;  // touched only by the single worker until `done` is reached
  std::latch done(kTasks);
  {
    CallerRunsPool pool(1, kTasks);  // room for everything: no caller-runs
    for (int i = 0; i < kTasks; ++i) {
      pool.execute([i, &order, &done] {
        order.push_back(i);
        done.count_down();
      });
    }
    done.wait();
  }
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(order[i], i);
}

TEST_F(CallerRunsPoolTest, FullQueueRunsWorkOnCaller) {
  CallerRunsPool pool(1, 2);
  Blocker blocker;
  pool.execute(blocker.task());
  ASSERT_TRUE(blocker.wait_started());  // the worker has taken it: the queue is empty

  std::promise<std::thread::id> first;
  std::promise<std::thread::id> second;
  auto first_ran = first.get_future();
  auto second_ran = second.get_future();
  pool.execute([&first] { first.set_value(std::this_thread::get_id()); });
  pool.execute([&second] { second.set_value(std::this_thread::get_id()); });  // queue now full

  std::thread::id overflow_ran_on;
  bool overflow_ran = false;
  pool.execute([&] {
    overflow_ran_on = std::this_thread::get_id();
    overflow_ran = true;
  });
  // Caller-runs: done before execute() returned, on this thread, while the worker is still blocked.
  EXPECT_TRUE(overflow_ran);
  EXPECT_EQ(overflow_ran_on, std::this_thread::get_id());
  EXPECT_EQ(first_ran.wait_for(0s), std::future_status::timeout);

  blocker.release();
  ASSERT_TRUE(ready(first_ran));
  ASSERT_TRUE(ready(second_ran));
  EXPECT_EQ(first_ran.get(), blocker.worker_id());
  EXPECT_EQ(second_ran.get(), blocker.worker_id());
}

TEST_F(CallerRunsPoolTest, ThrowingTaskDoesNotKillWorker) {
  CallerRunsPool pool(1, 8);
  std::promise<std::thread::id> thrower_thread;
  auto thrower_id = thrower_thread.get_future();
  pool.execute([&thrower_thread] {
    thrower_thread.set_value(std::this_thread::get_id());
    throw std::runtime_error("task failed");
  });
  pool.execute([] { throw 42; });  // not even a std::exception
  std::promise<std::thread::id> later;
  auto later_id = later.get_future();
  pool.execute([&later] { later.set_value(std::this_thread::get_id()); });
  ASSERT_TRUE(ready(later_id));
  ASSERT_TRUE(ready(thrower_id));
  EXPECT_EQ(later_id.get(), thrower_id.get());  // the same, single worker survived
}

// A first task that holds `executor`'s only worker until the gate returned opens.
std::shared_ptr<Gate> hold_the_worker(Executor& executor) {
  auto gate = std::make_shared<Gate>();
  executor.execute([gate] { gate->wait(); });
  return gate;
}

// Opens `gate` once the calling thread sleeps in the kernel, which it next does in an executor's
// destructor at the end of its scope: so the destructor starts while the queued work still waits.
// Join the returned thread after that scope.
std::thread open_when_the_caller_sleeps(std::shared_ptr<Gate> gate) {
  return std::thread([gate, caller = gettid()] {
    const auto give_up = Clock::now() + kMustHappen;
    while (!wheeltimer::testing::thread_sleeps(caller) && Clock::now() < give_up) {
      std::this_thread::yield();
    }
    gate->open();
  });
}

TEST_F(CallerRunsPoolTest, DestructorRunsAllQueuedWork) {
  constexpr int kTasks = 50;
  std::atomic<int> completed{0};
  std::thread opener;
  {
    CallerRunsPool pool(1, kTasks + 1);
    auto held = hold_the_worker(pool);
    for (int i = 0; i < kTasks; ++i) pool.execute([&completed] { completed.fetch_add(1); });
    opener = open_when_the_caller_sleeps(held);
  }
  opener.join();
  EXPECT_EQ(completed.load(), kTasks);
}

TEST_F(CallerRunsPoolTest, EmptyTaskIsInvalidArgument) {
  CallerRunsPool pool(1, 1);
  EXPECT_THROW(pool.execute(Task{}), std::invalid_argument);
  std::function<void()> empty;
  EXPECT_THROW(pool.execute(empty), std::invalid_argument);
}

TEST_F(CallerRunsPoolTest, WorkMayExecuteMoreWorkOnThePool) {
  CallerRunsPool pool(1, 4);
  std::promise<void> inner_done;
  auto inner = inner_done.get_future();
  pool.execute([&pool, &inner_done] { pool.execute([&inner_done] { inner_done.set_value(); }); });
  EXPECT_TRUE(ready(inner));
}

TEST_F(CallerRunsPoolTest, ConcurrentCallersEveryTaskRunsOnce) {
  constexpr int kCallers = 4;
  constexpr int kPerCaller = 1000;
  std::vector<std::atomic<int>> runs(kCallers * kPerCaller);
  {
    CallerRunsPool pool(2, 8);  // small queue: plenty of caller-runs
    std::vector<std::jthread> callers;
    for (int c = 0; c < kCallers; ++c) {
      callers.emplace_back([&pool, &runs, c] {
        for (int i = 0; i < kPerCaller; ++i) {
          pool.execute([&runs, slot = c * kPerCaller + i] { runs[slot].fetch_add(1); });
        }
      });
    }
  }  // callers join first, then the pool drains its queue
  int wrong = 0;
  for (auto& r : runs) wrong += r.load() != 1;
  EXPECT_EQ(wrong, 0);
}

// ---------------------------------------------------------------------------------------------
// TbbArenaExecutor

#if WHEELTIMER_HAS_TBB
using wheeltimer::TbbArenaExecutor;

class TbbArenaExecutorTest : public ::testing::Test {};

TEST_F(TbbArenaExecutorTest, RunsOffTheCallerThread) {
  TbbArenaExecutor executor;
  std::promise<std::thread::id> ran_on;
  auto result = ran_on.get_future();
  executor.execute([&ran_on] { ran_on.set_value(std::this_thread::get_id()); });
  ASSERT_TRUE(ready(result));
  EXPECT_NE(result.get(), std::this_thread::get_id());
}

TEST_F(TbbArenaExecutorTest, ConcurrencyOneRunsEverythingOnOneWorker) {
  constexpr int kTasks = 50;
  std::mutex mutex;
  std::vector<std::thread::id> ids;
  std::latch done(kTasks);
  TbbArenaExecutor executor(1);
  EXPECT_EQ(executor.max_concurrency(), 1);
  for (int i = 0; i < kTasks; ++i) {
    executor.execute([&] {
      {
        std::lock_guard lock(mutex);
        ids.push_back(std::this_thread::get_id());
      }
      done.count_down();
    });
  }
  done.wait();
  std::lock_guard lock(mutex);
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kTasks));
  const std::set<std::thread::id> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), 1u);
  EXPECT_EQ(distinct.count(std::this_thread::get_id()), 0u);
}

TEST_F(TbbArenaExecutorTest, NonPositiveConcurrencyOtherThanAutomaticIsInvalidArgument) {
  EXPECT_THROW(TbbArenaExecutor(0), std::invalid_argument);
  EXPECT_THROW(TbbArenaExecutor(-5), std::invalid_argument);
  EXPECT_THROW(TbbArenaExecutor(-2), std::invalid_argument);
  static_assert(tbb::task_arena::automatic == -1);
  EXPECT_NO_THROW(TbbArenaExecutor{tbb::task_arena::automatic});  // braces: not a declaration
  EXPECT_NO_THROW(TbbArenaExecutor());
  EXPECT_NO_THROW(TbbArenaExecutor(2));
}

// API.md accepts any positive value. oneTBB itself crashes at the first task of an arena of 2^28
// or more, so values over 65,536 are taken as 65,536, and such an arena runs its work (oneTBB
// warns on stderr that it ignores the request for that many workers). Values up to the limit are
// kept as they are.
TEST_F(TbbArenaExecutorTest, ConcurrencyAboveTheLimitIsLoweredToIt) {
  for (const int concurrency : {65'537, 1 << 28, std::numeric_limits<int>::max()}) {
    EXPECT_EQ(TbbArenaExecutor(concurrency).max_concurrency(), 65'536) << concurrency;
  }
  for (const int concurrency : {1, 2, 65'535, 65'536}) {
    EXPECT_EQ(TbbArenaExecutor(concurrency).max_concurrency(), concurrency);
  }
  std::promise<void> ran;  // before the executor, whose destructor may still run the task
  std::future<void> done = ran.get_future();
  TbbArenaExecutor executor(std::numeric_limits<int>::max());
  executor.execute([&ran] { ran.set_value(); });
  EXPECT_EQ(done.wait_for(kMustHappen), std::future_status::ready);
}

// The destructor on a thread of the program's own (not in a oneTBB task) waits: the work runs on
// the arena's worker, never on the destroying thread.
TEST_F(TbbArenaExecutorTest, DestructorWaitsForQueuedWork) {
  constexpr int kTasks = 100;
  std::atomic<int> completed{0};
  std::atomic<int> on_the_destroying_thread{0};
  const auto destroying_thread = std::this_thread::get_id();
  std::thread opener;
  {
    TbbArenaExecutor executor(1);
    auto held = hold_the_worker(executor);
    for (int i = 0; i < kTasks; ++i) {
      executor.execute([&] {
        if (std::this_thread::get_id() == destroying_thread) on_the_destroying_thread.fetch_add(1);
        completed.fetch_add(1);
      });
    }
    opener = open_when_the_caller_sleeps(held);
  }
  opener.join();
  EXPECT_EQ(completed.load(), kTasks);
  EXPECT_EQ(on_the_destroying_thread.load(), 0);
}

// In a child process with one oneTBB worker: a job on that worker destroys a TbbArenaExecutor
// with work queued, which no other worker can run. Exits 0 once the destructor returned with all
// of it run; a destructor that only waited would hang until the alarm kills the child.
[[noreturn]] void destroy_an_arena_executor_in_a_onetbb_job() {
  alarm(static_cast<unsigned>(kMustHappen.count()));
  const tbb::global_control one_worker(tbb::global_control::max_allowed_parallelism, 2);
  constexpr int kTasks = 10;
  std::atomic<int> completed{0};
  Gate destroyed;
  tbb::task_arena program_arena(1, 0);
  program_arena.enqueue([&] {
    {
      TbbArenaExecutor executor(1);
      for (int i = 0; i < kTasks; ++i) executor.execute([&completed] { completed.fetch_add(1); });
    }
    destroyed.open();
  });
  if (!destroyed.wait()) _exit(2);
  _exit(completed.load() == kTasks ? 0 : 3);
}

TEST_F(TbbArenaExecutorTest, DestroyedInAOneTbbJobRunsItsQueuedWorkInsteadOfWaitingForAWorker) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(destroy_an_arena_executor_in_a_onetbb_job(), ::testing::ExitedWithCode(0), "");
}

TEST_F(TbbArenaExecutorTest, ThrowingTaskIsSwallowed) {
  std::atomic<int> completed{0};
  {
    TbbArenaExecutor executor(1);
    executor.execute([] { throw std::runtime_error("task failed"); });
    executor.execute([] { throw 42; });
    std::promise<void> later;
    auto later_done = later.get_future();
    executor.execute([&later] { later.set_value(); });
    EXPECT_TRUE(ready(later_done));
    executor.execute([&completed] { completed.fetch_add(1); });
  }
  EXPECT_EQ(completed.load(), 1);
}

TEST_F(TbbArenaExecutorTest, EmptyTaskIsInvalidArgument) {
  TbbArenaExecutor executor(1);
  EXPECT_THROW(executor.execute(Task{}), std::invalid_argument);
}
#endif  // WHEELTIMER_HAS_TBB

// ---------------------------------------------------------------------------------------------
// Each executor driving a HashedWheelTimer.

class TimerWithExecutorTest : public ::testing::TestWithParam<ExecutorKind> {};

TEST_P(TimerWithExecutorTest, TasksRunOnceNeverEarlyAndFinish) {
  constexpr int kTasks = 40;
  struct Run {
    std::atomic<int> count{0};
    std::atomic<Clock::rep> started{0};
  };
  std::vector<Run> runs(kTasks);
  std::vector<TimerFuture> futures;
  HashedWheelTimer timer(TimerOptions{.executor = GetParam().make()});
  for (int i = 0; i < kTasks; ++i) {
    futures.push_back(timer.schedule(
        [&run = runs[i]] {
          run.started.store(Clock::now().time_since_epoch().count());
          run.count.fetch_add(1);
        },
        std::chrono::milliseconds(i % 10)));
  }
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(futures[i].wait_for(kMustHappen)) << "task " << i;
    EXPECT_EQ(futures[i].state(), TaskState::finished);
    EXPECT_TRUE(futures[i].is_done());
    EXPECT_EQ(futures[i].exception(), nullptr);
    EXPECT_EQ(runs[i].count.load(), 1);
    const Clock::time_point started{Clock::duration(runs[i].started.load())};
    EXPECT_GE(started, futures[i].deadline()) << "task " << i << " ran early";
    EXPECT_LE(started, futures[i].deadline() + kLateBound);
  }
  EXPECT_EQ(timer.pending(), 0u);
  EXPECT_TRUE(timer.stop().empty());
}

TEST_P(TimerWithExecutorTest, ThrowingTaskFinishesWithExceptionAndLaterTasksRun) {
  HashedWheelTimer timer(TimerOptions{.executor = GetParam().make()});
  auto failing = timer.schedule([] { throw std::runtime_error("task failed"); }, 0ms);
  ASSERT_TRUE(failing.wait_for(kMustHappen));
  EXPECT_EQ(failing.state(), TaskState::finished);
  ASSERT_NE(failing.exception(), nullptr);
  EXPECT_THROW(std::rethrow_exception(failing.exception()), std::runtime_error);

  std::atomic<bool> ran{false};
  auto later = timer.schedule([&ran] { ran = true; }, 1ms);
  ASSERT_TRUE(later.wait_for(kMustHappen));
  EXPECT_TRUE(later.is_done());
  EXPECT_TRUE(ran.load());
}

TEST_P(TimerWithExecutorTest, ExecutorSharedByTwoTimers) {
  auto executor = GetParam().make();
  HashedWheelTimer first(TimerOptions{.executor = executor});
  HashedWheelTimer second(TimerOptions{.executor = executor});
  std::atomic<int> runs{0};
  auto a = first.schedule([&runs] { runs.fetch_add(1); }, 2ms);
  auto b = second.schedule([&runs] { runs.fetch_add(1); }, 2ms);
  ASSERT_TRUE(a.wait_for(kMustHappen));
  ASSERT_TRUE(b.wait_for(kMustHappen));
  EXPECT_TRUE(a.is_done());
  EXPECT_TRUE(b.is_done());
  EXPECT_EQ(runs.load(), 2);
}

// Counts what tasks threw: how many were thrown, and how many are still alive. A finished task's
// node holds what it threw until the node is freed, so this shows when nodes are freed.
class ThrownTracker {
 public:
  struct Thrown {
    explicit Thrown(ThrownTracker* owner) : tracker(owner) { tracker->change(1, 1); }
    Thrown(const Thrown& other) : tracker(other.tracker) { tracker->change(0, 1); }
    Thrown& operator=(const Thrown&) = delete;
    ~Thrown() { tracker->change(0, -1); }
    ThrownTracker* tracker;
  };

  int alive() {
    std::lock_guard lock(mutex_);
    return alive_;
  }
  // Waits until `thrown` were thrown and none of them is alive any more.
  bool wait_all_freed(int thrown) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kMustHappen,
                             [&] { return thrown_ == thrown && alive_ == 0; });
  }

 private:
  void change(int thrown, int alive) {
    std::lock_guard lock(mutex_);
    thrown_ += thrown;
    alive_ += alive;
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  int thrown_ = 0;
  int alive_ = 0;
};

TEST_P(TimerWithExecutorTest, WhatATaskThrewLivesUntilItsLastHandleIsGone) {
  constexpr int kDropped = 20;
  ThrownTracker tracker;  // outlives the timer
  std::promise<void> all_thrown;
  std::atomic<int> throws{0};
  const auto throwing = [&tracker, &throws, &all_thrown] {
    if (throws.fetch_add(1) + 1 == kDropped + 1) all_thrown.set_value();
    throw ThrownTracker::Thrown(&tracker);
  };
  {
    HashedWheelTimer timer(TimerOptions{.executor = GetParam().make()});
    TimerFuture held = timer.schedule(throwing, 0ms);
    ASSERT_TRUE(held.wait_for(kMustHappen));
    ASSERT_NE(held.exception(), nullptr);
    EXPECT_EQ(tracker.alive(), 1) << "freed while its future still holds it";
    // Handles dropped at once: the timer's own references are then the last. It drops them once
    // each task is over (with no executor) or later (an executor's tasks stay on the list stop()
    // needs until it prunes the list), and at the latest when it is destroyed.
    for (int i = 0; i < kDropped; ++i) timer.schedule(throwing, std::chrono::milliseconds(i % 3));
    ASSERT_EQ(all_thrown.get_future().wait_for(kMustHappen), std::future_status::ready);
  }
  EXPECT_TRUE(tracker.wait_all_freed(kDropped + 1)) << tracker.alive() << " never freed";
}

INSTANTIATE_TEST_SUITE_P(Executors, TimerWithExecutorTest,
                         ::testing::ValuesIn(wheeltimer::testing::executor_kinds(16)),
                         [](const ::testing::TestParamInfo<ExecutorKind>& info) {
                           return info.param.name;
                         });

TEST(TimerWithInlineExecutorTest, TasksRunOnTheIndicatorThread) {
  HashedWheelTimer timer(TimerOptions{.executor = std::make_shared<InlineExecutor>()});
  std::mutex mutex;
  std::set<std::thread::id> ids;
  std::vector<TimerFuture> futures;
  for (int i = 0; i < 10; ++i) {
    futures.push_back(timer.schedule(
        [&] {
          std::lock_guard lock(mutex);
          ids.insert(std::this_thread::get_id());
        },
        std::chrono::milliseconds(i)));
  }
  for (auto& f : futures) ASSERT_TRUE(f.wait_for(kMustHappen));
  std::lock_guard lock(mutex);
  EXPECT_EQ(ids.size(), 1u);  // the one indicator thread
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 0u);
}

struct QueueingExecutorKind {
  std::string name;
  // An executor with exactly one worker thread, so one blocked task holds everything behind it.
  std::function<std::shared_ptr<Executor>()> make_single_worker;
  friend void PrintTo(const QueueingExecutorKind& kind, std::ostream* os) { *os << kind.name; }
};

std::vector<QueueingExecutorKind> queueing_executor_kinds() {
  std::vector<QueueingExecutorKind> kinds;
  kinds.push_back({"CallerRunsPool", [] { return std::make_shared<CallerRunsPool>(1, 16); }});
#if WHEELTIMER_HAS_TBB
  kinds.push_back({"TbbArena", [] { return std::make_shared<wheeltimer::TbbArenaExecutor>(1); }});
#endif
  return kinds;
}

class QueuedInExecutorTest : public ::testing::TestWithParam<QueueingExecutorKind> {
 protected:
  void SetUp() override {
    inner_ = GetParam().make_single_worker();
    counter_ = std::make_shared<HandOffCounter>(inner_);
    timer_ = std::make_unique<HashedWheelTimer>(TimerOptions{.executor = counter_});
    // Occupy the only worker directly (not through the timer, so stop() does not wait for it).
    inner_->execute(blocker_.task());
    ASSERT_TRUE(blocker_.wait_started());
  }
  void TearDown() override {
    blocker_.release();
    timer_.reset();
    counter_.reset();
    inner_.reset();  // the last reference: the destructor drains the queue
  }

  // Schedules a due-now task and returns once the timer has handed it to the blocked executor.
  TimerFuture schedule_queued(std::atomic<int>& runs, std::shared_ptr<int> capture) {
    const std::size_t before = counter_->handed();
    auto future = timer_->schedule([&runs, c = std::move(capture)] { runs.fetch_add(1); }, 0ms);
    EXPECT_TRUE(counter_->wait_handed(before + 1));
    return future;
  }

  Blocker blocker_;
  std::shared_ptr<Executor> inner_;
  std::shared_ptr<HandOffCounter> counter_;
  std::unique_ptr<HashedWheelTimer> timer_;
};

TEST_P(QueuedInExecutorTest, QueuedTaskIsWaitingAndCancelableThenNeverRuns) {
  std::atomic<int> runs{0};
  auto capture = std::make_shared<int>(0);
  std::weak_ptr<int> capture_alive = capture;
  TimerFuture queued = schedule_queued(runs, std::move(capture));

  EXPECT_EQ(queued.state(), TaskState::waiting);  // handed over, not started
  EXPECT_EQ(timer_->pending(), 1u);
  EXPECT_TRUE(queued.cancel());
  EXPECT_EQ(queued.state(), TaskState::canceled);
  // By the cancel() itself, while the wrapper still waits behind the blocked worker.
  EXPECT_TRUE(capture_alive.expired()) << "a canceled task's captures outlived its cancel()";
  EXPECT_EQ(timer_->pending(), 0u);  // cancel() lowers pending() before returning
  EXPECT_FALSE(queued.cancel());     // only the one call that made the change

  // Let the worker go and drain the executor: the canceled task's wrapper runs as a no-op.
  blocker_.release();
  EXPECT_TRUE(timer_->stop().empty());
  timer_.reset();
  counter_.reset();
  inner_.reset();
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(queued.state(), TaskState::canceled);
  EXPECT_TRUE(capture_alive.expired());  // captures are not kept alive by the future
}

TEST_P(QueuedInExecutorTest, StopHandsBackTaskQueuedInExecutor) {
  std::atomic<int> runs{0};
  TimerFuture queued = schedule_queued(runs, nullptr);

  // The worker is still blocked: stop() must not wait for it (it is not one of the timer's tasks).
  std::vector<wheeltimer::PendingTask> handed_back = timer_->stop();
  ASSERT_EQ(handed_back.size(), 1u);
  EXPECT_TRUE(handed_back[0].future() == queued);
  EXPECT_EQ(queued.state(), TaskState::waiting);
  EXPECT_EQ(timer_->pending(), 0u);

  // Drain the executor: the handed-back task's wrapper must be a no-op.
  blocker_.release();
  timer_.reset();
  counter_.reset();
  inner_.reset();
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(queued.state(), TaskState::waiting);

  // Whoever holds the PendingTask may still run it, exactly once.
  handed_back[0].run();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(queued.state(), TaskState::finished);
}

INSTANTIATE_TEST_SUITE_P(Executors, QueuedInExecutorTest,
                         ::testing::ValuesIn(queueing_executor_kinds()),
                         [](const ::testing::TestParamInfo<QueueingExecutorKind>& info) {
                           return info.param.name;
                         });

// A CallerRunsPool with one worker, held busy by `blocker` until released, behind a HandOffCounter.
// The blocker is the last member, so it is released before the pool joins its worker.
struct BlockedSingleWorkerPool {
  explicit BlockedSingleWorkerPool(std::size_t queue_capacity)
      : pool(std::make_shared<CallerRunsPool>(1, queue_capacity)),
        counter(std::make_shared<HandOffCounter>(pool)) {
    pool->execute(blocker.task());
  }

  std::shared_ptr<CallerRunsPool> pool;
  std::shared_ptr<HandOffCounter> counter;
  Blocker blocker;
};

TEST(TimerWithCallerRunsPoolTest, FullQueueMakesIndicatorRunTheTask) {
  BlockedSingleWorkerPool blocked(1);
  const std::shared_ptr<HandOffCounter>& counter = blocked.counter;
  Blocker& blocker = blocked.blocker;
  ASSERT_TRUE(blocker.wait_started());
  {
    HashedWheelTimer timer(TimerOptions{.executor = counter});
    std::atomic<int> queued_runs{0};
    auto queued = timer.schedule([&queued_runs] { queued_runs.fetch_add(1); }, 0ms);
    ASSERT_TRUE(counter->wait_handed(1));  // now the pool's queue (capacity 1) is full

    std::promise<std::thread::id> overflow_thread;
    auto overflow_id = overflow_thread.get_future();
    auto overflow = timer.schedule(
        [&overflow_thread] { overflow_thread.set_value(std::this_thread::get_id()); }, 0ms);
    // Runs although the only worker is blocked: the indicator ran it itself.
    ASSERT_TRUE(overflow.wait_for(kMustHappen));
    EXPECT_TRUE(overflow.is_done());
    ASSERT_TRUE(ready(overflow_id));
    const std::thread::id ran_on = overflow_id.get();
    EXPECT_NE(ran_on, blocker.worker_id());
    EXPECT_NE(ran_on, std::this_thread::get_id());
    EXPECT_EQ(queued.state(), TaskState::waiting);

    blocker.release();
    ASSERT_TRUE(queued.wait_for(kMustHappen));
    EXPECT_TRUE(queued.is_done());
    EXPECT_EQ(queued_runs.load(), 1);
  }
}

// A wrapper that a stopped timer left in a shared executor never starts the task once another
// timer has adopted it: only the adopter's own wrapper does, and the run settles on the adopter.
// On CallerRunsPool, whose queue is first-in-first-out, so the stale wrapper surely runs first
// (an arena's queue is not).
TEST(TimerWithCallerRunsPoolTest, StaleWrapperNeverStartsATaskAnotherTimerAdopted) {
  BlockedSingleWorkerPool blocked(16);
  const std::shared_ptr<HandOffCounter>& counter = blocked.counter;
  Blocker& blocker = blocked.blocker;
  ASSERT_TRUE(blocker.wait_started());
  HashedWheelTimer stopped(TimerOptions{.executor = counter});
  std::atomic<int> runs{0};
  TimerFuture queued = stopped.schedule([&runs] { runs.fetch_add(1); }, 0ms);
  ASSERT_TRUE(counter->wait_handed(1));
  std::vector<wheeltimer::PendingTask> handed_back = stopped.stop();  // its wrapper stays queued
  ASSERT_EQ(handed_back.size(), 1u);

  auto adopter = std::make_unique<HashedWheelTimer>(TimerOptions{.executor = counter});
  EXPECT_TRUE(adopter->adopt(std::move(handed_back[0])) == queued);
  ASSERT_TRUE(counter->wait_handed(2));  // due already: queued behind the stale wrapper
  EXPECT_EQ(adopter->pending(), 1u);

  blocker.release();
  ASSERT_TRUE(queued.wait_for(kMustHappen));
  EXPECT_EQ(queued.state(), TaskState::finished);
  EXPECT_EQ(runs.load(), 1);
  // A stale start settles the task on the stopped timer and leaves it pending on the adopter for
  // good, so the adopter's stop() would wait forever: it is leaked instead.
  EXPECT_EQ(adopter->pending(), 0u) << "the stale wrapper started the adopted task";
  if (adopter->pending() != 0) static_cast<void>(adopter.release());
  EXPECT_EQ(stopped.pending(), 0u);
}

}  // namespace
