// HashedWheelTimer::stop(), PendingTask and adopt(): handing unrun tasks back and moving them to
// another timer without losing or duplicating any.
//
// "stop() has begun" is not an event one can wait on, so where a test needs it, it polls the one
// thing the contract ties to it: schedule() starts throwing Stopped. Everything else waits on a
// Gate or a future, bounded by kMustHappen.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <exception>
#include <future>
#include <latch>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

namespace wheeltimer {
namespace {

using namespace std::chrono_literals;
using testing::kLateBound;
using testing::FutureSlot;
using testing::Gate;
using testing::HeldPool;
using testing::SleepingWaiter;
using testing::what_stop_did;
using testing::kMustHappen;

// A capture whose destruction is recorded (moved-from shells record nothing).
class DestroyFlag {
 public:
  explicit DestroyFlag(std::shared_ptr<std::atomic<bool>> flag) : flag_(std::move(flag)) {}
  DestroyFlag(DestroyFlag&& other) noexcept : flag_(std::move(other.flag_)) {}
  DestroyFlag(const DestroyFlag&) = delete;
  DestroyFlag& operator=(const DestroyFlag&) = delete;
  DestroyFlag& operator=(DestroyFlag&&) = delete;
  ~DestroyFlag() {
    if (flag_) flag_->store(true);
  }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

// Polls until schedule() throws Stopped, i.e. stop() has begun on another thread. Each schedule
// that still succeeds adds a far task; the count of those is returned through `accepted`.
bool wait_until_stopping(HashedWheelTimer& timer, std::size_t& accepted) {
  const auto limit = Clock::now() + kMustHappen;
  while (Clock::now() < limit) {
    try {
      timer.schedule([] {}, 1h);
      ++accepted;
    } catch (const Stopped&) {
      return true;
    }
    std::this_thread::yield();
  }
  return false;
}

// A running task, parked on a gate, on `timer`; `started` is open once it runs.
struct ParkedTask {
  std::shared_ptr<Gate> started = std::make_shared<Gate>();
  std::shared_ptr<Gate> release = std::make_shared<Gate>();
  std::shared_ptr<std::atomic<bool>> body_done = std::make_shared<std::atomic<bool>>(false);
  TimerFuture future;

  void schedule_on(HashedWheelTimer& timer) {
    future = timer.schedule(
        [started = started, release = release, body_done = body_done] {
          started->open();
          release->wait();
          body_done->store(true);
        },
        0ms);
  }
};

class StopAdoptTest : public ::testing::Test {
 protected:
  static TimerOptions fast_options() { return TimerOptions{.tick = 1ms}; }
};

// ---------------------------------------------------------------------------------------------
// stop()

TEST_F(StopAdoptTest, StopIsIdempotent) {
  HashedWheelTimer timer(fast_options());
  TimerFuture far = timer.schedule([] {}, 1h);
  std::vector<PendingTask> first = timer.stop();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].future(), far);
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_EQ(far.state(), TaskState::waiting);  // still held by `first`
}

TEST_F(StopAdoptTest, StopWithNothingScheduledReturnsEmpty) {
  HashedWheelTimer timer(fast_options());
  EXPECT_TRUE(timer.stop().empty());
  EXPECT_TRUE(timer.stop().empty());
}

// Several threads call stop() while a task is RUNNING: every one of them returns only once the
// timer has fully stopped (the running task returned), and exactly one gets the unrun tasks.
TEST_F(StopAdoptTest, ConcurrentStopCallersAllWaitAndOneGetsTheTasks) {
  HashedWheelTimer timer(fast_options());
  ParkedTask running;
  running.schedule_on(timer);
  ASSERT_TRUE(running.started->wait());
  constexpr std::size_t kFar = 5;
  for (std::size_t i = 0; i < kFar; ++i) timer.schedule([] {}, 1h + std::chrono::seconds(i));

  constexpr int kCallers = 4;
  std::latch go(kCallers);
  std::vector<std::size_t> sizes(kCallers);
  std::vector<int> running_state_at_return(kCallers, -1);
  std::vector<std::atomic<pid_t>> tids(kCallers);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      go.arrive_and_wait();
      tids[static_cast<std::size_t>(i)].store(gettid());
      std::vector<PendingTask> handed = timer.stop();
      running_state_at_return[i] = static_cast<int>(running.future.state());
      sizes[i] = handed.size();
    });
  }
  std::size_t extra = 0;
  ASSERT_TRUE(wait_until_stopping(timer, extra));
  // Until every caller sleeps in the kernel past the latch: blocked inside stop(), so each of them
  // must wait for the running task rather than come late to a stopped timer. (A caller that
  // returns at once never sleeps: the bound ends the wait, and the checks below fail.)
  const auto give_up = Clock::now() + kMustHappen;
  for (const auto& tid : tids) {
    while ((tid.load() == 0 || !testing::thread_sleeps(tid.load())) && Clock::now() < give_up) {
      std::this_thread::yield();
    }
  }
  running.release->open();
  for (auto& t : callers) t.join();

  EXPECT_TRUE(running.body_done->load());
  int with_tasks = 0;
  for (int i = 0; i < kCallers; ++i) {
    EXPECT_EQ(running_state_at_return[i], static_cast<int>(TaskState::finished))
        << "caller " << i << " returned before the running task did";
    if (sizes[i] != 0) {
      ++with_tasks;
      EXPECT_EQ(sizes[i], kFar + extra);
    }
  }
  EXPECT_EQ(with_tasks, 1);
  EXPECT_TRUE(timer.stop().empty());
}

TEST_F(StopAdoptTest, StopNeverWaitsOutATick) {
  HashedWheelTimer timer(TimerOptions{.tick = 1h});
  TimerFuture far = timer.schedule([] {}, 2h);
  TimerFuture within = timer.schedule([] {}, 30min);  // inside the hour-long first tick
  const auto begin = Clock::now();
  std::vector<PendingTask> handed = timer.stop();
  EXPECT_LT(Clock::now() - begin, kLateBound) << "stop() waited for the hour-long tick";
  ASSERT_EQ(handed.size(), 2u);
  EXPECT_EQ(handed[0].future(), within);
  EXPECT_EQ(handed[1].future(), far);
}

// Tasks that reached the wheel and tasks still in the inbound queue all come back, ordered by
// deadline, each with its original deadline and the very future its scheduler got, still WAITING.
TEST_F(StopAdoptTest, StopHandsBackEveryUnstartedTaskOrderedByDeadline) {
  HashedWheelTimer timer(fast_options());
  const auto base = Clock::now() + 1h;
  // Deliberately out of order, with equal, odd and saturated deadlines.
  const std::vector<Clock::time_point> early_deadlines = {
      base + 5s, base + 1s, base + 3s + 7ns, base + 1s, Clock::time_point::max(), base};
  const std::vector<Clock::time_point> late_deadlines = {base + 4s, base - 30min, base + 2s + 1ns,
                                                         base + 100h};
  std::vector<TimerFuture> futures;
  for (auto d : early_deadlines) futures.push_back(timer.schedule_at([] {}, d));
  // The indicator moves one producer's tasks in order: once a due-now probe scheduled after
  // them has run, these are in the wheel.
  ASSERT_TRUE(timer.schedule([] {}, 0ms).wait_for(kMustHappen));
  for (auto d : late_deadlines) futures.push_back(timer.schedule_at([] {}, d));  // inbound queue
  futures.push_back(timer.schedule([] {}, std::chrono::hours::max()));
  ASSERT_EQ(timer.pending(), futures.size());

  std::vector<PendingTask> handed = timer.stop();
  EXPECT_EQ(timer.pending(), 0u);
  ASSERT_EQ(handed.size(), futures.size());
  for (std::size_t i = 1; i < handed.size(); ++i) {
    EXPECT_LE(handed[i - 1].deadline(), handed[i].deadline()) << "not ordered at " << i;
  }
  std::vector<bool> matched(futures.size(), false);
  for (auto& task : handed) {
    TimerFuture future = task.future();
    auto it = std::find(futures.begin(), futures.end(), future);
    ASSERT_NE(it, futures.end()) << "handed back a future nobody scheduled";
    const auto index = static_cast<std::size_t>(it - futures.begin());
    EXPECT_FALSE(matched[index]) << "handed back twice";
    matched[index] = true;
    EXPECT_EQ(task.deadline(), it->deadline());
    EXPECT_EQ(future.state(), TaskState::waiting);
  }
  // Dropping them cancels them.
  handed.clear();
  for (auto& f : futures) EXPECT_EQ(f.state(), TaskState::canceled);
}

// Tasks handed to a busy CallerRunsPool and still queued there are handed back too, and the
// pool's later run of them is a no-op. The pool has one worker (blocked by work that is not a
// timer task, so stop() does not wait for it) and room for 3: of 4 due tasks, 3 queue up and the
// 4th finds the queue full and runs on the indicator. Once that one has run, the other 3 are
// certainly sitting in the pool's queue.
TEST_F(StopAdoptTest, TasksQueuedInBusyPoolAreHandedBackAndNeverRun) {
  auto pool = std::make_shared<CallerRunsPool>(1, 3);
  auto worker_busy = std::make_shared<Gate>();
  auto release_worker = std::make_shared<Gate>();
  pool->execute([worker_busy, release_worker] {
    worker_busy->open();
    release_worker->wait();
  });
  ASSERT_TRUE(worker_busy->wait());

  auto runs = std::make_shared<std::atomic<int>>(0);
  auto first_run = std::make_shared<std::promise<int>>();
  auto timer = std::make_unique<HashedWheelTimer>(TimerOptions{.tick = 1ms, .executor = pool});
  std::vector<TimerFuture> futures;
  for (int i = 0; i < 4; ++i) {
    futures.push_back(timer->schedule(
        [i, runs, first_run] {
          if (runs->fetch_add(1) == 0) first_run->set_value(i);
        },
        0ms));
  }
  std::future<int> ran_index = first_run->get_future();
  ASSERT_EQ(ran_index.wait_for(kMustHappen), std::future_status::ready);
  const int caller_ran = ran_index.get();
  ASSERT_TRUE(futures[caller_ran].wait_for(kMustHappen));

  std::vector<PendingTask> handed = timer->stop();
  EXPECT_EQ(handed.size(), 3u);
  for (auto& task : handed) {
    EXPECT_NE(task.future(), futures[caller_ran]);
    EXPECT_EQ(task.future().state(), TaskState::waiting);
  }
  // Let the worker drain its queue, then retire timer and pool: the pool's destructor finishes
  // every queued item, so after this the handed-back tasks had every chance to run wrongly.
  release_worker->open();
  timer.reset();
  pool.reset();
  EXPECT_EQ(runs->load(), 1) << "a handed-back task ran on the pool";
  for (auto& task : handed) EXPECT_EQ(task.future().state(), TaskState::waiting);
  handed.clear();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(futures[i].state(), i == caller_ran ? TaskState::finished : TaskState::canceled);
  }
}

// stop() waits for a RUNNING task to return. The task is released only after stop() has begun
// (schedule() throws Stopped), and stop() must not have returned while the task was still held.
void expect_stop_waits_for_running_task(std::shared_ptr<Executor> executor) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .executor = std::move(executor)});
  ParkedTask running;
  running.schedule_on(timer);
  ASSERT_TRUE(running.started->wait());

  std::atomic<bool> stop_returned{false};
  std::atomic<bool> body_done_when_stop_returned{false};
  std::atomic<int> state_when_stop_returned{-1};
  std::thread stopper([&] {
    timer.stop();
    body_done_when_stop_returned.store(running.body_done->load());
    state_when_stop_returned.store(static_cast<int>(running.future.state()));
    stop_returned.store(true);
  });
  std::size_t extra = 0;
  // EXPECT, not ASSERT: returning with `stopper` joinable would be std::terminate, not a failure.
  EXPECT_TRUE(wait_until_stopping(timer, extra));
  EXPECT_FALSE(stop_returned.load()) << "stop() returned while a task was still RUNNING";
  EXPECT_EQ(running.future.state(), TaskState::running);
  running.release->open();
  stopper.join();
  EXPECT_TRUE(body_done_when_stop_returned.load());
  EXPECT_EQ(state_when_stop_returned.load(), static_cast<int>(TaskState::finished));
}

TEST_F(StopAdoptTest, StopWaitsForRunningInlineTask) {
  expect_stop_waits_for_running_task(nullptr);
}

TEST_F(StopAdoptTest, StopWaitsForRunningInlineExecutorTask) {
  expect_stop_waits_for_running_task(std::make_shared<InlineExecutor>());
}

TEST_F(StopAdoptTest, StopWaitsForRunningPoolTask) {
  expect_stop_waits_for_running_task(std::make_shared<CallerRunsPool>(2, 16));
}

#if WHEELTIMER_HAS_TBB
TEST_F(StopAdoptTest, StopWaitsForRunningArenaTask) {
  expect_stop_waits_for_running_task(std::make_shared<wheeltimer::TbbArenaExecutor>(1));
}
#endif

// Once stop() has begun, schedule, schedule_at and adopt are Stopped from every thread, the
// still-running task included; a refused adopt cancels the task's future.
// Two tasks due in the same tick, run inline: the first holds the indicator until stop() has
// begun. The second has not started by then, so stop() must hand it back, not run it.
TEST_F(StopAdoptTest, DueTaskNotStartedWhenStopBeginsIsHandedBack) {
  HashedWheelTimer timer;
  Gate first_running;
  std::atomic<bool> second_ran{false};
  const auto deadline = Clock::now() + 5ms;
  auto first = timer.schedule_at(
      [&] {
        first_running.open();
        // schedule() answers Stopped once stop() has begun; until then each probe is a far task
        // that stop() will hand back too.
        for (;;) {
          try {
            timer.schedule([] {}, 1h);
          } catch (const Stopped&) {
            return;
          }
          std::this_thread::yield();
        }
      },
      deadline);
  auto second = timer.schedule_at([&] { second_ran = true; }, deadline + 1ns);
  ASSERT_TRUE(first_running.wait());
  auto handed_back = timer.stop();
  EXPECT_EQ(first.state(), TaskState::finished);
  EXPECT_FALSE(second_ran.load());
  EXPECT_EQ(second.state(), TaskState::waiting);
  const bool second_handed_back = std::any_of(
      handed_back.begin(), handed_back.end(),
      [&](const PendingTask& task) { return task.future() == second; });
  EXPECT_TRUE(second_handed_back);
}

TEST_F(StopAdoptTest, ScheduleOrAdoptDuringStopIsStoppedFromAnyThread) {
  // Tasks handed back by another timer, to try adopt() with: from another thread and from inside.
  HashedWheelTimer donor(fast_options());
  TimerFuture donated = donor.schedule([] {}, 1h);
  donor.schedule([] {}, 2h);
  std::vector<PendingTask> donations = donor.stop();
  ASSERT_EQ(donations.size(), 2u);
  const TimerFuture donated_inside = donations[1].future();

  HashedWheelTimer timer(fast_options());
  struct Inside {
    Gate started;
    Gate release;
    std::atomic<int> refusals_inside{0};
  };
  auto inside = std::make_shared<Inside>();
  TimerFuture running = timer.schedule(
      [&timer, &donations, inside] {
        inside->started.open();
        inside->release.wait();
        try {
          timer.schedule([] {}, 0ms);
        } catch (const Stopped&) {
          inside->refusals_inside.fetch_add(1);
        }
        try {
          timer.adopt(std::move(donations[1]));
        } catch (const Stopped&) {
          inside->refusals_inside.fetch_add(1);
        }
      },
      0ms);
  ASSERT_TRUE(inside->started.wait());
  std::thread stopper([&] { timer.stop(); });
  std::size_t extra = 0;
  ASSERT_TRUE(wait_until_stopping(timer, extra));

  std::atomic<int> refusals{0};
  std::thread other([&] {
    auto count = [&](auto&& call) {
      try {
        call();
      } catch (const Stopped&) {
        refusals.fetch_add(1);
      }
    };
    count([&] { timer.schedule([] {}, 0ms); });
    count([&] { timer.schedule_at([] {}, Clock::now() + 1h); });
    count([&] { timer.adopt(std::move(donations[0])); });
  });
  other.join();
  EXPECT_EQ(refusals.load(), 3);
  EXPECT_EQ(donated.state(), TaskState::canceled);

  inside->release.open();
  stopper.join();
  EXPECT_EQ(inside->refusals_inside.load(), 2) << "a running task could still schedule or adopt";
  EXPECT_EQ(donated_inside.state(), TaskState::canceled) << "an adopt() refused inside a task";
  EXPECT_EQ(running.state(), TaskState::finished);
}

void expect_stop_inside_own_task_is_refused(std::shared_ptr<Executor> executor) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .executor = std::move(executor)});
  auto outcome = std::make_shared<std::string>();
  TimerFuture stopper =
      timer.schedule([&timer, outcome] { *outcome = what_stop_did(timer); }, 0ms);
  ASSERT_TRUE(stopper.wait_for(kMustHappen)) << "stop() inside a task waited for itself";
  EXPECT_EQ(*outcome, "logic_error");
  EXPECT_EQ(stopper.state(), TaskState::finished);

  // The timer keeps running: new tasks are accepted and run.
  auto later_ran = std::make_shared<std::atomic<bool>>(false);
  TimerFuture later = timer.schedule([later_ran] { later_ran->store(true); }, 2ms);
  ASSERT_TRUE(later.wait_for(kMustHappen));
  EXPECT_TRUE(later_ran->load());
  EXPECT_TRUE(timer.stop().empty());
}

TEST_F(StopAdoptTest, StopInsideOwnInlineTaskThrowsLogicErrorAndTimerKeepsRunning) {
  expect_stop_inside_own_task_is_refused(nullptr);
}

TEST_F(StopAdoptTest, StopInsideOwnPoolTaskThrowsLogicErrorAndTimerKeepsRunning) {
  expect_stop_inside_own_task_is_refused(std::make_shared<CallerRunsPool>(2, 16));
}

#if WHEELTIMER_HAS_TBB
TEST_F(StopAdoptTest, StopInsideOwnArenaTaskThrowsLogicErrorAndTimerKeepsRunning) {
  expect_stop_inside_own_task_is_refused(std::make_shared<wheeltimer::TbbArenaExecutor>(2));
}
#endif

// Destroying a timer from one of its own tasks is a precondition violation (API.md); the README
// says the program then ends at once with a message saying why, rather than hang waiting for
// itself or end in a bare std::terminate (joining the indicator from itself would also abort).
void destroy_timer_from_its_own_task(std::shared_ptr<Executor> executor) {
  auto* timer = new HashedWheelTimer(TimerOptions{.tick = 1ms, .executor = std::move(executor)});
  TimerFuture destroyer = timer->schedule([timer] { delete timer; }, 0ms);
  destroyer.wait_for(kMustHappen);  // the delete ends the process first
}

TEST(StopAdoptDeathTest, DestroyingTheTimerFromItsOwnInlineTaskTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(destroy_timer_from_its_own_task(nullptr), ::testing::KilledBySignal(SIGABRT),
              "destroyed from inside one of its own tasks");
}

TEST(StopAdoptDeathTest, DestroyingTheTimerFromItsOwnPoolTaskTerminates) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(destroy_timer_from_its_own_task(std::make_shared<CallerRunsPool>(2, 16)),
              ::testing::KilledBySignal(SIGABRT), "destroyed from inside one of its own tasks");
}

TEST_F(StopAdoptTest, StopFromTaskOfAnotherTimerWorks) {
  HashedWheelTimer target(fast_options());
  TimerFuture far = target.schedule([] {}, 1h);
  HashedWheelTimer driver(fast_options());
  auto handed = std::make_shared<std::vector<PendingTask>>();
  auto error = std::make_shared<std::exception_ptr>();
  TimerFuture call = driver.schedule(
      [&target, handed, error] {
        try {
          *handed = target.stop();
        } catch (...) {
          *error = std::current_exception();
        }
      },
      0ms);
  ASSERT_TRUE(call.wait_for(kMustHappen));
  EXPECT_EQ(*error, nullptr);
  ASSERT_EQ(handed->size(), 1u);
  EXPECT_EQ((*handed)[0].future(), far);
  EXPECT_THROW(target.schedule([] {}, 0ms), Stopped);
  EXPECT_TRUE(target.stop().empty());
}

// The destructor stops the timer and discards what stop() returns, which cancels those futures
// and wakes whoever waits on them.
TEST_F(StopAdoptTest, DestructorStopsAndCancelsUnrunTasks) {
  TimerFuture far;
  TimerFuture ran;
  auto flag = std::make_shared<std::atomic<bool>>(false);
  std::optional<SleepingWaiter> waiter;
  {
    HashedWheelTimer timer(fast_options());
    ran = timer.schedule([] {}, 0ms);
    ASSERT_TRUE(ran.wait_for(kMustHappen));
    far = timer.schedule([probe = DestroyFlag(flag)] {}, 1h);
    waiter.emplace(far);  // asleep in wait_for() before the timer goes
  }
  EXPECT_TRUE(waiter->woke()) << "the waiter was not woken when the destructor canceled its task";
  EXPECT_EQ(far.state(), TaskState::canceled);
  EXPECT_TRUE(flag->load()) << "captures of a discarded task outlived the timer";
  EXPECT_EQ(ran.state(), TaskState::finished);
}

// ---------------------------------------------------------------------------------------------
// PendingTask

// PendingTask is a move-only value (API.md).
static_assert(!std::is_copy_constructible_v<PendingTask>);
static_assert(!std::is_copy_assignable_v<PendingTask>);
// Beyond API.md, what the header declares: moves never throw (a vector of them relies on it), and
// deadline() and future() give these types on a const task.
static_assert(std::is_nothrow_move_constructible_v<PendingTask> &&
              std::is_nothrow_move_assignable_v<PendingTask>);
static_assert(std::is_same_v<decltype(std::declval<const PendingTask&>().deadline()),
                             Clock::time_point>);
static_assert(std::is_same_v<decltype(std::declval<const PendingTask&>().future()), TimerFuture>);

class PendingTaskTest : public StopAdoptTest {
 protected:
  // Schedules `task` far out on a fresh timer, stops it and returns the one handed-back task.
  static PendingTask hand_back(Task task, Clock::time_point deadline = Clock::now() + 1h) {
    HashedWheelTimer timer(fast_options());
    timer.schedule_at(std::move(task), deadline);
    std::vector<PendingTask> handed = timer.stop();
    EXPECT_EQ(handed.size(), 1u);
    return std::move(handed.at(0));
  }
};

TEST_F(PendingTaskTest, RunExecutesOnCallingThreadWithTransitions) {
  auto slot = std::make_shared<FutureSlot>();
  auto seen_thread = std::make_shared<std::thread::id>();
  auto state_inside = std::make_shared<int>(-1);
  PendingTask task = hand_back([slot, seen_thread, state_inside] {
    *seen_thread = std::this_thread::get_id();
    if (slot->ready.wait()) *state_inside = static_cast<int>(slot->future.state());
  });
  slot->future = task.future();
  slot->ready.open();
  EXPECT_EQ(slot->future.state(), TaskState::waiting);
  task.run();
  EXPECT_EQ(*seen_thread, std::this_thread::get_id());
  EXPECT_EQ(*state_inside, static_cast<int>(TaskState::running));
  EXPECT_EQ(slot->future.state(), TaskState::finished);
  EXPECT_EQ(slot->future.exception(), nullptr);
  slot->future = TimerFuture{};
}

TEST_F(PendingTaskTest, RunStoresExceptionInFutureWithoutRethrowingOrOnError) {
  auto on_error_calls = std::make_shared<std::atomic<int>>(0);
  TimerOptions options = fast_options();
  options.on_error = [on_error_calls](std::exception_ptr) { on_error_calls->fetch_add(1); };
  HashedWheelTimer timer(std::move(options));
  TimerFuture future = timer.schedule([] { throw std::runtime_error("from run"); }, 1h);
  std::vector<PendingTask> handed = timer.stop();
  ASSERT_EQ(handed.size(), 1u);
  handed[0].run();  // noexcept: a rethrow would terminate the test binary
  EXPECT_EQ(future.state(), TaskState::finished);
  ASSERT_NE(future.exception(), nullptr);
  try {
    std::rethrow_exception(future.exception());
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "from run");
  } catch (...) {
    ADD_FAILURE() << "future holds something other than the task's exception";
  }
  EXPECT_EQ(on_error_calls->load(), 0) << "run() reports only through the future";
}

TEST_F(PendingTaskTest, RunIsNoOpAfterCancel) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  PendingTask task = hand_back([ran] { ran->store(true); });
  TimerFuture future = task.future();
  ASSERT_TRUE(future.cancel());
  task.run();
  EXPECT_FALSE(ran->load());
  EXPECT_EQ(future.state(), TaskState::canceled);
}

TEST_F(PendingTaskTest, RunTwiceRunsOnce) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  PendingTask task = hand_back([runs] { runs->fetch_add(1); });
  TimerFuture future = task.future();
  task.run();
  task.run();
  EXPECT_EQ(runs->load(), 1);
  EXPECT_EQ(future.state(), TaskState::finished);
}

// API.md lists deadline() and future() beside run() with no "until run": they keep answering.
TEST_F(PendingTaskTest, KeepsDeadlineAndFutureAfterRun) {
  const auto deadline = Clock::now() + 2h + 7ns;
  PendingTask task = hand_back([] {}, deadline);
  TimerFuture before = task.future();
  task.run();
  EXPECT_EQ(task.deadline(), deadline);
  EXPECT_EQ(task.future(), before);
  EXPECT_TRUE(task.future().is_done());

  PendingTask canceled = hand_back([] {}, deadline);
  ASSERT_TRUE(canceled.future().cancel());
  canceled.run();
  EXPECT_EQ(canceled.deadline(), deadline);
  EXPECT_TRUE(canceled.future().is_cancelled());
}

// A task may destroy the PendingTask that runs it (a service dropping its table of handed-back
// tasks, say). run() keeps the node alive until the run's last step, so the captures the task
// still uses after that are not freed under it (AddressSanitizer would catch it in CI).
TEST_F(PendingTaskTest, RunOutlivesATaskThatDestroysItsHandle) {
  std::optional<PendingTask> handle;
  auto after_reset = std::make_shared<std::atomic<bool>>(false);
  handle.emplace(hand_back([&handle, after_reset] {
    handle.reset();  // the handle held the node's last reference besides the run's own
    after_reset->store(true);
  }));
  handle->run();
  EXPECT_FALSE(handle.has_value());
  EXPECT_TRUE(after_reset->load());
}

// A task that already ran is like a canceled one: adopt() returns its future and schedules nothing.
TEST_F(PendingTaskTest, AdoptAfterRunSchedulesNothing) {
  auto runs = std::make_shared<std::atomic<int>>(0);
  PendingTask task = hand_back([runs] { runs->fetch_add(1); });
  TimerFuture future = task.future();
  task.run();
  HashedWheelTimer target(TimerOptions{.tick = 1ms, .max_pending = 1});
  TimerFuture result = target.adopt(std::move(task));
  EXPECT_EQ(result, future);
  EXPECT_EQ(result.state(), TaskState::finished);
  EXPECT_EQ(target.pending(), 0u);
  EXPECT_EQ(target.stop().size(), 0u);
  EXPECT_EQ(runs->load(), 1);
}

TEST_F(PendingTaskTest, KeepsDeadlineAndFuture) {
  const auto deadline = Clock::now() + 3h + 11ns;
  HashedWheelTimer timer(fast_options());
  TimerFuture future = timer.schedule_at([] {}, deadline);
  std::vector<PendingTask> handed = timer.stop();
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed[0].deadline(), deadline);
  EXPECT_EQ(handed[0].future(), future);
  // Moving keeps it whole, and the moved-from shell cancels nothing when it goes.
  PendingTask moved = std::move(handed[0]);
  handed.clear();
  EXPECT_EQ(moved.deadline(), deadline);
  EXPECT_EQ(moved.future(), future);
  EXPECT_EQ(future.state(), TaskState::waiting);
}

TEST_F(PendingTaskTest, DroppingUnrunTaskCancelsAndWakesWaiter) {
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  auto task = std::make_unique<PendingTask>(hand_back([probe = DestroyFlag(destroyed)] {}));
  TimerFuture future = task->future();
  EXPECT_FALSE(destroyed->load());  // stop() hands it back whole
  SleepingWaiter waiter(future);  // asleep on the task: dropping it must wake the waiter
  task.reset();
  EXPECT_TRUE(waiter.woke());
  EXPECT_EQ(future.state(), TaskState::canceled);
  EXPECT_TRUE(destroyed->load()) << "captures outlived their PendingTask";
}

TEST_F(PendingTaskTest, MoveAssigningOverAnUnrunTaskCancelsIt) {
  auto overwritten_destroyed = std::make_shared<std::atomic<bool>>(false);
  auto runs = std::make_shared<std::atomic<int>>(0);
  PendingTask target = hand_back([probe = DestroyFlag(overwritten_destroyed)] {});
  PendingTask source = hand_back([runs] { runs->fetch_add(1); });
  TimerFuture overwritten = target.future();
  TimerFuture moved = source.future();

  target = std::move(source);
  EXPECT_EQ(overwritten.state(), TaskState::canceled) << "the task it held was dropped unrun";
  EXPECT_TRUE(overwritten_destroyed->load()) << "its captures outlived it";
  EXPECT_EQ(target.future(), moved);
  EXPECT_EQ(moved.state(), TaskState::waiting);
  target.run();
  EXPECT_EQ(runs->load(), 1);
  EXPECT_EQ(moved.state(), TaskState::finished);
}

// ---------------------------------------------------------------------------------------------
// adopt()

TEST_F(StopAdoptTest, AdoptRunsAtOriginalDeadlineKeepingTheFuture) {
  struct Seen {
    Clock::time_point start{};
    bool ran = false;
  };
  auto seen = std::make_shared<Seen>();
  const auto deadline = Clock::now() + 500ms;
  HeldPool held;  // if the deadline passes before stop(), the task waits there, unstarted
  HashedWheelTimer origin(TimerOptions{.tick = 1ms, .executor = held.pool()});
  TimerFuture original = origin.schedule_at(
      [seen] {
        seen->start = Clock::now();
        seen->ran = true;
      },
      deadline);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 1u);

  HashedWheelTimer target(fast_options());
  TimerFuture adopted = target.adopt(std::move(handed[0]));
  const bool adopted_in_time = Clock::now() < deadline;
  handed.clear();  // the moved-from shell must not cancel anything
  EXPECT_EQ(adopted, original);
  EXPECT_EQ(adopted.deadline(), deadline);
  ASSERT_TRUE(original.wait_for(kMustHappen));
  EXPECT_EQ(original.state(), TaskState::finished);
  EXPECT_TRUE(seen->ran);
  EXPECT_GE(seen->start, deadline) << "adopted task ran early";
  EXPECT_LT(seen->start - deadline, kLateBound);
  EXPECT_EQ(target.pending(), 0u);
  if (!adopted_in_time) {
    GTEST_SKIP() << "adopt() returned after the deadline (a slow machine): the task could not "
                    "have run early, so this run did not show that it waits for its deadline";
  }
}

TEST_F(StopAdoptTest, AdoptOfOverdueTaskRunsSoon) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  HeldPool held;  // the task waits there, unstarted, however late stop() comes
  HashedWheelTimer origin(TimerOptions{.tick = 1ms, .executor = held.pool()});
  const auto deadline = Clock::now() + 20ms;
  TimerFuture original = origin.schedule_at([ran] { ran->store(true); }, deadline);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 1u);
  std::this_thread::sleep_for(40ms);  // a delay only: the deadline passes before adopt()
  auto pool = std::make_shared<CallerRunsPool>(1, 4);
  HashedWheelTimer target(TimerOptions{.tick = 1ms, .executor = pool});
  EXPECT_EQ(target.adopt(std::move(handed[0])), original);
  ASSERT_TRUE(original.wait_for(kMustHappen));
  EXPECT_TRUE(ran->load());
  EXPECT_EQ(original.deadline(), deadline);
}

TEST_F(StopAdoptTest, AdoptOfCanceledTaskSchedulesNothing) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  HashedWheelTimer origin(fast_options());
  TimerFuture original = origin.schedule([ran] { ran->store(true); }, 1h);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 1u);
  ASSERT_TRUE(original.cancel());

  HashedWheelTimer target(TimerOptions{.tick = 1ms, .max_pending = 1});
  TimerFuture result = target.adopt(std::move(handed[0]));
  EXPECT_EQ(result, original);
  EXPECT_EQ(result.state(), TaskState::canceled);
  EXPECT_EQ(target.pending(), 0u);
  // The one slot is still free.
  TimerFuture fits = target.schedule([] {}, 1h);
  EXPECT_EQ(target.pending(), 1u);
  EXPECT_FALSE(ran->load());
}

// A PendingTask that was moved from holds no task: adopting it is std::invalid_argument, checked
// before Stopped, as for an empty Task; the task it held is untouched.
TEST_F(StopAdoptTest, AdoptOfAMovedFromPendingTaskIsInvalidArgument) {
  HashedWheelTimer origin(fast_options());
  TimerFuture original = origin.schedule([] {}, 1h);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 1u);
  PendingTask kept = std::move(handed[0]);

  HashedWheelTimer target(fast_options());
  try {
    target.adopt(std::move(handed[0]));  // NOLINT(bugprone-use-after-move): that is the test
    ADD_FAILURE() << "adopt() of an empty PendingTask returned";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("empty PendingTask"), std::string::npos) << e.what();
  }
  EXPECT_EQ(target.pending(), 0u);
  target.stop();
  EXPECT_THROW(target.adopt(std::move(handed[0])), std::invalid_argument);
  EXPECT_EQ(original.state(), TaskState::waiting);
  EXPECT_EQ(kept.deadline(), original.deadline());
}

// Stopped and Rejected are checked before the canceled future is noticed.
TEST_F(StopAdoptTest, AdoptOfCanceledTaskStillThrowsStoppedOrRejected) {
  HashedWheelTimer origin(fast_options());
  TimerFuture first = origin.schedule([] {}, 1h);
  TimerFuture second = origin.schedule([] {}, 2h);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 2u);
  ASSERT_TRUE(first.cancel());
  ASSERT_TRUE(second.cancel());

  HashedWheelTimer stopped(fast_options());
  stopped.stop();
  EXPECT_THROW(stopped.adopt(std::move(handed[0])), Stopped);

  HashedWheelTimer full(TimerOptions{.tick = 1ms, .max_pending = 1});
  TimerFuture occupant = full.schedule([] {}, 1h);
  EXPECT_THROW(full.adopt(std::move(handed[1])), Rejected);
  EXPECT_EQ(full.pending(), 1u);
  EXPECT_EQ(occupant.state(), TaskState::waiting);
}

TEST_F(StopAdoptTest, AdoptIntoStoppedTimerThrowsStoppedAndCancels) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  HashedWheelTimer origin(fast_options());
  TimerFuture original =
      origin.schedule([ran, probe = DestroyFlag(destroyed)] { ran->store(true); }, 1h);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 1u);

  HashedWheelTimer target(fast_options());
  target.stop();
  EXPECT_THROW(target.adopt(std::move(handed[0])), Stopped);
  EXPECT_EQ(original.state(), TaskState::canceled);
  EXPECT_TRUE(original.wait_for(0s));
  EXPECT_TRUE(destroyed->load()) << "a refused task's captures outlived the refusal";
  EXPECT_EQ(target.pending(), 0u);
  EXPECT_FALSE(ran->load());
}

TEST_F(StopAdoptTest, AdoptIntoFullTimerThrowsRejectedAndCancels) {
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  HashedWheelTimer origin(fast_options());
  TimerFuture original = origin.schedule([probe = DestroyFlag(destroyed)] {}, 1h);
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 1u);

  HashedWheelTimer target(TimerOptions{.tick = 1ms, .max_pending = 1});
  TimerFuture occupant = target.schedule([] {}, 1h);
  EXPECT_THROW(target.adopt(std::move(handed[0])), Rejected);
  EXPECT_EQ(original.state(), TaskState::canceled);
  EXPECT_TRUE(destroyed->load()) << "a refused task's captures outlived the refusal";
  EXPECT_EQ(target.pending(), 1u);
  EXPECT_EQ(occupant.state(), TaskState::waiting);
}

TEST_F(StopAdoptTest, AdoptCountsAgainstMaxPending) {
  HashedWheelTimer origin(fast_options());
  std::vector<TimerFuture> originals;
  for (int i = 0; i < 3; ++i) {
    originals.push_back(origin.schedule([] {}, 1h + std::chrono::minutes(i)));
  }
  std::vector<PendingTask> handed = origin.stop();
  ASSERT_EQ(handed.size(), 3u);

  HashedWheelTimer target(TimerOptions{.tick = 1ms, .max_pending = 2});
  EXPECT_EQ(target.adopt(std::move(handed[0])), originals[0]);
  EXPECT_EQ(target.pending(), 1u);
  EXPECT_EQ(target.adopt(std::move(handed[1])), originals[1]);
  EXPECT_EQ(target.pending(), 2u);
  EXPECT_THROW(target.schedule([] {}, 1h), Rejected);
  EXPECT_THROW(target.adopt(std::move(handed[2])), Rejected);
  EXPECT_EQ(originals[2].state(), TaskState::canceled);

  // An adopted task is canceled like any other, freeing its slot at once.
  ASSERT_TRUE(originals[0].cancel());
  EXPECT_EQ(target.pending(), 1u);
  // And the target's stop() hands adopted tasks back again.
  std::vector<PendingTask> again = target.stop();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].future(), originals[1]);
}

TEST_F(StopAdoptTest, TaskCanAdoptIntoItsOwnTimer) {
  HashedWheelTimer origin(fast_options());
  auto ran = std::make_shared<std::atomic<bool>>(false);
  TimerFuture original = origin.schedule([ran] { ran->store(true); }, 1h);
  auto handed = std::make_shared<std::vector<PendingTask>>(origin.stop());
  ASSERT_EQ(handed->size(), 1u);
  // A task of `target` adopts it: accepted and pending there (its deadline is an hour out).
  HashedWheelTimer target(fast_options());
  auto adopted = std::make_shared<TimerFuture>();
  auto error = std::make_shared<std::exception_ptr>();
  TimerFuture adopter = target.schedule(
      [&target, handed, adopted, error] {
        try {
          *adopted = target.adopt(std::move(handed->at(0)));
        } catch (...) {
          *error = std::current_exception();
        }
      },
      0ms);
  ASSERT_TRUE(adopter.wait_for(kMustHappen));
  EXPECT_EQ(*error, nullptr);
  EXPECT_EQ(*adopted, original);
  EXPECT_EQ(target.pending(), 1u);
  EXPECT_EQ(original.state(), TaskState::waiting);
  EXPECT_FALSE(ran->load());
}

}  // namespace
}  // namespace wheeltimer
