// wheeltimer-soak: hammers the public API for a set time and checks API.md's guarantees as it goes.
//
// What runs. Three live HashedWheelTimers, one per executor family: none/InlineExecutor
// (alternating), CallerRunsPool(2, 4) with a max_pending (so both caller-runs back-pressure and
// Rejected happen), and TbbArenaExecutor when built with oneTBB (else a second CallerRunsPool).
// Producer threads schedule tasks on them with random delays: due now, negative, 0-50 ms, some
// 50 ms - 2 s (upper wheel levels of the small wheels, so they cascade, often after being handed
// back and adopted), a few saturated (hours::max(), nanoseconds::max()). Canceller threads cancel
// random outstanding futures. A rotator thread stop()s one timer every 200 ms, installs a fresh
// replacement and hands every PendingTask it got back to a live timer: most are adopt()ed, some due
// ones are run() on the spot, some are dropped. Tasks may throw (std::runtime_error or an int),
// sleep 1-5 ms (slow IO), or schedule a child on their own timer from inside, and cancel it at
// once.
//
// How it checks. Every schedule attempt takes a record from a fixed pool of slots; the task writes
// only its record's atomics (run count, start time). A slot's state word is generation << 2 |
// phase (FREE -> CLAIMED while schedule() is in flight -> LIVE once accepted, FREE again when
// settled). A checker thread settles LIVE records whose future is FINISHED or CANCELED, checks them
// and recycles the slot; a task whose generation no longer matches its slot ran after it settled.
// The rotator matches each PendingTask to its record (by deadline, then future equality), so every
// record knows whether it was handed back and what became of it. --seed fixes every random choice
// (thread interleaving still varies). Invariants (a violation makes the exit code 1):
//   - settled FINISHED: ran exactly once, started at or after its deadline() (wheeltimer::Clock),
//     no cancel() won, exception() matches what the task threw, on_error told exactly once if a
//     timer ran it (never for PendingTask::run());
//   - settled CANCELED: never ran, and exactly one cause: a cancel() that returned true, or its
//     PendingTask was dropped or refused by adopt();
//   - never runs twice, never runs while its future says WAITING or CANCELED, refused never runs;
//   - deadline() is what was asked for;
//   - stop(): pending() == 0 afterwards, a second stop() returns nothing, the tasks come ordered by
//     deadline, each is a WAITING/CANCELED task of that timer, none twice; a WAITING task of the
//     stopped timer that was not handed back is LOST (also counted at the end: everything must be
//     settled once all timers are stopped);
//   - adopt() returns the same future; a refused adopt() cancels it;
//   - on_error calls == tasks that threw on a timer; settled tasks' captures are gone.

#include "soak.hpp"

#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>

namespace soak {

int Soak::run() {
  for (std::size_t i = 0; i < kLiveTimers; ++i) timers_[i] = make_timer(i);
  const bool tty = isatty(fileno(stderr)) != 0;
  const Clock::time_point start = Clock::now();
  last_progress_ = start;
  std::vector<std::thread> threads;
  threads.reserve(2 + options_.cancellers + options_.producers);
  threads.emplace_back([this] { check_periodically(); });
  threads.emplace_back([this] { rotate(); });
  for (unsigned i = 0; i < options_.cancellers; ++i)
    threads.emplace_back([this, i] { cancel_randomly(i); });
  for (unsigned i = 0; i < options_.producers; ++i) threads.emplace_back([this, i] { produce(i); });

  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(options_.seconds));
  const Clock::duration every = tty ? Clock::duration(1s) : Clock::duration(2s);
  for (Clock::time_point next = start + every; next < end; next += every) {
    std::this_thread::sleep_until(next);  // paces the progress line
    progress(start, tty, false);
  }
  std::this_thread::sleep_until(end);

  {
    std::scoped_lock lock(pace_mutex_, free_mutex_);
    stopping_.store(true);
  }
  pace_cv_.notify_all();
  free_cv_.notify_all();
  cancel_budget_.fetch_add(1);
  cancel_budget_.notify_all();
  for (auto& t : threads) t.join();
  const Clock::duration elapsed = Clock::now() - start;
  progress(start, tty, true);

  shut_down();
  const std::uint64_t violations = violations_.count();
  report(elapsed, violations);
  return violations == 0 ? 0 : 1;
}

}  // namespace soak

int main(int argc, char** argv) {
  soak::Options options;
  CLI::App app{"wheeltimer-soak: hammers HashedWheelTimer and checks its guarantees continuously"};
  app.add_option("--seconds", options.seconds, "how long to run")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  app.add_option("--producers", options.producers, "threads that schedule")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--cancellers", options.cancellers, "threads that cancel")
      ->check(CLI::Range(0u, 64u))
      ->capture_default_str();
  CLI::Option* seed =
      app.add_option("--seed", options.seed, "seed for every random choice (default: random)");
  app.add_flag("--json", options.json,
               "print one JSON line at the end on stdout (the table goes to stderr)");
  CLI11_PARSE(app, argc, argv);
  if (seed->count() == 0) options.seed = std::random_device{}();
  std::fprintf(stderr, "wheeltimer-soak: seed %llu (rerun with --seed %llu)\n",
               static_cast<unsigned long long>(options.seed),
               static_cast<unsigned long long>(options.seed));
  return soak::Soak(options).run();
}
