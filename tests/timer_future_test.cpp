// TimerFuture and TaskState: the handle a scheduler gets back, observed through its whole life.
//
// Nothing here sleeps to wait for an event: a task that must be observed mid-flight blocks on a
// Gate the test opens, and every wait on the timer goes through wait_for(kMustHappen), so a bug
// shows up as a failed expectation, never as a hung run.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
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
using testing::FutureSlot;
using testing::Gate;
using testing::kMustHappen;
using testing::HandOffCounter;
using testing::SleepingWaiter;

constexpr int kNotRecorded = -1;

// A move-only capture that records, at the moment the last live copy is destroyed, that it was
// destroyed and the state its task's future had then. Moved-from shells record nothing.
class CaptureProbe {
 public:
  struct Record {
    std::atomic<bool> destroyed{false};
    std::atomic<int> state_at_destruction{kNotRecorded};
    std::shared_ptr<FutureSlot> slot;  // may be null: then only `destroyed` is recorded
  };

  explicit CaptureProbe(std::shared_ptr<Record> record) : record_(std::move(record)) {}
  CaptureProbe(CaptureProbe&& other) noexcept : record_(std::move(other.record_)) {}
  CaptureProbe(const CaptureProbe&) = delete;
  CaptureProbe& operator=(const CaptureProbe&) = delete;
  CaptureProbe& operator=(CaptureProbe&&) = delete;
  ~CaptureProbe() {
    if (!record_) return;
    if (record_->slot) {
      record_->state_at_destruction.store(static_cast<int>(record_->slot->future.state()));
    }
    record_->destroyed.store(true);
  }

 private:
  std::shared_ptr<Record> record_;
};

// The declarations API.md fixes, checked where a test could not see them.
static_assert(std::is_same_v<std::underlying_type_t<TaskState>, std::uint8_t>);
static_assert(std::is_same_v<decltype(to_string(TaskState::waiting)), std::string_view>);
static_assert(std::is_copy_constructible_v<TimerFuture> && std::is_copy_assignable_v<TimerFuture>);
static_assert(std::is_default_constructible_v<TimerFuture>);
static_assert(noexcept(std::declval<const TimerFuture&>().valid()));
static_assert(noexcept(std::declval<const TimerFuture&>().state()));
static_assert(noexcept(std::declval<TimerFuture&>().cancel()));
static_assert(noexcept(std::declval<const TimerFuture&>().is_cancelled()));
static_assert(noexcept(std::declval<const TimerFuture&>().is_done()));
static_assert(noexcept(std::declval<const TimerFuture&>().deadline()));
static_assert(noexcept(std::declval<const TimerFuture&>().exception()));
static_assert(std::is_same_v<decltype(std::declval<const TimerFuture&>().deadline()),
                             Clock::time_point>);
static_assert(std::is_same_v<decltype(std::declval<const TimerFuture&>().wait_for(1ms)), bool>);
static_assert(std::is_same_v<decltype(std::declval<const TimerFuture&>().wait_until(Clock::now())),
                             bool>);

class TimerFutureTest : public ::testing::Test {
 protected:
  static TimerOptions fast_options() { return TimerOptions{.tick = 1ms}; }
};

TEST_F(TimerFutureTest, ToStringNamesAllFourStates) {
  EXPECT_EQ(to_string(TaskState::waiting), "WAITING");
  EXPECT_EQ(to_string(TaskState::running), "RUNNING");
  EXPECT_EQ(to_string(TaskState::finished), "FINISHED");
  EXPECT_EQ(to_string(TaskState::canceled), "CANCELED");
}

TEST_F(TimerFutureTest, DefaultConstructedIsEmptyAndCanceled) {
  TimerFuture empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.state(), TaskState::canceled);
  EXPECT_TRUE(empty.is_cancelled());
  EXPECT_FALSE(empty.is_done());
  EXPECT_FALSE(empty.cancel());
  EXPECT_EQ(empty.deadline(), Clock::time_point::max());
  EXPECT_EQ(empty.exception(), nullptr);
  // Every wait returns true at once: even a zero or a past limit reports "done".
  empty.wait();
  EXPECT_TRUE(empty.wait_for(0s));
  EXPECT_TRUE(empty.wait_for(Clock::duration::max()));
  EXPECT_TRUE(empty.wait_until(Clock::now() - 1s));
  EXPECT_TRUE(empty.wait_until(Clock::time_point::max()));
  EXPECT_EQ(empty, TimerFuture{});
}

TEST_F(TimerFutureTest, CopiesReferToTheSameTask) {
  HashedWheelTimer timer(fast_options());
  TimerFuture first = timer.schedule([] {}, 1h);
  TimerFuture second = timer.schedule([] {}, 1h);
  ASSERT_TRUE(first.valid());

  TimerFuture copy = first;
  TimerFuture assigned;
  assigned = first;
  EXPECT_EQ(copy, first);
  EXPECT_EQ(assigned, first);
  EXPECT_FALSE(first == second);
  EXPECT_FALSE(first == TimerFuture{});

  // What one handle does, every copy sees.
  EXPECT_TRUE(copy.cancel());
  EXPECT_EQ(first.state(), TaskState::canceled);
  EXPECT_EQ(assigned.state(), TaskState::canceled);
  EXPECT_FALSE(first.cancel());
  EXPECT_EQ(second.state(), TaskState::waiting);

  TimerFuture moved = std::move(copy);
  EXPECT_EQ(moved, first);
}

// WAITING -> RUNNING -> FINISHED, each state observed while the task is held in it. A pool with
// one thread, kept busy by a blocker, holds the due task WAITING; the task itself then blocks on
// a gate so RUNNING can be observed.
TEST_F(TimerFutureTest, ObservesWaitingRunningFinished) {
  auto pool = std::make_shared<CallerRunsPool>(1, 8);
  auto blocker_started = std::make_shared<Gate>();
  auto release_blocker = std::make_shared<Gate>();
  pool->execute([blocker_started, release_blocker] {
    blocker_started->open();
    release_blocker->wait();
  });
  ASSERT_TRUE(blocker_started->wait());

  auto task_started = std::make_shared<Gate>();
  auto release_task = std::make_shared<Gate>();
  auto body_done = std::make_shared<std::atomic<bool>>(false);
  auto handed = std::make_shared<HandOffCounter>(pool);
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .executor = handed});
  TimerFuture future = timer.schedule(
      [task_started, release_task, body_done] {
        task_started->open();
        release_task->wait();
        body_done->store(true);
      },
      0ms);

  EXPECT_EQ(future.state(), TaskState::waiting);
  ASSERT_TRUE(handed->wait_handed(1));  // in the (busy) pool's queue now: still WAITING there
  EXPECT_FALSE(future.wait_for(0s));
  EXPECT_EQ(future.state(), TaskState::waiting);
  EXPECT_FALSE(future.is_done());
  EXPECT_FALSE(future.is_cancelled());

  release_blocker->open();
  ASSERT_TRUE(task_started->wait());
  EXPECT_EQ(future.state(), TaskState::running);
  EXPECT_FALSE(future.is_done());
  EXPECT_FALSE(future.is_cancelled());
  EXPECT_FALSE(future.wait_for(0s));
  // Too late to cancel a running task, and trying changes nothing.
  EXPECT_FALSE(future.cancel());
  EXPECT_EQ(future.state(), TaskState::running);

  release_task->open();
  ASSERT_TRUE(future.wait_for(kMustHappen));
  EXPECT_EQ(future.state(), TaskState::finished);
  EXPECT_TRUE(body_done->load());
  EXPECT_TRUE(future.is_done());
  EXPECT_FALSE(future.is_cancelled());
  EXPECT_EQ(future.exception(), nullptr);
}

TEST_F(TimerFutureTest, ConcurrentCancelSucceedsExactlyOnce) {
  HashedWheelTimer timer(fast_options());
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    TimerFuture future = timer.schedule([] {}, 1h);
    std::latch start(kThreads);
    std::atomic<int> winners{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, copy = future]() mutable {
        start.arrive_and_wait();
        if (copy.cancel()) winners.fetch_add(1);
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(winners.load(), 1) << "round " << round;
    EXPECT_EQ(future.state(), TaskState::canceled);
  }
  EXPECT_EQ(timer.pending(), 0u);
}

TEST_F(TimerFutureTest, CancelOfFinishedOrCanceledTaskIsFalse) {
  HashedWheelTimer timer(fast_options());
  TimerFuture done = timer.schedule([] {}, 0ms);
  ASSERT_TRUE(done.wait_for(kMustHappen));
  EXPECT_TRUE(done.is_done());
  EXPECT_FALSE(done.cancel());
  EXPECT_EQ(done.state(), TaskState::finished);

  TimerFuture far = timer.schedule([] {}, 1h);
  EXPECT_FALSE(far.is_done());
  EXPECT_FALSE(far.is_cancelled());
  EXPECT_TRUE(far.cancel());
  EXPECT_TRUE(far.is_cancelled());
  EXPECT_FALSE(far.is_done());  // canceled is not "done"
  EXPECT_FALSE(far.cancel());
  EXPECT_TRUE(far.wait_for(0s));
  EXPECT_EQ(far.exception(), nullptr);
}

TEST_F(TimerFutureTest, DeadlineIsExactlyWhatScheduleAtGot) {
  HashedWheelTimer timer(fast_options());
  // Odd nanosecond offsets: nothing may round the deadline to a tick.
  const Clock::time_point deadlines[] = {
      Clock::now() + 1h + 123ns,
      Clock::now() + 7777777ns,
      Clock::now() - 5s - 3ns,
      Clock::time_point::max(),
  };
  std::vector<TimerFuture> futures;
  for (auto deadline : deadlines) futures.push_back(timer.schedule_at([] {}, deadline));
  for (std::size_t i = 0; i < futures.size(); ++i) {
    EXPECT_EQ(futures[i].deadline(), deadlines[i]) << "index " << i;
  }
  // A saturated delay is time_point::max().
  EXPECT_EQ(timer.schedule([] {}, std::chrono::hours::max()).deadline(), Clock::time_point::max());
  EXPECT_EQ(timer.schedule([] {}, std::chrono::nanoseconds::max()).deadline(),
            Clock::time_point::max());
  // The deadline stays readable after the task finished.
  ASSERT_TRUE(futures[2].wait_for(kMustHappen));
  EXPECT_EQ(futures[2].deadline(), deadlines[2]);
}

TEST_F(TimerFutureTest, ExceptionHoldsStdExceptionThrownByTask) {
  HashedWheelTimer timer(fast_options());
  TimerFuture future = timer.schedule([] { throw std::runtime_error("task failed"); }, 0ms);
  ASSERT_TRUE(future.wait_for(kMustHappen));
  EXPECT_EQ(future.state(), TaskState::finished);
  EXPECT_TRUE(future.is_done());
  std::exception_ptr error = future.exception();
  ASSERT_NE(error, nullptr);
  try {
    std::rethrow_exception(error);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task failed");
  } catch (...) {
    ADD_FAILURE() << "exception() holds something other than the std::runtime_error thrown";
  }
}

TEST_F(TimerFutureTest, ExceptionHoldsNonStdTypeThrownByTask) {
  HashedWheelTimer timer(fast_options());
  TimerFuture future = timer.schedule([] { throw 42; }, 0ms);
  ASSERT_TRUE(future.wait_for(kMustHappen));
  EXPECT_EQ(future.state(), TaskState::finished);
  std::exception_ptr error = future.exception();
  ASSERT_NE(error, nullptr);
  try {
    std::rethrow_exception(error);
  } catch (int value) {
    EXPECT_EQ(value, 42);
  } catch (...) {
    ADD_FAILURE() << "exception() holds something other than the int thrown";
  }
}

TEST_F(TimerFutureTest, ExceptionIsNullWhileWaitingAndAfterCleanFinish) {
  HashedWheelTimer timer(fast_options());
  TimerFuture far = timer.schedule([] {}, 1h);
  EXPECT_EQ(far.exception(), nullptr);
  TimerFuture clean = timer.schedule([] {}, 0ms);
  ASSERT_TRUE(clean.wait_for(kMustHappen));
  EXPECT_EQ(clean.exception(), nullptr);
}

// on_error runs on the thread that ran the task, before the future turns FINISHED: inside
// on_error the task's own future must still read RUNNING. With every executor.
void expect_on_error_told_before_finished(std::shared_ptr<Executor> executor) {
  struct Seen {
    std::atomic<int> calls{0};
    std::atomic<int> state_inside{kNotRecorded};
    std::exception_ptr error;  // written before FINISHED, read after: ordered by the future
  };
  auto slot = std::make_shared<FutureSlot>();
  auto seen = std::make_shared<Seen>();
  TimerOptions options = TimerOptions{.tick = 1ms, .executor = std::move(executor)};
  options.on_error = [slot, seen](std::exception_ptr error) {
    seen->state_inside.store(static_cast<int>(slot->future.state()));
    seen->error = error;
    seen->calls.fetch_add(1);
  };
  HashedWheelTimer timer(std::move(options));
  slot->future = timer.schedule(
      [slot] {
        slot->ready.wait();  // the test has stored the future
        throw std::runtime_error("reported");
      },
      0ms);
  slot->ready.open();
  ASSERT_TRUE(slot->future.wait_for(kMustHappen));
  EXPECT_EQ(seen->calls.load(), 1);
  EXPECT_EQ(seen->state_inside.load(), static_cast<int>(TaskState::running))
      << "on_error saw " << to_string(static_cast<TaskState>(seen->state_inside.load()));
  ASSERT_NE(seen->error, nullptr);
  EXPECT_EQ(seen->error, slot->future.exception());
}

TEST_F(TimerFutureTest, OnErrorIsToldBeforeFutureTurnsFinished) {
  for (const auto& kind : wheeltimer::testing::executor_kinds(16)) {
    SCOPED_TRACE(kind.name);
    expect_on_error_told_before_finished(kind.make());
  }
}

TEST_F(TimerFutureTest, ThrowingOnErrorIsSwallowedAndTimerKeepsWorking) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  TimerOptions options = fast_options();
  options.on_error = [calls](std::exception_ptr) {
    calls->fetch_add(1);
    throw std::logic_error("on_error fails too");
  };
  HashedWheelTimer timer(std::move(options));
  TimerFuture failing = timer.schedule([] { throw std::runtime_error("first"); }, 0ms);
  ASSERT_TRUE(failing.wait_for(kMustHappen));
  EXPECT_EQ(failing.state(), TaskState::finished);
  ASSERT_NE(failing.exception(), nullptr);
  // The future holds the task's exception, not on_error's.
  try {
    std::rethrow_exception(failing.exception());
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  } catch (...) {
    ADD_FAILURE() << "future holds on_error's exception instead of the task's";
  }

  auto ran = std::make_shared<std::atomic<bool>>(false);
  TimerFuture later = timer.schedule([ran] { ran->store(true); }, 1ms);
  ASSERT_TRUE(later.wait_for(kMustHappen));
  EXPECT_TRUE(ran->load());
  TimerFuture again = timer.schedule([] { throw 1; }, 0ms);
  ASSERT_TRUE(again.wait_for(kMustHappen));
  EXPECT_EQ(calls->load(), 2);
}

TEST_F(TimerFutureTest, ShortWaitOnFarTaskTimesOut) {
  HashedWheelTimer timer(fast_options());
  TimerFuture far = timer.schedule([] {}, 1h);
  EXPECT_FALSE(far.wait_for(20ms));
  EXPECT_FALSE(far.wait_until(Clock::now() + 20ms));
  EXPECT_FALSE(far.wait_for(0s));
  EXPECT_FALSE(far.wait_for(-1s));
  EXPECT_FALSE(far.wait_until(Clock::time_point::min()));
  EXPECT_EQ(far.state(), TaskState::waiting);
}

// duration::max() and time_point::max() mean "no limit": no overflow into the past (which would
// return false at once) while the task is still on its way.
TEST_F(TimerFutureTest, UnlimitedWaitsDoNotOverflow) {
  HashedWheelTimer timer(fast_options());
  TimerFuture by_duration = timer.schedule([] {}, 30ms);
  EXPECT_TRUE(by_duration.wait_for(Clock::duration::max()));
  EXPECT_EQ(by_duration.state(), TaskState::finished);

  TimerFuture by_time_point = timer.schedule([] {}, 30ms);
  EXPECT_TRUE(by_time_point.wait_until(Clock::time_point::max()));
  EXPECT_EQ(by_time_point.state(), TaskState::finished);

  TimerFuture plain = timer.schedule([] {}, 30ms);
  plain.wait();
  EXPECT_EQ(plain.state(), TaskState::finished);

  // And on a task already settled they return at once.
  EXPECT_TRUE(by_duration.wait_for(Clock::duration::max()));
  EXPECT_TRUE(by_time_point.wait_until(Clock::time_point::max()));
}

// The same with coarser units: hours::max() or seconds::max() would overflow on their way to
// Clock's nanoseconds (and wrap into the past, returning false at once), so they saturate too.
// Fractional limits round up, and a NaN limit is std::invalid_argument.
TEST_F(TimerFutureTest, UnlimitedWaitsInAnyUnitDoNotOverflow) {
  HashedWheelTimer timer(fast_options());
  TimerFuture in_hours = timer.schedule([] {}, 30ms);
  EXPECT_TRUE(in_hours.wait_for(std::chrono::hours::max()));
  EXPECT_EQ(in_hours.state(), TaskState::finished);

  TimerFuture in_seconds = timer.schedule([] {}, 30ms);
  EXPECT_TRUE(in_seconds.wait_for(std::chrono::seconds::max()));
  EXPECT_EQ(in_seconds.state(), TaskState::finished);

  TimerFuture until_hours = timer.schedule([] {}, 30ms);
  EXPECT_TRUE(until_hours.wait_until(std::chrono::time_point<Clock, std::chrono::hours>::max()));
  EXPECT_EQ(until_hours.state(), TaskState::finished);

  TimerFuture far = timer.schedule([] {}, 1h);
  const Clock::time_point before = Clock::now();
  EXPECT_FALSE(far.wait_for(std::chrono::duration<double, std::milli>(20.5)));
  EXPECT_GE(Clock::now() - before, 20500us) << "a fractional limit is never cut short";
  EXPECT_FALSE(far.wait_until(std::chrono::time_point<Clock, std::chrono::hours>::min()));
  EXPECT_THROW(far.wait_for(std::chrono::duration<double>(std::nan(""))), std::invalid_argument);
  EXPECT_EQ(far.state(), TaskState::waiting);
}

TEST_F(TimerFutureTest, WaitWakesOnCancelFromAnotherThread) {
  HashedWheelTimer timer(fast_options());
  TimerFuture far = timer.schedule([] {}, 1h);
  SleepingWaiter waiter(far);  // asleep on the task: the cancel must wake it
  EXPECT_TRUE(far.cancel());
  EXPECT_TRUE(waiter.woke());
}

// Captures are destroyed right after the task runs, before its future turns FINISHED.
TEST_F(TimerFutureTest, CapturesDestroyedAfterRunBeforeFinished) {
  auto record = std::make_shared<CaptureProbe::Record>();
  record->slot = std::make_shared<FutureSlot>();
  HashedWheelTimer timer(fast_options());
  record->slot->future = timer.schedule(
      [probe = CaptureProbe(record), slot = record->slot] { slot->ready.wait(); }, 0ms);
  EXPECT_FALSE(record->destroyed.load());  // the task holds it until it runs
  record->slot->ready.open();
  ASSERT_TRUE(record->slot->future.wait_for(kMustHappen));
  EXPECT_EQ(record->slot->future.state(), TaskState::finished);
  ASSERT_TRUE(record->destroyed.load()) << "captures outlived the FINISHED transition";
  EXPECT_EQ(record->state_at_destruction.load(), static_cast<int>(TaskState::running))
      << "captures destroyed while the future read "
      << to_string(static_cast<TaskState>(record->state_at_destruction.load()));
  record->slot->future = TimerFuture{};  // break the slot <-> record cycle
}

TEST_F(TimerFutureTest, CancelDestroysCapturesBeforeReturning) {
  auto record = std::make_shared<CaptureProbe::Record>();
  HashedWheelTimer timer(fast_options());
  TimerFuture far = timer.schedule([probe = CaptureProbe(record)] {}, 1h);
  // A copy of the future is still alive: captures must not wait for the last handle.
  TimerFuture copy = far;
  EXPECT_FALSE(record->destroyed.load());
  ASSERT_TRUE(far.cancel());
  EXPECT_TRUE(record->destroyed.load()) << "cancel() returned before the captures were destroyed";
}

// A task that owns a std::promise (move-only) delivers through it: the capture is really moved
// into the timer, run, then released.
TEST_F(TimerFutureTest, MoveOnlyCaptureRunsAndIsReleased) {
  HashedWheelTimer timer(fast_options());
  std::promise<int> promise;
  std::future<int> result = promise.get_future();
  auto owned = std::make_unique<int>(7);
  TimerFuture future = timer.schedule(
      [promise = std::move(promise), owned = std::move(owned)]() mutable {
        promise.set_value(*owned);
      },
      0ms);
  ASSERT_EQ(result.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_EQ(result.get(), 7);
  EXPECT_TRUE(future.wait_for(kMustHappen));
}

TEST_F(TimerFutureTest, FutureOutlivesItsTimer) {
  TimerFuture finished;
  TimerFuture dropped;
  TimerFuture canceled;
  {
    HashedWheelTimer timer(fast_options());
    finished = timer.schedule([] { throw std::runtime_error("kept"); }, 0ms);
    ASSERT_TRUE(finished.wait_for(kMustHappen));
    dropped = timer.schedule([] {}, 1h);
    canceled = timer.schedule([] {}, 1h);
    ASSERT_TRUE(canceled.cancel());
  }
  EXPECT_TRUE(finished.valid());
  EXPECT_EQ(finished.state(), TaskState::finished);
  finished.wait();
  EXPECT_TRUE(finished.wait_for(0s));
  EXPECT_NE(finished.exception(), nullptr);
  EXPECT_FALSE(finished.cancel());

  // The destructor discarded what stop() handed back, which cancels it.
  EXPECT_EQ(dropped.state(), TaskState::canceled);
  EXPECT_TRUE(dropped.wait_for(0s));
  EXPECT_FALSE(dropped.cancel());
  EXPECT_NE(dropped.deadline(), Clock::time_point::max());

  EXPECT_EQ(canceled.state(), TaskState::canceled);
  EXPECT_TRUE(canceled.wait_until(Clock::now()));
}

}  // namespace
}  // namespace wheeltimer

// Outside the namespace, with no using-declaration: a user's unqualified to_string(state) finds
// wheeltimer::to_string by argument-dependent lookup.
TEST(TaskStateToStringTest, FoundByArgumentDependentLookupFromOutsideTheNamespace) {
  EXPECT_EQ(to_string(wheeltimer::TaskState::running), "RUNNING");
  EXPECT_EQ(to_string(wheeltimer::TaskState::canceled), "CANCELED");
}
