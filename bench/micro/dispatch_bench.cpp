// Dispatch cost per expired task: what the timer's own thread spends to find a due task, start it
// (run it, or hand it to an executor) and free it.
//
// Each batch schedules kTasksPerBatch tasks, untimed, all due at one deadline kLead ahead, then
// measures the CPU time the timer's thread (wheeltimer's indicator, the heap's worker, asio's io
// thread) spends from just before that deadline until the last task has run and every thread has
// gone quiet (wait_quiet(): a timer may still be freeing the batch). CPU time of that one thread,
// rather than wall time until all ran, because wall time would also count the wait for the next 1
// ms tick (up to 1 ms per batch, 50 ns per task) and whatever else the noisy machine runs. The
// window opens kWindowLead before the deadline (this thread sleeps, then spins up to it, so it
// opens on time); anything else the timer's thread does inside the window is counted too.
// Scheduling (and wheeltimer's move from its inbound queue into the wheel) is not counted.
// Handles are dropped at once where the timer owns the task (wheeltimer, heap), so the task's
// memory is freed by the timer (on whichever thread lets go of the task last) and counted;
// asio's steady_timer objects belong to the user and are destroyed afterwards, untimed (its wait
// operation is freed on the io thread).
//
// The `_pool` and `_tbb` rows hand the tasks to an executor with one worker; the time is still the
// indicator's, and the worker's share is in other_threads_cpu_ns_per_task.
//
// Counters: wall_ns_per_task, wall time from the first task's start to the last task's end, per
// task; other_threads_cpu_ns_per_task, the whole process's CPU in the window minus this benchmark
// thread's own (it spins up to the window and polls for the end), per task: the timer's thread
// plus any executor's; discarded_batches, batches re-run because this thread woke too late (see
// below).
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "cpu_clock.hpp"
#include "registry.hpp"
#include "timer_kinds.hpp"

namespace micro {
namespace {

constexpr std::uint64_t kTasksPerBatch = 20'000;
constexpr std::uint64_t kBatches = 10;
constexpr auto kLead = std::chrono::milliseconds(40);
constexpr auto kSleepLead = std::chrono::milliseconds(3);
constexpr auto kWindowLead = std::chrono::microseconds(200);
constexpr int kAttempts = 20;

// Written by one thread at a time: the timer's thread, or the executor's one worker (the pool's
// queue holds a whole batch, so the indicator never runs a task itself); the benchmark thread
// reads it after `done`.
struct Probe {
  std::atomic<std::uint64_t> ran{0};
  std::uint64_t expected = 0;
  Clock::time_point first;
  Clock::time_point last;
  alignas(64) std::atomic<bool> done{false};  // polled by the benchmark thread: its own line

  void reset(std::uint64_t tasks) {
    ran.store(0, std::memory_order_relaxed);
    expected = tasks;
    done.store(false, std::memory_order_relaxed);
  }
  // The task body. One writer, so a plain load and store (no locked read-modify-write).
  void hit() noexcept {
    const std::uint64_t n = ran.load(std::memory_order_relaxed) + 1;
    ran.store(n, std::memory_order_relaxed);
    if (n == 1) first = Clock::now();
    if (n == expected) {
      last = Clock::now();
      done.store(true, std::memory_order_release);
    }
  }
};

// False if the batch has not finished within a generous limit (a broken timer, not a slow one).
bool wait_done(const Probe& probe) {
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!probe.done.load(std::memory_order_acquire)) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

// Forwards every task to an executor, and learns the CPU-time clock of the thread that hands them
// over: a timer calls execute() on its indicator thread only. It costs the indicator one more
// virtual call, a Task move and a relaxed load per task.
class HandOverClock final : public wheeltimer::Executor {
 public:
  explicit HandOverClock(std::shared_ptr<wheeltimer::Executor> executor)
      : executor_(std::move(executor)) {}

  void execute(wheeltimer::Task work) override {
    if (!known_.load(std::memory_order_relaxed)) {  // the indicator is the only writer
      pthread_getcpuclockid(pthread_self(), &clock_);
      known_.store(true, std::memory_order_release);
    }
    executor_->execute(std::move(work));
  }

  // False until a task has been handed over.
  bool indicator_clock(clockid_t& clock) const {
    if (!known_.load(std::memory_order_acquire)) return false;
    clock = clock_;
    return true;
  }

 private:
  std::shared_ptr<wheeltimer::Executor> executor_;
  clockid_t clock_{};
  std::atomic<bool> known_{false};
};

// The CPU time of the process's threads other than the calling one.
std::int64_t other_threads_cpu_ns() {
  return cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

// Waits until the timer's thread and every other thread have gone quiet: after the last task has
// run, a timer may still be letting go of the batch (wheeltimer's indicator frees the tasks an
// executor has finished), and an executor's worker may spin before it sleeps. Quiet: less than
// kQuietShare of a period used. Gives up after a second, as a thread that never rests would hold
// it forever.
void wait_quiet(clockid_t timer_clock) {
  constexpr auto kPeriod = std::chrono::microseconds(200);
  constexpr std::int64_t kQuietNs = 2'000;  // 1% of the period
  const auto give_up = Clock::now() + std::chrono::seconds(1);
  std::int64_t timer_before = cpu_ns(timer_clock);
  std::int64_t others_before = other_threads_cpu_ns();
  while (Clock::now() < give_up) {
    std::this_thread::sleep_for(kPeriod);
    const std::int64_t timer_now = cpu_ns(timer_clock);
    const std::int64_t others_now = other_threads_cpu_ns();
    if (timer_now - timer_before < kQuietNs && others_now - others_before < kQuietNs) return;
    timer_before = timer_now;
    others_before = others_now;
  }
}

// Runs one task on the thread that runs the timer's tasks, to learn that thread's CPU-time clock.
template <class Kind>
bool runner_clock(Kind& timer, clockid_t& clock) {
  std::atomic<bool> known{false};
  auto handle = timer.schedule_at(
      [&clock, &known] {
        pthread_getcpuclockid(pthread_self(), &clock);
        known.store(true, std::memory_order_release);
      },
      Clock::now());
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  while (!known.load(std::memory_order_acquire)) {
    if (Clock::now() > give_up) {
      timer.cancel(handle);  // it must not run later, into this dead stack frame
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// `hand_over`, when given, is the timer's executor: the time is then the indicator's, not that of
// the thread running the tasks.
template <class Kind>
void bm_dispatch(benchmark::State& state, Kind& timer, const HandOverClock* hand_over = nullptr) {
  clockid_t clock{};
  if (!runner_clock(timer, clock)) {
    state.SkipWithError("the timer never ran a task due now");
    return;
  }
  if (hand_over != nullptr && !hand_over->indicator_clock(clock)) {
    state.SkipWithError("a task ran without being handed to the executor");
    return;
  }
  // On the heap: should a broken timer never finish a batch, the tasks it still holds may run after
  // this function has given up, so the probe is then left to them.
  auto owned_probe = std::make_unique<Probe>();
  Probe& probe = *owned_probe;
  std::vector<typename Kind::Handle> handles;
  handles.reserve(kTasksPerBatch);
  std::chrono::nanoseconds wall{0};
  std::int64_t other_threads_cpu = 0;
  int discarded = 0;

  while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(kTasksPerBatch))) {
    // On a loaded machine this thread may wake too late to open the window before the deadline;
    // such a batch is run to the end but not counted, and tried again.
    bool measured = false;
    for (int attempt = 0; attempt < kAttempts && !measured; ++attempt) {
      probe.reset(kTasksPerBatch);
      const Clock::time_point deadline = Clock::now() + kLead;
      for (std::uint64_t i = 0; i < kTasksPerBatch; ++i) {
        auto handle = timer.schedule_at([p = &probe] { p->hit(); }, deadline);
        if constexpr (handle_owns_timer<Kind>) handles.push_back(std::move(handle));
      }
      std::this_thread::sleep_until(deadline - kSleepLead);
      while (Clock::now() < deadline - kWindowLead) {
      }
      const std::int64_t cpu_before = cpu_ns(clock);
      const std::int64_t others_before = other_threads_cpu_ns();
      measured = Clock::now() < deadline && probe.ran.load(std::memory_order_relaxed) == 0;
      if (!wait_done(probe)) {
        state.SkipWithError("a batch of due tasks did not finish within 10 s");
        static_cast<void>(owned_probe.release());
        return;
      }
      wait_quiet(clock);
      const std::int64_t cpu_after = cpu_ns(clock);
      const std::int64_t others_after = other_threads_cpu_ns();
      if (measured) {
        state.SetIterationTime(static_cast<double>(cpu_after - cpu_before) * 1e-9);
        wall += probe.last - probe.first;
        other_threads_cpu += others_after - others_before;
      } else {
        ++discarded;
      }
      handles.clear();  // untimed: asio's expired timer objects, which the user owns
    }
    if (!measured) {
      state.SkipWithError("could not open the measuring window before the deadline");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  if (state.iterations() > 0) {
    state.counters["wall_ns_per_task"] =
        static_cast<double>(wall.count()) / static_cast<double>(state.iterations());
    state.counters["other_threads_cpu_ns_per_task"] =
        static_cast<double>(other_threads_cpu) / static_cast<double>(state.iterations());
  }
  state.counters["discarded_batches"] = discarded;
}

void configure(benchmark::internal::Benchmark* bench) {
  bench->Iterations(static_cast<benchmark::IterationCount>(kTasksPerBatch * kBatches))
      ->UseManualTime();
}

}  // namespace

void register_dispatch_benchmarks() {
  // wheeltimer through the InlineExecutor (the executor interface, one virtual call per task) ...
  configure(benchmark::RegisterBenchmark("BM_Dispatch/wheeltimer", [](benchmark::State& state) {
    WheelKind timer(std::make_shared<wheeltimer::InlineExecutor>());
    bm_dispatch(state, timer);
  }));
  // ... and with no executor, the default, where the indicator runs tasks itself.
  configure(benchmark::RegisterBenchmark("BM_Dispatch/wheeltimer_no_executor",
                                        [](benchmark::State& state) {
                                          WheelKind timer;
                                          bm_dispatch(state, timer);
                                        }));
  // Handing tasks to one worker, through a pool whose queue holds a whole batch (so the indicator
  // never runs one itself) and through an arena of one.
  configure(benchmark::RegisterBenchmark(
      "BM_Dispatch/wheeltimer_pool", [](benchmark::State& state) {
        const auto hand_over = std::make_shared<HandOverClock>(
            std::make_shared<wheeltimer::CallerRunsPool>(1, kTasksPerBatch));
        WheelKind timer(hand_over);
        bm_dispatch(state, timer, hand_over.get());
      }));
#if WHEELTIMER_HAS_TBB
  configure(benchmark::RegisterBenchmark("BM_Dispatch/wheeltimer_tbb", [](benchmark::State& state) {
    const auto hand_over =
        std::make_shared<HandOverClock>(std::make_shared<wheeltimer::TbbArenaExecutor>(1));
    WheelKind timer(hand_over);
    bm_dispatch(state, timer, hand_over.get());
  }));
#endif
  configure(benchmark::RegisterBenchmark("BM_Dispatch/heap", [](benchmark::State& state) {
    HeapTimer timer;
    bm_dispatch(state, timer);
  }));
#if WHEELTIMER_MICRO_ASIO
  configure(benchmark::RegisterBenchmark("BM_Dispatch/asio", [](benchmark::State& state) {
    AsioTimer timer;
    bm_dispatch(state, timer);
  }));
#endif
}

}  // namespace micro
