// Helpers shared by the test files: the one place timing tolerances live.
//
// This suite runs on a shared, noisy 2-core machine (and under sanitizers that slow everything
// 5-20x). "Never early" is asserted exactly; "not too late" only against kLateBound, which is
// generous on purpose. Nothing here sleeps to wait for an event that can be waited on.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

// LeakSanitizer runs in AddressSanitizer builds: GCC says so with __SANITIZE_ADDRESS__, Clang
// through __has_feature. Tests that leak on purpose say so with __lsan::ScopedDisabler.
#if defined(__SANITIZE_ADDRESS__)
#define WHEELTIMER_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define WHEELTIMER_TEST_LSAN 1
#endif
#endif
#if defined(WHEELTIMER_TEST_LSAN)
#include <sanitizer/lsan_interface.h>
#endif

namespace wheeltimer::testing {

using namespace std::chrono_literals;

// How late a task may start before a test calls it a failure: far beyond any tick, so only a hang
// or a lost wake-up trips it.
inline constexpr auto kLateBound = std::chrono::seconds(10);

// A wait limit for events that must happen (a hung test fails instead of blocking CI).
inline constexpr auto kMustHappen = std::chrono::seconds(30);

// A one-shot barrier a task can block on without risking a hang: wait() gives up after
// kMustHappen and reports whether the gate was opened.
class Gate {
 public:
  void open() { promise_.set_value(); }
  bool wait() const { return opened_.wait_for(kMustHappen) == std::future_status::ready; }
  bool is_open() const { return opened_.wait_for(0s) == std::future_status::ready; }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
};

// Where a task (or its captures, or on_error) finds its own future. The test stores the future
// before opening `ready`, and the reader waits on `ready` first, so the handle is never raced.
struct FutureSlot {
  TimerFuture future;
  Gate ready;
};

// One way to run a timer's tasks, for tests parameterised over executors.
struct ExecutorKind {
  std::string name;
  std::function<std::shared_ptr<Executor>()> make;
  friend void PrintTo(const ExecutorKind& kind, std::ostream* os) { *os << kind.name; }
};

// Every executor: none (inline on the indicator), InlineExecutor, a CallerRunsPool with two
// threads and `pool_queue` slots (a small queue makes the indicator run tasks itself now and then),
// and TbbArenaExecutor when the library was built with oneTBB.
inline std::vector<ExecutorKind> executor_kinds(std::size_t pool_queue) {
  std::vector<ExecutorKind> kinds;
  kinds.push_back({"Null", [] { return std::shared_ptr<Executor>(); }});
  kinds.push_back({"Inline", [] { return std::make_shared<InlineExecutor>(); }});
  kinds.push_back({"CallerRunsPool",
                   [pool_queue] { return std::make_shared<CallerRunsPool>(2, pool_queue); }});
#if WHEELTIMER_HAS_TBB
  kinds.push_back({"TbbArena", [] { return std::make_shared<TbbArenaExecutor>(); }});
#endif
  return kinds;
}

// An executor a test leaks on purpose (a timer keeps it for good), made where LeakSanitizer does
// not count it.
template <class ExecutorType, class... Args>
std::shared_ptr<ExecutorType> make_leaked_on_purpose(Args... args) {
#if defined(WHEELTIMER_TEST_LSAN)
  const __lsan::ScopedDisabler leaked_on_purpose;
#endif
  return std::make_shared<ExecutorType>(args...);
}

// Whether the executor `watch` points at is still alive and still runs work.
template <class ExecutorType>
bool kept_and_working(const std::weak_ptr<ExecutorType>& watch) {
  const std::shared_ptr<ExecutorType> kept = watch.lock();
  if (!kept) return false;
  const auto ran = std::make_shared<std::promise<void>>();
  kept->execute([ran] { ran->set_value(); });
  return ran->get_future().wait_for(kMustHappen) == std::future_status::ready;
}

// Runs `job` on one of `executor`'s threads, handing it the executor's last reference, which
// this function takes from the caller: job(std::move(last)) must pass `last` on (to the timer it
// builds), or it is released right there, on the executor's own thread. The job starts only once
// execute() has returned, since it may be what frees the executor. Returns what the job returned,
// or nothing if it had not returned within kMustHappen (it may then outlive this call; it shares
// nothing with it but the heap). execute() must queue the job, not run it on the caller.
template <class Result, class ExecutorType, class Job>
std::optional<Result> run_holding_its_last_reference(std::shared_ptr<ExecutorType> executor,
                                                     Job job) {
  ExecutorType& runs_the_job = *executor;
  auto handed = std::make_shared<std::shared_ptr<ExecutorType>>(std::move(executor));
  const auto outcome = std::make_shared<std::promise<Result>>();
  std::promise<void> handed_over;
  runs_the_job.execute(
      [handed, outcome, job = std::move(job), go = handed_over.get_future()]() mutable {
        go.wait();
        Result result = job(std::move(*handed));  // `last` is gone before the test is told
        outcome->set_value(std::move(result));
      });
  handed_over.set_value();
  auto result = outcome->get_future();
  if (result.wait_for(kMustHappen) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace wheeltimer::testing
