// Helpers shared by the test files: the one place timing tolerances live.
//
// This suite runs on a shared, noisy 2-core machine (and under sanitizers that slow everything
// 5-20x). "Never early" is asserted exactly; "not too late" only against kLateBound, which is
// generous on purpose. Nothing here sleeps to wait for an event that can be waited on.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
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

// ThreadSanitizer, announced the same two ways: tests that would take minutes under it do less.
#if defined(__SANITIZE_THREAD__)
#define WHEELTIMER_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WHEELTIMER_TEST_TSAN 1
#endif
#endif
#ifndef WHEELTIMER_TEST_TSAN
#define WHEELTIMER_TEST_TSAN 0
#endif

namespace wheeltimer::testing {

using namespace std::chrono_literals;

// How late a task may start before a test calls it a failure: far beyond any tick, so only a hang
// or a lost wake-up trips it.
inline constexpr auto kLateBound = std::chrono::seconds(10);

// A wait limit for events that must happen (a hung test fails instead of blocking CI).
inline constexpr auto kMustHappen = std::chrono::seconds(30);

// Busy for `length`, to put the next step at a chosen point of another thread's work: a sleep or a
// yield would hand over a whole time slice. Not a way to wait for an event.
inline void spin_for(Clock::duration length) {
  const Clock::time_point end = Clock::now() + length;
  while (Clock::now() < end) {
  }
}

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

// A one-thread CallerRunsPool whose thread a job holds until the HeldPool is destroyed (or, so
// that a broken test cannot hang, kMustHappen has passed): what a timer hands it stays queued and
// WAITING, so the timer's stop() hands it back however late that comes, instead of racing the
// task's deadline.
class HeldPool {
 public:
  HeldPool() {
    pool_->execute([gate = gate_] { gate->wait(); });
  }
  ~HeldPool() { gate_->open(); }
  HeldPool(const HeldPool&) = delete;
  HeldPool& operator=(const HeldPool&) = delete;

  const std::shared_ptr<CallerRunsPool>& pool() const { return pool_; }

 private:
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::shared_ptr<CallerRunsPool> pool_ = std::make_shared<CallerRunsPool>(1, 64);
};

// Forwards to another executor and lets the test wait until the timer has handed over `n` tasks:
// how a test knows a task sits in the real executor's queue.
class HandOffCounter final : public Executor {
 public:
  explicit HandOffCounter(std::shared_ptr<Executor> inner) : inner_(std::move(inner)) {}
  void execute(Task work) override {
    inner_->execute(std::move(work));
    std::lock_guard lock(mutex_);
    ++handed_;
    changed_.notify_all();
  }
  bool wait_handed(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kMustHappen, [&] { return handed_ >= n; });
  }
  std::size_t handed() {
    std::lock_guard lock(mutex_);
    return handed_;
  }

 private:
  std::shared_ptr<Executor> inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t handed_ = 0;
};

// Whether thread `tid` of this process sleeps in the kernel (its state in /proc is S).
inline bool thread_sleeps(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t name_end = line.rfind(')');  // the state follows the name, which may hold ')'
  return name_end != std::string::npos && line.compare(name_end, 3, ") S") == 0;
}

// A thread blocked in future.wait_for(kMustHappen). The constructor returns only once the thread
// sleeps in the kernel (or its wait is over), so what the test does next finds a waiter to wake,
// not one still on its way to the wait. woke() joins it and tells whether the wait saw the task
// settle within kLateBound: a wait that ran to its limit also finds the task settled, but only
// because it looks again then, so that does not count as woken.
class SleepingWaiter {
 public:
  explicit SleepingWaiter(TimerFuture future)
      : thread_([this, future] {
          tid_.store(gettid());
          const auto begin = std::chrono::steady_clock::now();
          const bool settled = future.wait_for(kMustHappen);
          woke_ = settled && std::chrono::steady_clock::now() - begin < kLateBound;
          done_.store(true);
        }) {
    while (!done_.load() && (tid_.load() == 0 || !thread_sleeps(tid_.load()))) {
      std::this_thread::yield();
    }
  }
  ~SleepingWaiter() {
    if (thread_.joinable()) thread_.join();
  }
  SleepingWaiter(const SleepingWaiter&) = delete;
  SleepingWaiter& operator=(const SleepingWaiter&) = delete;

  bool woke() {
    thread_.join();
    return woke_;
  }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> done_{false};
  bool woke_ = false;  // written by the thread before it ends; read after join()
  std::thread thread_;  // last: it starts once the fields above exist
};

// What a call of timer.stop() did, from code that may not call it (a task, on_error, the
// indicator): "returned", "logic_error" or "another exception".
inline std::string what_stop_did(Timer& timer) {
  try {
    timer.stop();
    return "returned";
  } catch (const std::logic_error&) {
    return "logic_error";
  } catch (...) {
    return "another exception";
  }
}

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
