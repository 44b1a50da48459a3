// A program that uses wheeltimer as the README's "Usage" shows, built outside this project: CI
// builds it against the library pulled in as a Meson subproject, and against an installed copy
// found through pkg-config (.ci/consumer). It exits 0 only if every outcome is the expected one.
// Its argument, "with-tbb" or "without-tbb", says how the library was built: config.hpp must then
// define WHEELTIMER_HAS_TBB to 1, or leave it undefined.
#include <wheeltimer/wheeltimer.hpp>

#if defined(WHEELTIMER_HAS_TBB) && WHEELTIMER_HAS_TBB != 1
#error "WHEELTIMER_HAS_TBB is defined, but not to 1"
#endif

#include <atomic>
#include <cstdio>
#include <memory>
#include <string_view>
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

// Runs one task through `executor` and cancels another. The third, due at `far`, is handed back
// by stop() and adopted by `successor`; its original future is returned.
wheeltimer::TimerFuture exercise(std::shared_ptr<wheeltimer::Executor> executor,
                                 wheeltimer::HashedWheelTimer& successor,
                                 wheeltimer::Clock::time_point far) {
  std::atomic<int> runs{0};
  wheeltimer::HashedWheelTimer timer({.tick = 1ms, .wheel_size = 512, .executor = executor});
  wheeltimer::TimerFuture fires = timer.schedule([&runs] { runs.fetch_add(1); }, 1ms);
  wheeltimer::TimerFuture canceled = timer.schedule([&runs] { runs.fetch_add(1); }, 1h);
  wheeltimer::TimerFuture handed_over = timer.schedule_at([] {}, far);

  expect(canceled.cancel(), "cancel() of a waiting task is true");
  expect(fires.wait_for(60s) && fires.is_done(), "a 1 ms task finishes");
  expect(runs.load() == 1, "only the task not canceled ran");

  std::vector<wheeltimer::PendingTask> left = timer.stop();
  expect(left.size() == 1, "stop() hands back the one task that has not started");
  for (wheeltimer::PendingTask& task : left) {
    expect(task.deadline() == far, "the deadline travels with the task");
    wheeltimer::TimerFuture adopted = successor.adopt(std::move(task));
    expect(adopted.deadline() == far, "adopt() keeps the deadline");
  }
  expect(handed_over.state() == wheeltimer::TaskState::waiting, "the adopted task waits");
  return handed_over;
}

// Whether `call` throws an `Error`.
template <class Error, class Call>
bool throws(Call call) {
  try {
    call();
  } catch (const Error&) {
    return true;
  }
  return false;
}

// The library's exceptions reach this program and are caught by their types.
void expect_catchable_errors() {
  wheeltimer::HashedWheelTimer timer({.tick = 1ms, .max_pending = 1});
  timer.schedule([] {}, 1h);  // the one task max_pending allows
  expect(throws<wheeltimer::Rejected>([&timer] { timer.schedule([] {}, 1h); }),
         "a schedule() past max_pending throws wheeltimer::Rejected");
  timer.stop();
  expect(throws<wheeltimer::Stopped>([&timer] { timer.schedule([] {}, 1h); }),
         "a schedule() after stop() throws wheeltimer::Stopped");
}

}  // namespace

int main(int argc, char** argv) {
#if WHEELTIMER_HAS_TBB
  constexpr std::string_view built = "with-tbb";
#else
  constexpr std::string_view built = "without-tbb";
#endif
  expect(argc == 2 && argv[1] == built, "config.hpp tells how the library was built");
  const auto far = wheeltimer::Clock::now() + 2h;
  wheeltimer::HashedWheelTimer successor({.tick = 1ms});
  std::vector<wheeltimer::TimerFuture> adopted;
  adopted.push_back(exercise(std::make_shared<wheeltimer::CallerRunsPool>(2, 16), successor, far));
#if WHEELTIMER_HAS_TBB
  adopted.push_back(exercise(std::make_shared<wheeltimer::TbbArenaExecutor>(1), successor, far));
#endif
  expect(successor.pending() == adopted.size(), "the successor holds every adopted task");
  // The futures the first timers gave out still control the tasks the successor now holds.
  for (wheeltimer::TimerFuture& future : adopted) expect(future.cancel(), "the old future cancels");
  expect(successor.pending() == 0, "canceling through the old futures empties the successor");
  expect_catchable_errors();
  std::printf("wheeltimer consumer (%s): %s\n", built.data(), failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
