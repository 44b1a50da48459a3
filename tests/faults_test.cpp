// Faults: an executor that refuses work, an allocation failure inside schedule(), an on_error
// that throws. In each case no task may vanish, pending() must stay exact, and the timer must keep
// working afterwards. Also a timer destroyed on, or failing to be built on, its executor's own
// thread, and no thread to be had.
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "node_allocator.hpp"
#include "test_support.hpp"

namespace wheeltimer {
namespace {

using namespace std::chrono_literals;
using testing::kept_and_working;
using testing::kMustHappen;
using testing::make_leaked_on_purpose;
using testing::run_holding_its_last_reference;
using testing::what_stop_did;

// Refuses every task while `refusing` is set, then runs them inline.
class RefusingExecutor final : public Executor {
 public:
  std::atomic<bool> refusing{true};
  void execute(Task work) override {
    if (refusing.load()) throw std::runtime_error("executor is shut down");
    work();
  }
};

struct ErrorLog {
  std::mutex mutex;
  std::vector<std::exception_ptr> errors;
  void add(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex);
    errors.push_back(std::move(error));
  }
  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return errors.size();
  }
};

class FaultsTest : public ::testing::Test {};

// After a stop() from where it may not be called: `result` (what_stop_did()) says logic_error, and
// the timer still runs new tasks.
void expect_stop_refused_and_timer_running(std::future<std::string> result,
                                           HashedWheelTimer& timer) {
  ASSERT_EQ(result.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_EQ(result.get(), "logic_error");
  TimerFuture next = timer.schedule([] {}, 1ms);
  ASSERT_TRUE(next.wait_for(kMustHappen));
  EXPECT_EQ(next.state(), TaskState::finished);
}

TEST_F(FaultsTest, RefusedTaskIsCanceledReportedAndNeverRuns) {
  auto executor = std::make_shared<RefusingExecutor>();
  auto log = std::make_shared<ErrorLog>();
  TimerOptions options;
  options.executor = executor;
  options.on_error = [log](std::exception_ptr error) { log->add(std::move(error)); };
  HashedWheelTimer timer(options);

  std::atomic<int> ran{0};
  TimerFuture refused = timer.schedule([&ran] { ran.fetch_add(1); }, 0ms);
  ASSERT_TRUE(refused.wait_for(kMustHappen));
  EXPECT_EQ(refused.state(), TaskState::canceled);
  EXPECT_EQ(refused.exception(), nullptr);  // the task itself threw nothing
  EXPECT_EQ(timer.pending(), 0u);
  ASSERT_EQ(log->size(), 1u);
  try {
    std::rethrow_exception(log->errors.front());
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "executor is shut down");
  }

  // The indicator survived: once the executor accepts work again, tasks run.
  executor->refusing = false;
  TimerFuture accepted = timer.schedule([&ran] { ran.fetch_add(1); }, 1ms);
  ASSERT_TRUE(accepted.wait_for(kMustHappen));
  EXPECT_EQ(accepted.state(), TaskState::finished);
  EXPECT_EQ(ran.load(), 1);  // only the accepted one
}

// A refused task's captures die on the indicator, as the timer's own code: stop() from their
// destructor is a std::logic_error there, as from a task, and the timer keeps running.
TEST_F(FaultsTest, StopFromTheCapturesOfARefusedTaskIsALogicError) {
  auto executor = std::make_shared<RefusingExecutor>();
  HashedWheelTimer timer(TimerOptions{.executor = executor});
  struct StopsTheTimerWhenDestroyed {
    HashedWheelTimer* timer;  // null once moved from
    std::promise<std::string>* outcome;
    StopsTheTimerWhenDestroyed(HashedWheelTimer* t, std::promise<std::string>* o)
        : timer(t), outcome(o) {}
    StopsTheTimerWhenDestroyed(StopsTheTimerWhenDestroyed&& other) noexcept
        : timer(std::exchange(other.timer, nullptr)), outcome(other.outcome) {}
    ~StopsTheTimerWhenDestroyed() {
      if (timer != nullptr) outcome->set_value(what_stop_did(*timer));
    }
    void operator()() const {}
  };
  std::promise<std::string> outcome;
  TimerFuture refused = timer.schedule(StopsTheTimerWhenDestroyed(&timer, &outcome), 0ms);
  auto result = outcome.get_future();
  ASSERT_EQ(result.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_EQ(result.get(), "logic_error");
  EXPECT_EQ(refused.state(), TaskState::canceled);

  executor->refusing = false;
  TimerFuture accepted = timer.schedule([] {}, 0ms);
  ASSERT_TRUE(accepted.wait_for(kMustHappen));
  EXPECT_EQ(accepted.state(), TaskState::finished);
}

// Any code on the indicator thread would wait for itself in stop(), not only a task: here a custom
// executor's execute(), which the indicator calls. It gets std::logic_error, and the timer is
// neither stopped nor stuck.
TEST_F(FaultsTest, StopFromAnExecutorsExecuteOnTheIndicatorIsALogicError) {
  struct StoppingExecutor final : Executor {
    HashedWheelTimer* timer = nullptr;
    std::promise<std::string> outcome;
    bool tried = false;  // only the indicator calls execute()
    void execute(Task work) override {
      if (!std::exchange(tried, true)) outcome.set_value(what_stop_did(*timer));
      work();
    }
  };
  auto executor = std::make_shared<StoppingExecutor>();
  auto result = executor->outcome.get_future();
  HashedWheelTimer timer(TimerOptions{.executor = executor});
  executor->timer = &timer;
  TimerFuture first = timer.schedule([] {}, 0ms);
  expect_stop_refused_and_timer_running(std::move(result), timer);
  ASSERT_TRUE(first.wait_for(kMustHappen));
  EXPECT_EQ(first.state(), TaskState::finished);
}

// on_error runs on the thread that ran the task, still inside that task's run: stop() from it would
// wait for the task that called it. It is std::logic_error there too, with the task run inline on
// the indicator and on a pool's thread, and the timer keeps running.
TEST_F(FaultsTest, StopFromOnErrorIsALogicError) {
  for (const bool on_a_pool : {false, true}) {
    SCOPED_TRACE(on_a_pool ? "CallerRunsPool" : "inline");
    auto outcome = std::make_shared<std::promise<std::string>>();
    HashedWheelTimer* stopping = nullptr;
    TimerOptions options;
    if (on_a_pool) options.executor = std::make_shared<CallerRunsPool>(1, 16);
    options.on_error = [&stopping, outcome](std::exception_ptr) {
      outcome->set_value(what_stop_did(*stopping));
    };
    HashedWheelTimer timer(std::move(options));
    stopping = &timer;
    TimerFuture failing = timer.schedule([] { throw std::runtime_error("task failed"); }, 0ms);
    expect_stop_refused_and_timer_running(outcome->get_future(), timer);
    ASSERT_TRUE(failing.wait_for(kMustHappen));
    EXPECT_EQ(failing.state(), TaskState::finished);
  }
}

TEST_F(FaultsTest, BadAllocInsideScheduleLeavesNothingHalfInserted) {
  HashedWheelTimer timer;
  auto far = timer.schedule([] {}, 1h);
  ASSERT_EQ(timer.pending(), 1u);

  auto capture = std::make_shared<int>(7);
  wheeltimer::detail::fail_node_allocation_after(0);  // the task node's allocation fails
  EXPECT_THROW(timer.schedule([capture] {}, 0ms), std::bad_alloc);
  wheeltimer::detail::fail_node_allocation_after(-1);
  EXPECT_EQ(timer.pending(), 1u);
  EXPECT_EQ(capture.use_count(), 1);  // the refused task's captures were destroyed, not leaked

  // Still fully usable.
  auto after = timer.schedule([] {}, 0ms);
  ASSERT_TRUE(after.wait_for(kMustHappen));
  EXPECT_EQ(after.state(), TaskState::finished);
  auto handed_back = timer.stop();
  ASSERT_EQ(handed_back.size(), 1u);
  EXPECT_EQ(handed_back.front().future(), far);
}

TEST_F(FaultsTest, ThrowingOnErrorIsSwallowedAndTimerKeepsTicking) {
  std::atomic<int> told{0};
  TimerOptions options;
  options.on_error = [&told](std::exception_ptr) {
    told.fetch_add(1);
    throw std::logic_error("on_error failed too");
  };
  HashedWheelTimer timer(options);
  auto first = timer.schedule([] { throw 42; }, 0ms);  // a non-std exception type
  ASSERT_TRUE(first.wait_for(kMustHappen));
  EXPECT_EQ(first.state(), TaskState::finished);
  ASSERT_NE(first.exception(), nullptr);
  EXPECT_THROW(std::rethrow_exception(first.exception()), int);

  auto second = timer.schedule([] {}, 1ms);
  ASSERT_TRUE(second.wait_for(kMustHappen));
  EXPECT_EQ(second.state(), TaskState::finished);
  EXPECT_EQ(told.load(), 1);
}

// A task that drops the last handle to itself keeps running: the timer holds its own reference.
TEST_F(FaultsTest, TaskDestroyingTheLastFutureToItselfIsHarmless) {
  HashedWheelTimer timer;
  auto self = std::make_shared<TimerFuture>();
  std::promise<void> slot_filled;
  std::promise<TaskState> seen;
  *self = timer.schedule(
      [self, filled = slot_filled.get_future(), &seen]() mutable {
        filled.wait();  // the test has stored this task's future in the slot
        const TaskState own = self->state();  // read through the handle it is about to drop
        *self = TimerFuture();  // the last handle anybody else had
        self.reset();
        seen.set_value(own);
      },
      0ms);
  self.reset();  // only the task's capture still refers to the slot
  slot_filled.set_value();
  auto result = seen.get_future();
  ASSERT_EQ(result.wait_for(kMustHappen), std::future_status::ready);
  // The task saw itself RUNNING through that handle, and finishing after dropping it harms
  // nothing: the timer goes on and stops cleanly (AddressSanitizer checks the memory).
  EXPECT_EQ(result.get(), TaskState::running);
  EXPECT_TRUE(timer.schedule([] {}, 0ms).wait_for(kMustHappen));
  EXPECT_TRUE(timer.stop().empty());
}

// An executor that records which thread destroyed it.
class RecordingPool final : public Executor {
 public:
  explicit RecordingPool(std::atomic<std::thread::id>* destroyed_on)
      : destroyed_on_(destroyed_on) {}
  ~RecordingPool() override { destroyed_on_->store(std::this_thread::get_id()); }
  void execute(Task work) override { pool_.execute(std::move(work)); }

 private:
  std::atomic<std::thread::id>* destroyed_on_;
  CallerRunsPool pool_{2, 16};
};

// A task that drops the user's last reference to the executor: the timer keeps it alive until its
// stop() has returned, and the last reference is never released on one of the pool's threads.
TEST_F(FaultsTest, TaskDroppingTheLastOutsideReferenceToTheExecutor) {
  std::atomic<std::thread::id> destroyed_on{};
  auto executor = std::make_shared<RecordingPool>(&destroyed_on);
  auto options = TimerOptions();
  options.executor = executor;
  auto timer = std::make_unique<HashedWheelTimer>(std::move(options));
  auto holder = std::make_shared<std::shared_ptr<RecordingPool>>(std::move(executor));
  auto first = timer->schedule([holder] { holder->reset(); }, 0ms);
  ASSERT_TRUE(first.wait_for(kMustHappen));
  auto second = timer->schedule([] {}, 1ms);  // the timer still has a working executor
  ASSERT_TRUE(second.wait_for(kMustHappen));
  EXPECT_EQ(second.state(), TaskState::finished);
  EXPECT_EQ(destroyed_on.load(), std::thread::id{});
  timer.reset();
  EXPECT_EQ(destroyed_on.load(), std::this_thread::get_id());
}

// An executor whose deleter reports the thread it was destroyed on, and a future of that report,
// so a test can wait for it. The promise is shared with the deleter, which may run after the test
// has given up waiting.
template <class ExecutorType, class... Args>
std::pair<std::shared_ptr<ExecutorType>, std::future<std::thread::id>>
make_reporting_where_destroyed(Args... args) {
  const auto destroyed_on = std::make_shared<std::promise<std::thread::id>>();
  std::future<std::thread::id> destroyed = destroyed_on->get_future();
  std::shared_ptr<ExecutorType> executor(new ExecutorType(args...),
                                         [destroyed_on](ExecutorType* dying) {
                                           delete dying;
                                           destroyed_on->set_value(std::this_thread::get_id());
                                         });
  return {std::move(executor), std::move(destroyed)};
}

// A job given straight to the pool (not a timer task) drops the last reference to the timer, while
// the timer holds the last reference to the pool: the timer is destroyed on a pool thread, and the
// pool's last reference must not be released there (its destructor would join or wait for the
// very thread it runs on: std::terminate for the pool, a hang for the arena).
template <class ExecutorType, class... Args>
void destroy_timer_on_its_executors_thread(Args... args) {
  auto [executor, destroyed] = make_reporting_where_destroyed<ExecutorType>(args...);
  auto options = TimerOptions();
  options.executor = executor;
  auto timer = std::make_shared<HashedWheelTimer>(std::move(options));
  ASSERT_TRUE(timer->schedule([] {}, 0ms).wait_for(kMustHappen));
  const auto dropped_on = std::make_shared<std::promise<std::thread::id>>();
  std::promise<void> handed_over;
  executor->execute(
      [timer = std::move(timer), dropped_on, handed = handed_over.get_future()]() mutable {
        handed.wait();
        timer.reset();  // ~HashedWheelTimer on the executor's own thread
        dropped_on->set_value(std::this_thread::get_id());
      });
  executor.reset();  // now the timer holds the executor's last reference
  handed_over.set_value();
  auto dropped = dropped_on->get_future();
  ASSERT_EQ(dropped.wait_for(kMustHappen), std::future_status::ready);
  ASSERT_EQ(destroyed.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_NE(destroyed.get(), dropped.get()) << "released on its own worker thread";
}

TEST_F(FaultsTest, TimerDestroyedOnItsPoolsThreadDoesNotReleaseThePoolThere) {
  destroy_timer_on_its_executors_thread<CallerRunsPool>(std::size_t{1}, std::size_t{8});
}

#if WHEELTIMER_HAS_TBB
TEST_F(FaultsTest, TimerDestroyedOnItsArenasThreadDoesNotReleaseTheArenaThere) {
  destroy_timer_on_its_executors_thread<TbbArenaExecutor>(1);
}
#endif

// Whether constructing a timer from `options` throws `Error`.
template <class Error>
bool building_throws(TimerOptions options) {
  try {
    HashedWheelTimer timer(std::move(options));
  } catch (const Error&) {
    return true;
  }
  return false;
}

// A job on the executor's own thread builds a timer with invalid options, handing it the
// executor's last reference: the constructor throws std::invalid_argument, and the executor is
// released on a thread of its own, not on the job's.
template <class ExecutorType, class... Args>
void fail_to_build_timer_on_its_executors_thread(Args... args) {
  auto [executor, destroyed] = make_reporting_where_destroyed<ExecutorType>(args...);
  const auto outcome = run_holding_its_last_reference<std::pair<std::thread::id, bool>>(
      std::move(executor), [](std::shared_ptr<ExecutorType> last) {
        auto options = TimerOptions();
        options.tick = Clock::duration::zero();
        options.executor = std::move(last);
        const bool threw = building_throws<std::invalid_argument>(std::move(options));
        return std::pair(std::this_thread::get_id(), threw);
      });
  ASSERT_TRUE(outcome.has_value()) << "the job did not finish";
  const auto [job_thread, threw] = *outcome;
  EXPECT_TRUE(threw);
  ASSERT_EQ(destroyed.wait_for(kMustHappen), std::future_status::ready);
  EXPECT_NE(destroyed.get(), job_thread) << "released on its own worker thread";
}

TEST_F(FaultsTest, TimerFailingToBuildOnItsPoolsThreadDoesNotReleaseThePoolThere) {
  fail_to_build_timer_on_its_executors_thread<CallerRunsPool>(std::size_t{1}, std::size_t{8});
}

#if WHEELTIMER_HAS_TBB
TEST_F(FaultsTest, TimerFailingToBuildOnItsArenasThreadDoesNotReleaseTheArenaThere) {
  fail_to_build_timer_on_its_executors_thread<TbbArenaExecutor>(1);
}
#endif

// While one lives, no thread started with default attributes (std::thread) can start: each asks
// for a stack of 2^62 bytes, which no mmap() can map, as when a process has run out of threads (a
// limit that root, unlike RLIMIT_NPROC, cannot ignore). oneTBB's workers set their own stack size.
// glibc only.
class NoNewThreads {
 public:
  NoNewThreads() {
    pthread_attr_t huge;
    if (pthread_attr_init(&huge) != 0 ||
        pthread_attr_setstacksize(&huge, std::size_t{1} << 62) != 0 ||
        pthread_getattr_default_np(&saved_) != 0 || pthread_setattr_default_np(&huge) != 0) {
      std::abort();
    }
    pthread_attr_destroy(&huge);
  }
  ~NoNewThreads() {
    pthread_setattr_default_np(&saved_);
    pthread_attr_destroy(&saved_);
  }
  NoNewThreads(const NoNewThreads&) = delete;
  NoNewThreads& operator=(const NoNewThreads&) = delete;

 private:
  pthread_attr_t saved_;
};

bool a_thread_starts() {
  try {
    std::thread([] {}).join();
    return true;
  } catch (const std::system_error&) {
    return false;
  }
}

// With no thread to be had, a timer or a pool cannot be made: the constructor throws what
// std::thread threw, and leaves nothing behind (the sanitizer builds check for leaks).
TEST_F(FaultsTest, NoThreadToBeHadFailsConstructionCleanly) {
  auto executor = std::make_shared<CallerRunsPool>(std::size_t{1}, std::size_t{8});
  const std::weak_ptr<CallerRunsPool> watch = executor;
  {
    const NoNewThreads no_new_threads;
    auto options = TimerOptions();
    options.executor = std::move(executor);
    EXPECT_THROW(HashedWheelTimer{std::move(options)}, std::system_error);
    EXPECT_THROW((CallerRunsPool{2, 8}), std::system_error);
  }
  EXPECT_TRUE(watch.expired()) << "the failed timer kept its executor";
  HashedWheelTimer timer;  // threads start again
  EXPECT_TRUE(timer.schedule([] {}, 0ms).wait_for(kMustHappen));
}

// As destroy_timer_on_its_executors_thread(), with no thread to be had for releasing the
// executor's last reference elsewhere: the timer keeps that reference for good, so the executor
// outlives it, still working, rather than being released on its own thread.
template <class ExecutorType, class... Args>
void destroy_timer_on_its_executors_thread_with_no_threads_left(Args... args) {
  std::shared_ptr<ExecutorType> executor = make_leaked_on_purpose<ExecutorType>(args...);
  const std::weak_ptr<ExecutorType> watch = executor;
  auto options = TimerOptions();
  options.executor = executor;
  auto timer = std::make_shared<HashedWheelTimer>(std::move(options));
  ASSERT_TRUE(timer->schedule([] {}, 0ms).wait_for(kMustHappen));
  // Shared with the job, which may outlive this function if an assertion below gives up on it.
  const auto threads_refused = std::make_shared<std::promise<bool>>();
  std::promise<void> handed_over;
  executor->execute([timer = std::move(timer), threads_refused,
                     handed = handed_over.get_future()]() mutable {
    handed.wait();
    bool refused = false;
    {
      const NoNewThreads no_new_threads;
      refused = !a_thread_starts();
      timer.reset();  // ~HashedWheelTimer on the executor's own thread, holding its last reference
    }
    threads_refused->set_value(refused);
  });
  executor.reset();  // now the timer holds the executor's last reference
  handed_over.set_value();
  auto refused = threads_refused->get_future();
  ASSERT_EQ(refused.wait_for(kMustHappen), std::future_status::ready);
  ASSERT_TRUE(refused.get()) << "threads still started: the test shows nothing";
  EXPECT_TRUE(kept_and_working(watch)) << "the executor was not kept";
}

TEST_F(FaultsTest, TimerDestroyedOnItsPoolsThreadWithNoThreadsLeftKeepsThePool) {
  destroy_timer_on_its_executors_thread_with_no_threads_left<CallerRunsPool>(std::size_t{1},
                                                                             std::size_t{8});
}

#if WHEELTIMER_HAS_TBB
TEST_F(FaultsTest, TimerDestroyedOnItsArenasThreadWithNoThreadsLeftKeepsTheArena) {
  destroy_timer_on_its_executors_thread_with_no_threads_left<TbbArenaExecutor>(1);
}
#endif

// A job on the executor's own thread builds a timer, handing it the executor's last reference,
// with no thread to be had for the indicator: the constructor throws, and the reference it was
// given must not be released on that thread either (nor elsewhere, with no thread to release it
// on), so the executor outlives the failed timer, still working.
template <class ExecutorType, class... Args>
void build_timer_on_its_executors_thread_with_no_threads_left(Args... args) {
  std::shared_ptr<ExecutorType> executor = make_leaked_on_purpose<ExecutorType>(args...);
  const std::weak_ptr<ExecutorType> watch = executor;
  const auto outcome = run_holding_its_last_reference<std::pair<bool, bool>>(
      std::move(executor), [](std::shared_ptr<ExecutorType> last) {
        const NoNewThreads no_new_threads;
        const bool refused = !a_thread_starts();
        auto options = TimerOptions();
        options.executor = std::move(last);
        return std::pair(refused, building_throws<std::system_error>(std::move(options)));
      });
  ASSERT_TRUE(outcome.has_value()) << "the job did not finish";
  const auto [refused, threw] = *outcome;
  ASSERT_TRUE(refused) << "threads still started: the test shows nothing";
  EXPECT_TRUE(threw) << "the timer was built with no thread for its indicator";
  EXPECT_TRUE(kept_and_working(watch)) << "the executor was not kept";
}

TEST_F(FaultsTest, TimerFailingToBuildOnItsPoolsThreadKeepsThePool) {
  build_timer_on_its_executors_thread_with_no_threads_left<CallerRunsPool>(std::size_t{1},
                                                                           std::size_t{8});
}

#if WHEELTIMER_HAS_TBB
TEST_F(FaultsTest, TimerFailingToBuildOnItsArenasThreadKeepsTheArena) {
  build_timer_on_its_executors_thread_with_no_threads_left<TbbArenaExecutor>(1);
}
#endif

}  // namespace
}  // namespace wheeltimer
