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
  int status = 0;
  pid_t exited = 0;
  // waitpid() has no timeout: poll, with a generous bound for a hang.
  const auto give_up = std::chrono::steady_clock::now() + wheeltimer::testing::kMustHappen;
  while ((exited = waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  if (exited == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  ASSERT_EQ(exited, child) << "the child process still had not exited after 30 s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
