// A program that uses wheeltimer as the README's "Usage" shows, built outside this project: CI
// builds it against the library pulled in as a Meson subproject, and against an installed copy
// found through pkg-config (.ci/consumer). It exits 0 only if every outcome is the expected one.
#include <wheeltimer/wheeltimer.hpp>

#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

using namespace std::chrono_literals;

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

// Runs one task through `executor` and cancels another; hands the third to `successor`.
void exercise(std::shared_ptr<wheeltimer::Executor> executor, wheeltimer::HashedWheelTimer& successor) {
  std::atomic<int> runs{0};
  wheeltimer::HashedWheelTimer timer({.tick = 1ms, .wheel_size = 512, .executor = executor});
  wheeltimer::TimerFuture fires = timer.schedule([&runs] { runs.fetch_add(1); }, 1ms);
  wheeltimer::TimerFuture canceled = timer.schedule([&runs] { runs.fetch_add(1); }, 1h);
  wheeltimer::TimerFuture handed_over = timer.schedule([] {}, 2h);

  expect(canceled.cancel(), "cancel() of a waiting task is true");
  expect(fires.wait_for(60s) && fires.is_done(), "a 1 ms task finishes");
  expect(runs.load() == 1, "only the task not canceled ran");

  std::vector<wheeltimer::PendingTask> left = timer.stop();
  expect(left.size() == 1, "stop() hands back the one task that has not started");
  for (wheeltimer::PendingTask& task : left) {
    expect(task.deadline() == handed_over.deadline(), "the deadline travels with the task");
    expect(successor.adopt(std::move(task)) == handed_over, "adopt() keeps the future");
  }
  expect(handed_over.state() == wheeltimer::TaskState::waiting, "the adopted task waits");
}

}  // namespace

int main() {
  wheeltimer::HashedWheelTimer successor({.tick = 1ms});
  exercise(std::make_shared<wheeltimer::CallerRunsPool>(2, 16), successor);
#if WHEELTIMER_HAS_TBB
  exercise(std::make_shared<wheeltimer::TbbArenaExecutor>(1), successor);
#endif
  expect(successor.pending() == WHEELTIMER_HAS_TBB + 1, "the successor holds every adopted task");
  std::printf("wheeltimer consumer (WHEELTIMER_HAS_TBB=%d): %s\n", WHEELTIMER_HAS_TBB,
              failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
