// wheeltimer-soak's vocabulary: its constants, the record of one schedule attempt, and the
// tallies every part of the soak writes. See soak.cpp for what the soak runs and checks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

namespace soak {

using namespace std::chrono_literals;
using wheeltimer::Clock;
using wheeltimer::HashedWheelTimer;
using wheeltimer::PendingTask;
using wheeltimer::TaskState;
using wheeltimer::TimerFuture;
using wheeltimer::TimerOptions;

constexpr std::uint32_t kPoolSize = 1u << 14;  // records in flight at once
#if WHEELTIMER_HAS_TBB
constexpr bool kHasTbb = true;
#else
constexpr bool kHasTbb = false;
#endif
constexpr std::size_t kLiveTimers = 3;
constexpr std::size_t kCappedPending = 2048;  // max_pending of the CallerRunsPool timer
constexpr std::uint32_t kProducerBatch = 32;  // free slots a producer takes at once
constexpr auto kRotatePeriod = 200ms;
constexpr auto kCheckPeriod = 20ms;
constexpr Clock::time_point kNever = Clock::time_point::max();

// What a task does when it runs.
enum class Kind : std::uint8_t {
  plain,
  throws_std,
  throws_int,
  slow,
  spawns,
  spawns_and_cancels,
  child
};
// The last thing the rotator did with a task a stop() handed back.
enum class Handoff : std::uint8_t { none, adopted, run, dropped, refused };

enum Phase : std::uint32_t { kFree = 0, kClaimed = 1, kLive = 2 };
constexpr std::uint32_t phase_of(std::uint32_t word) { return word & 3u; }
constexpr std::uint32_t gen_of(std::uint32_t word) { return word >> 2; }
constexpr std::uint32_t make_word(std::uint32_t gen, Phase phase) { return gen << 2 | phase; }

inline const char* kind_name(Kind kind) {
  constexpr const char* names[] = {"plain",  "throws_std",         "throws_int", "slow",
                                   "spawns", "spawns_and_cancels", "child"};
  return names[static_cast<int>(kind)];
}
inline const char* handoff_name(Handoff h) {
  constexpr const char* names[] = {"none", "adopted", "run", "dropped", "refused"};
  return names[static_cast<int>(h)];
}

// One schedule attempt. Fields without atomics are written by the claiming thread before the
// record turns LIVE (release) and afterwards only by the rotator and checker, both under
// handoff_mutex_; `future` is also read by cancellers under the record's stripe lock.
struct Record {
  std::atomic<std::uint32_t> word{0};
  TimerFuture future;
  Clock::time_point lowest, highest;  // deadline() must lie in [lowest, highest]
  std::uint32_t timer_id = 0;         // the timer that holds it (updated on adopt)
  Kind kind = Kind::plain;
  std::uint8_t param = 0;  // slow: ms to sleep; spawns: the child's delay in ms
  Handoff last_handoff = Handoff::none;
  std::uint16_t handoffs = 0;
  bool flagged = false;  // a violation was already reported for it
  bool lost = false;     // counted as lost by a hand-off; never settles
  // Written by the task, on_error and cancellers.
  std::atomic<int> runs{0};
  std::atomic<Clock::rep> started{0};
  std::atomic<int> errors_reported{0};
  std::atomic<int> cancel_wins{0};
};

struct Options {
  double seconds = 10;
  unsigned producers = 2;
  unsigned cancellers = 1;
  std::uint64_t seed = 0;
  bool json = false;
};

// Statistics; relaxed, only read for the report.
struct Ops {
  std::atomic<std::uint64_t> accepted{0}, refused_stopped{0}, refused_rejected{0};
  std::atomic<std::uint64_t> cancel_calls{0}, cancel_wins{0};
  std::atomic<std::uint64_t> stops{0}, handed_back{0}, adopts{0}, adopt_refused{0};
  std::atomic<std::uint64_t> pending_runs{0}, drops{0};
  std::atomic<std::uint64_t> children{0};
  std::atomic<std::uint64_t> runs{0}, caller_runs{0}, on_error_calls{0}, ran_twice{0}, settled{0};
};

// The checker's tally of settled records; guarded by handoff_mutex_.
struct Outcomes {
  std::uint64_t finished = 0, canceled = 0, adopted_ran = 0, pending_ran = 0, dropped = 0,
                refused = 0;
  std::uint64_t threw = 0, threw_on_timer = 0, early = 0, lost = 0;
  Clock::duration max_late{0};
  double late_sum_ms = 0;
  std::uint64_t late_count = 0;
};

// Collects violations from any thread; keeps the first few and echoes them to stderr.
class Violations {
 public:
  void add(std::string what) {
    const auto n = count_.fetch_add(1, std::memory_order_relaxed);
    if (n < 10) std::fprintf(stderr, "\nVIOLATION: %s\n", what.c_str());
    std::lock_guard lock(mutex_);
    if (first_.size() < 20) first_.push_back(std::move(what));
  }
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  std::vector<std::string> first() {
    std::lock_guard lock(mutex_);
    return first_;
  }

 private:
  std::atomic<std::uint64_t> count_{0};
  std::mutex mutex_;
  std::vector<std::string> first_;
};

struct TimerBox {
  TimerBox(std::uint32_t id, std::string executor, TimerOptions options)
      : id(id), executor(std::move(executor)), timer(std::move(options)) {}
  const std::uint32_t id;
  const std::string executor;
  HashedWheelTimer timer;
};

using Rng = std::mt19937_64;

inline Rng make_rng(std::uint64_t seed, std::uint64_t stream) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(stream)};
  return Rng(seq);
}

inline double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace soak
