// What a task sees of its timer and may do with it: schedule and cancel on the timer that runs it,
// throw (the exception goes to its future and to on_error, and the timer keeps going), and run on
// an indicator thread that carries the configured name.
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

namespace wheeltimer {
namespace {

using namespace std::chrono_literals;
using testing::kMustHappen;

// ---------------------------------------------------------------------------------------------
// Tasks using their own timer

void expect_task_can_use_its_own_timer(HashedWheelTimer& timer) {
  struct Results {
    TimerFuture child;
    bool cancel_result = false;
    std::exception_ptr error;
  };
  auto results = std::make_shared<Results>();
  auto child_ran = std::make_shared<std::atomic<bool>>(false);
  TimerFuture victim = timer.schedule([] {}, 1h);
  TimerFuture parent = timer.schedule(
      [&timer, results, child_ran, victim]() mutable {
        try {
          results->child = timer.schedule([child_ran] { child_ran->store(true); }, 0ms);
          results->cancel_result = victim.cancel();
        } catch (...) {
          results->error = std::current_exception();
        }
      },
      0ms);
  ASSERT_TRUE(parent.wait_for(kMustHappen));
  ASSERT_EQ(results->error, nullptr) << "schedule/cancel from inside a task threw";
  EXPECT_TRUE(results->cancel_result);
  EXPECT_EQ(victim.state(), TaskState::canceled);
  ASSERT_TRUE(results->child.valid());
  ASSERT_TRUE(results->child.wait_for(kMustHappen));
  EXPECT_EQ(results->child.state(), TaskState::finished);
  EXPECT_TRUE(child_ran->load());
}

TEST(TaskContext, TaskSchedulesAndCancelsOnItsOwnTimerInline) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  expect_task_can_use_its_own_timer(timer);
}

TEST(TaskContext, TaskSchedulesAndCancelsOnItsOwnTimerOnPool) {
  auto pool = std::make_shared<CallerRunsPool>(2, 16);
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .executor = pool});
  expect_task_can_use_its_own_timer(timer);
}

TEST(TaskContext, TaskCanRescheduleItselfRepeatedly) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms});
  constexpr int kRuns = 20;
  auto count = std::make_shared<std::atomic<int>>(0);
  auto done = std::make_shared<std::promise<void>>();
  auto body = std::make_shared<std::function<void()>>();
  // The function holds itself only weakly, so no cycle outlives the test.
  *body = [&timer, count, done, weak = std::weak_ptr<std::function<void()>>(body)] {
    if (count->fetch_add(1) + 1 == kRuns) {
      done->set_value();
      return;
    }
    if (auto self = weak.lock()) timer.schedule([self] { (*self)(); }, 1ms);
  };
  timer.schedule([body] { (*body)(); }, 0ms);
  ASSERT_EQ(done->get_future().wait_for(kMustHappen), std::future_status::ready);
  EXPECT_EQ(count->load(), kRuns);
  timer.stop();
}

// ---------------------------------------------------------------------------------------------
// Exceptions

struct ErrorLog {
  std::mutex mutex;
  std::vector<std::pair<std::exception_ptr, std::thread::id>> entries;
};

void expect_on_error_told(std::shared_ptr<Executor> executor) {
  auto log = std::make_shared<ErrorLog>();
  TimerOptions options{.tick = 1ms, .executor = std::move(executor)};
  options.on_error = [log](std::exception_ptr error) {
    std::lock_guard lock(log->mutex);
    log->entries.emplace_back(error, std::this_thread::get_id());
  };
  HashedWheelTimer timer(std::move(options));
  auto std_thread = std::make_shared<std::thread::id>();
  auto int_thread = std::make_shared<std::thread::id>();
  TimerFuture std_error = timer.schedule(
      [std_thread] {
        *std_thread = std::this_thread::get_id();
        throw std::runtime_error("std");
      },
      0ms);
  ASSERT_TRUE(std_error.wait_for(kMustHappen));
  TimerFuture int_error = timer.schedule(
      [int_thread] {
        *int_thread = std::this_thread::get_id();
        throw 5;
      },
      1ms);
  ASSERT_TRUE(int_error.wait_for(kMustHappen));
  TimerFuture clean = timer.schedule([] {}, 0ms);
  ASSERT_TRUE(clean.wait_for(kMustHappen));

  std::lock_guard lock(log->mutex);
  ASSERT_EQ(log->entries.size(), 2u);  // the clean task reported nothing
  EXPECT_EQ(log->entries[0].first, std_error.exception());
  EXPECT_EQ(log->entries[0].second, *std_thread) << "on_error not told on the task's thread";
  EXPECT_EQ(log->entries[1].first, int_error.exception());
  EXPECT_EQ(log->entries[1].second, *int_thread);
  try {
    std::rethrow_exception(log->entries[1].first);
  } catch (int value) {
    EXPECT_EQ(value, 5);
  } catch (...) {
    ADD_FAILURE() << "on_error got something other than the int thrown";
  }
}

TEST(TaskContext, OnErrorGetsTaskExceptionsInline) { expect_on_error_told(nullptr); }

TEST(TaskContext, OnErrorGetsTaskExceptionsOnPool) {
  expect_on_error_told(std::make_shared<CallerRunsPool>(1, 16));
}

// InlineExecutor passes on what its work throws: told once, so the timer's wrapped work must not
// throw what the task threw (the indicator would report it again as the executor's refusal).
TEST(TaskContext, OnErrorGetsTaskExceptionsOnInlineExecutorOnce) {
  expect_on_error_told(std::make_shared<InlineExecutor>());
}

#if WHEELTIMER_HAS_TBB
TEST(TaskContext, OnErrorGetsTaskExceptionsOnArena) {
  expect_on_error_told(std::make_shared<wheeltimer::TbbArenaExecutor>(1));
}
#endif

void expect_throwing_tasks_do_not_stop_the_timer(std::shared_ptr<Executor> executor) {
  HashedWheelTimer timer(TimerOptions{.tick = 1ms, .executor = std::move(executor)});
  std::vector<TimerFuture> throwing;
  for (int i = 0; i < 5; ++i) {
    throwing.push_back(timer.schedule([i] { throw std::runtime_error(std::to_string(i)); },
                                      std::chrono::milliseconds(i)));
  }
  throwing.push_back(timer.schedule([] { throw 0; }, 2ms));
  for (auto& f : throwing) {
    ASSERT_TRUE(f.wait_for(kMustHappen));
    EXPECT_NE(f.exception(), nullptr);
  }
  auto count = std::make_shared<std::atomic<int>>(0);
  std::vector<TimerFuture> later;
  for (int i = 0; i < 5; ++i) {
    later.push_back(timer.schedule([count] { count->fetch_add(1); }, std::chrono::milliseconds(i)));
  }
  for (auto& f : later) {
    ASSERT_TRUE(f.wait_for(kMustHappen));
    EXPECT_EQ(f.state(), TaskState::finished);
    EXPECT_EQ(f.exception(), nullptr);
  }
  EXPECT_EQ(count->load(), 5);
}

TEST(TaskContext, ThrowingTasksDoNotStopTheIndicator) {
  expect_throwing_tasks_do_not_stop_the_timer(nullptr);
}

TEST(TaskContext, ThrowingTasksDoNotStopPoolThreads) {
  // One worker: if a throw killed it, nothing later could run on the pool.
  expect_throwing_tasks_do_not_stop_the_timer(std::make_shared<CallerRunsPool>(1, 64));
}

// ---------------------------------------------------------------------------------------------
// Thread name

#if defined(__linux__)
std::string indicator_thread_name(const std::string& configured) {
  TimerOptions options{.tick = 1ms};
  options.thread_name = configured;
  HashedWheelTimer timer(std::move(options));
  auto name = std::make_shared<std::string>();
  // Inline executor: the task runs on the indicator thread itself.
  TimerFuture probe = timer.schedule(
      [name] {
        char buffer[64] = {};
        if (pthread_getname_np(pthread_self(), buffer, sizeof buffer) == 0) *name = buffer;
      },
      0ms);
  EXPECT_TRUE(probe.wait_for(kMustHappen));
  return *name;
}

TEST(TaskContext, IndicatorThreadCarriesTheName) {
  EXPECT_EQ(indicator_thread_name("wheeltimer"), "wheeltimer");
  EXPECT_EQ(indicator_thread_name("orders-timer"), "orders-timer");
}

TEST(TaskContext, LongThreadNameIsCutTo15Characters) {
  EXPECT_EQ(indicator_thread_name("payments-retry-timer-east"), "payments-retry-");
}

TEST(TaskContext, LongThreadNameIsNeverCutInsideAUtf8Character) {
  // Eight two-byte characters: the 15-byte cut would fall inside the eighth, so it keeps seven.
  const std::string eight_e_acute = "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9";
  EXPECT_EQ(indicator_thread_name(eight_e_acute), eight_e_acute.substr(0, 14));
  // Three-byte characters: 15 bytes hold exactly five.
  const std::string six_yen = "\u5186\u5186\u5186\u5186\u5186\u5186";
  EXPECT_EQ(indicator_thread_name(six_yen), six_yen.substr(0, 15));
}

// top -H shows the name as soon as the constructor has returned, before any task has run.
TEST(TaskContext, ThreadNameShowsAsSoonAsTheTimerExists) {
  const auto threads_named = [](const std::string& name) {
    int count = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string seen;
      if (std::getline(comm, seen) && seen == name) ++count;
    }
    return count;
  };
  TimerOptions options{.tick = 1h};
  options.thread_name = "wt-name-probe";
  ASSERT_EQ(threads_named("wt-name-probe"), 0);
  HashedWheelTimer timer(std::move(options));
  EXPECT_EQ(threads_named("wt-name-probe"), 1);
}
#endif

TEST(TaskContext, LongThreadNameTimerStillWorks) {
  TimerOptions options{.tick = 1ms};
  options.thread_name = std::string(100, 'x');
  HashedWheelTimer timer(std::move(options));
  TimerFuture future = timer.schedule([] {}, 1ms);
  EXPECT_TRUE(future.wait_for(kMustHappen));
}

}  // namespace
}  // namespace wheeltimer
