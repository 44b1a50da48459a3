// A process exits while a thread still waits on a task that will never settle (a detached waiter,
// a timer never destroyed). exit() runs the static destructors, and a condition variable's
// destructor waits for the threads blocked on it: the library's waiting places must not be among
// them, or the process never exits.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;

// Reachable from a global, so LeakSanitizer does not count the timer kept on purpose.
wheeltimer::HashedWheelTimer* kept_timer = nullptr;

[[noreturn]] void exit_while_a_thread_waits() {
  kept_timer = new wheeltimer::HashedWheelTimer();
  kept_timer->schedule([] {}, 0ms).wait();  // a task has settled: the waiting places exist
  wheeltimer::TimerFuture never = kept_timer->schedule([] {}, 1h);
  std::atomic<pid_t> waiter{0};
  std::thread([never, &waiter] {
    waiter = gettid();
    never.wait();
  }).detach();
  // Until the waiter sleeps: blocked on its condition variable, the one place it can sleep.
  while (waiter.load() == 0 || !wheeltimer::testing::thread_sleeps(waiter.load())) {
    std::this_thread::yield();
  }
  std::exit(0);
}

TEST(ExitTest, ExitDoesNotWaitForAThreadBlockedOnATask) {
  const pid_t child = fork();  // the test's first and only step: no other thread exists yet
  ASSERT_NE(child, -1);
  if (child == 0) exit_while_a_thread_waits();
  // waitpid() has no timeout: it blocks on a thread of its own, and a hang ends with a SIGKILL.
  std::future<std::optional<int>> reaped = std::async(std::launch::async, [child] {
    int status = 0;
    return waitpid(child, &status, 0) == child ? std::optional<int>(status) : std::nullopt;
  });
  const bool exited =
      reaped.wait_for(wheeltimer::testing::kMustHappen) == std::future_status::ready;
  if (!exited) kill(child, SIGKILL);
  const std::optional<int> reaped_status = reaped.get();
  ASSERT_TRUE(exited) << "the child process still had not exited after 30 s";
  ASSERT_TRUE(reaped_status.has_value()) << "waitpid() failed";
  const int status = *reaped_status;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
