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
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <wheeltimer/wheeltimer.hpp>

// TimerOptions{.tick = ...} is the documented way to build options; -Wextra would flag every
// member left to its default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace {

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

const char* kind_name(Kind kind) {
  constexpr const char* names[] = {"plain",  "throws_std",         "throws_int", "slow",
                                   "spawns", "spawns_and_cancels", "child"};
  return names[static_cast<int>(kind)];
}
const char* handoff_name(Handoff h) {
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

Rng make_rng(std::uint64_t seed, std::uint64_t stream) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(stream)};
  return Rng(seq);
}

// 2% throw a std::runtime_error, 1% an int, 1% are slow, 2% schedule a child on their own timer
// and 1% schedule one and cancel it at once; the rest are plain.
Kind pick_kind(Rng& rng) {
  const int per_mille = static_cast<int>(rng() % 1000);
  if (per_mille < 20) return Kind::throws_std;
  if (per_mille < 30) return Kind::throws_int;
  if (per_mille < 40) return Kind::slow;
  if (per_mille < 60) return Kind::spawns;
  if (per_mille < 70) return Kind::spawns_and_cancels;
  return Kind::plain;
}

// Indicator threads are named "soak-<i|p|t>-<id>" by the kind of their timer's executor. A task
// that runs on the indicator of a CallerRunsPool timer shows caller-runs back-pressure at work.
bool on_pool_indicator() {
  thread_local const bool value = [] {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    return std::string_view(name).starts_with("soak-p-");
  }();
  return value;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

class Soak {
 public:
  explicit Soak(const Options& options) : options_(options) {
    free_.reserve(kPoolSize);
    for (std::uint32_t slot = kPoolSize; slot-- > 0;) free_.push_back(slot);
  }
  int run();

 private:
  // 32 bytes and nothrow-movable, so wheeltimer::Task stores it without a heap allocation.
  struct SoakTask {
    Soak* soak;
    std::uint32_t slot;
    std::uint32_t gen;
    std::shared_ptr<TimerBox> own;  // only for tasks that schedule on their own timer
    void operator()() { soak->run_task(slot, gen, own.get()); }
  };

  // --- timers
  std::shared_ptr<TimerBox> make_timer(std::size_t index);
  std::array<std::shared_ptr<TimerBox>, kLiveTimers> live_timers();
  std::vector<PendingTask> stop_and_check(TimerBox& box);

  // --- records
  std::mutex& stripe(std::uint32_t slot) { return stripes_[slot % stripes_.size()]; }
  bool take_free(std::vector<std::uint32_t>& cache);
  std::optional<std::uint32_t> try_take_free();
  void give_back(std::span<const std::uint32_t> slots);
  std::uint32_t claim(std::uint32_t slot, Kind kind, std::uint32_t timer_id);
  bool finish_claim(std::uint32_t slot, TimerFuture future);
  template <class Delay>
  TimerFuture schedule_after(Record& r, TimerBox& box, SoakTask task, Delay delay);
  TimerFuture schedule_at(Record& r, TimerBox& box, SoakTask task, Clock::time_point deadline);
  template <class Schedule>
  TimerFuture attempt(Schedule&& schedule);
  std::string describe(std::uint32_t slot, const Record& r);
  void flag(std::uint32_t slot, Record& r, const std::string& what);

  // --- threads
  void produce(unsigned index);
  void cancel_randomly(unsigned index);
  void rotate();
  void check_periodically();
  bool pace(Clock::duration period);  // false once stopping

  // --- what tasks, on_error and the checks do
  void run_task(std::uint32_t slot, std::uint32_t gen, TimerBox* own);
  void spawn_child(TimerBox& own, std::uint32_t delay_ms, bool cancel_at_once);
  void on_error(std::exception_ptr error);
  void wait_for_claims();
  void hand_off(TimerBox& stopped, std::vector<PendingTask> tasks,
                std::span<const std::shared_ptr<TimerBox>> targets, Rng& rng);
  void check_pass(bool final);
  void settle(std::uint32_t slot, Record& r, TaskState state);
  void shut_down();

  // --- output
  void progress(Clock::time_point start, bool tty, bool final_line);
  void report(Clock::duration elapsed, std::uint64_t violations);

  const Options options_;
  std::unique_ptr<Record[]> records_ = std::make_unique<Record[]>(kPoolSize);
  std::array<std::mutex, 64> stripes_;

  std::mutex free_mutex_;
  std::condition_variable free_cv_;
  std::vector<std::uint32_t> free_;  // guarded by free_mutex_

  std::mutex timers_mutex_;
  std::array<std::shared_ptr<TimerBox>, kLiveTimers> timers_;  // guarded by timers_mutex_
  std::atomic<std::uint64_t> timers_version_{0};               // bumped on every replacement
  std::vector<std::shared_ptr<TimerBox>> graveyard_;  // stopped timers tasks may still capture
  std::atomic<std::uint32_t> next_timer_id_{0};
  std::array<std::string, kLiveTimers> executor_names_;

  std::mutex handoff_mutex_;  // the rotator's hand-off vs the checker's settling
  Outcomes outcomes_;         // guarded by handoff_mutex_

  // Producers grant cancels; cancellers take them, so cancelling keeps pace with scheduling.
  std::atomic<std::int32_t> cancel_budget_{0};  // futex-sized for wait()

  std::mutex pace_mutex_;
  std::condition_variable pace_cv_;
  std::atomic<bool> stopping_{false};

  Ops ops_;
  Violations violations_;
  std::uint64_t last_progress_accepted_ = 0, last_progress_cancels_ = 0;
  Clock::time_point last_progress_{};
};

// ---------------------------------------------------------------------------------------------
// Timers

std::shared_ptr<TimerBox> Soak::make_timer(std::size_t index) {
  const std::uint32_t id = next_timer_id_.fetch_add(1);
  // Small wheels: tasks land on upper levels and cascade down.
  static constexpr std::size_t kWheelSizes[] = {1, 8, 64, 512};
  const char role = index == 0 ? 'i' : index == 1 || !kHasTbb ? 'p' : 't';
  TimerOptions options{.tick = 1ms,
                       .wheel_size = kWheelSizes[(id / kLiveTimers) % std::size(kWheelSizes)],
                       .on_error = [this](std::exception_ptr e) { on_error(std::move(e)); },
                       .thread_name = std::string("soak-") + role + "-" + std::to_string(id)};
  std::string name;
  switch (index) {
    case 0:  // alternate between no executor and InlineExecutor: both run on the indicator
      if (id % 2 == 0) {
        name = "none (indicator)";
      } else {
        options.executor = std::make_shared<wheeltimer::InlineExecutor>();
        name = "InlineExecutor";
      }
      break;
    case 1:
      options.executor = std::make_shared<wheeltimer::CallerRunsPool>(2, 4);
      options.max_pending = kCappedPending;
      name = "CallerRunsPool(2, 4), max_pending " + std::to_string(kCappedPending);
      break;
    default:
#if WHEELTIMER_HAS_TBB
      options.executor = std::make_shared<wheeltimer::TbbArenaExecutor>();
      name = "TbbArenaExecutor()";
#else
      options.executor = std::make_shared<wheeltimer::CallerRunsPool>(1, 2);
      name = "CallerRunsPool(1, 2) (built without oneTBB)";
#endif
      break;
  }
  if (index != 0) executor_names_[index] = name;
  return std::make_shared<TimerBox>(id, std::move(name), std::move(options));
}

std::array<std::shared_ptr<TimerBox>, kLiveTimers> Soak::live_timers() {
  std::lock_guard lock(timers_mutex_);
  return timers_;
}

std::vector<PendingTask> Soak::stop_and_check(TimerBox& box) {
  std::vector<PendingTask> tasks = box.timer.stop();
  ops_.stops.fetch_add(1, std::memory_order_relaxed);
  const std::string which = "timer " + std::to_string(box.id) + " (" + box.executor + ")";
  if (const std::size_t pending = box.timer.pending(); pending != 0)
    violations_.add("pending() = " + std::to_string(pending) + " after stop() of " + which);
  if (!box.timer.stop().empty()) violations_.add("a second stop() of " + which + " returned tasks");
  if (!std::is_sorted(tasks.begin(), tasks.end(), [](const PendingTask& a, const PendingTask& b) {
        return a.deadline() < b.deadline();
      })) {
    violations_.add("stop() of " + which + " returned tasks out of deadline order");
  }
  return tasks;
}

// ---------------------------------------------------------------------------------------------
// Records

// Producers take slots in batches and block while the pool is exhausted (the checker frees).
bool Soak::take_free(std::vector<std::uint32_t>& cache) {
  if (!cache.empty()) return true;
  std::unique_lock lock(free_mutex_);
  free_cv_.wait(lock, [&] { return !free_.empty() || stopping_.load(); });
  if (free_.empty()) return false;
  const std::size_t n = std::min<std::size_t>(kProducerBatch, free_.size());
  cache.assign(free_.end() - static_cast<std::ptrdiff_t>(n), free_.end());
  free_.resize(free_.size() - n);
  return true;
}

// Tasks never block for a slot: the rotator may be waiting for them inside stop().
std::optional<std::uint32_t> Soak::try_take_free() {
  std::lock_guard lock(free_mutex_);
  if (free_.empty()) return std::nullopt;
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void Soak::give_back(std::span<const std::uint32_t> slots) {
  if (slots.empty()) return;
  {
    std::lock_guard lock(free_mutex_);
    free_.insert(free_.end(), slots.begin(), slots.end());
  }
  free_cv_.notify_all();
}

// FREE -> CLAIMED; returns the generation the task must carry.
std::uint32_t Soak::claim(std::uint32_t slot, Kind kind, std::uint32_t timer_id) {
  Record& r = records_[slot];
  const std::uint32_t gen = gen_of(r.word.load(std::memory_order_relaxed));
  r.runs.store(0, std::memory_order_relaxed);
  r.started.store(0, std::memory_order_relaxed);
  r.errors_reported.store(0, std::memory_order_relaxed);
  r.cancel_wins.store(0, std::memory_order_relaxed);
  r.kind = kind;
  r.param = 0;
  r.timer_id = timer_id;
  r.last_handoff = Handoff::none;
  r.handoffs = 0;
  r.flagged = false;
  r.lost = false;
  // Release: a task that runs before the record is LIVE (due now) sees the reset counters.
  r.word.store(make_word(gen, kClaimed), std::memory_order_release);
  return gen;
}

// CLAIMED -> LIVE if the schedule was accepted, else back to FREE (returns false; the caller
// recycles the slot). Wakes the rotator if it waits for this claim.
bool Soak::finish_claim(std::uint32_t slot, TimerFuture future) {
  Record& r = records_[slot];
  const std::uint32_t gen = gen_of(r.word.load(std::memory_order_relaxed));
  const bool accepted = future.valid();
  if (accepted) {
    r.future = std::move(future);
    r.word.store(make_word(gen, kLive), std::memory_order_release);  // publishes the fields
  } else {
    if (r.runs.load() != 0)
      violations_.add("a refused task ran (slot " + std::to_string(slot) + ")");
    r.word.store(make_word(gen + 1, kFree), std::memory_order_release);
  }
  r.word.notify_all();
  return accepted;
}

template <class Schedule>
TimerFuture Soak::attempt(Schedule&& schedule) {
  try {
    TimerFuture future = schedule();
    ops_.accepted.fetch_add(1, std::memory_order_relaxed);
    return future;
  } catch (const wheeltimer::Stopped&) {
    ops_.refused_stopped.fetch_add(1, std::memory_order_relaxed);
  } catch (const wheeltimer::Rejected&) {
    ops_.refused_rejected.fetch_add(1, std::memory_order_relaxed);
  }
  return {};
}

template <class Delay>
TimerFuture Soak::schedule_after(Record& r, TimerBox& box, SoakTask task, Delay delay) {
  const Clock::time_point before = Clock::now();
  TimerFuture f = attempt([&] { return box.timer.schedule(std::move(task), delay); });
  const Clock::time_point after = Clock::now();
  r.lowest = wheeltimer::saturating_deadline(delay, before);
  r.highest = wheeltimer::saturating_deadline(delay, after);
  return f;
}

TimerFuture Soak::schedule_at(Record& r, TimerBox& box, SoakTask task, Clock::time_point deadline) {
  r.lowest = r.highest = deadline;
  return attempt([&] { return box.timer.schedule_at(std::move(task), deadline); });
}

std::string Soak::describe(std::uint32_t slot, const Record& r) {
  const TaskState state = r.future.state();
  std::string out =
      "slot " + std::to_string(slot) + " gen " + std::to_string(gen_of(r.word.load())) + " kind " +
      kind_name(r.kind) + " timer " + std::to_string(r.timer_id) + " state " +
      std::string(wheeltimer::to_string(state)) + " runs " + std::to_string(r.runs.load()) +
      " cancel_wins " + std::to_string(r.cancel_wins.load()) + " on_error " +
      std::to_string(r.errors_reported.load()) + " handoffs " + std::to_string(r.handoffs) +
      " last_handoff " + handoff_name(r.last_handoff);
  const Clock::time_point deadline = r.future.deadline();
  char when[96] = " deadline never";
  if (deadline != kNever) {
    const int n =
        std::snprintf(when, sizeof when, " deadline %.3f ms from now", ms(deadline - Clock::now()));
    if (r.runs.load() != 0) {
      const Clock::time_point started{Clock::duration(r.started.load())};
      std::snprintf(when + n, sizeof when - n, ", started %.3f ms after it",
                    ms(started - deadline));
    }
  }
  out += when;
  return out;
}

// Reports at most one violation per record (the rest would repeat it).
void Soak::flag(std::uint32_t slot, Record& r, const std::string& what) {
  if (r.flagged) return;
  r.flagged = true;
  violations_.add(what + ": " + describe(slot, r));
}

// ---------------------------------------------------------------------------------------------
// Threads

bool Soak::pace(Clock::duration period) {
  std::unique_lock lock(pace_mutex_);
  return !pace_cv_.wait_for(lock, period, [&] { return stopping_.load(); });
}

void Soak::produce(unsigned index) {
  Rng rng = make_rng(options_.seed, 100 + index);
  std::vector<std::uint32_t> cache;
  std::array<std::shared_ptr<TimerBox>, kLiveTimers> timers;
  std::uint64_t version = ~std::uint64_t{0};
  while (!stopping_.load(std::memory_order_relaxed) && take_free(cache)) {
    // A cached timer may have been stopped meanwhile: that is where Stopped comes from.
    if (const auto v = timers_version_.load(); v != version) {
      version = v;
      timers = live_timers();
    }
    const std::shared_ptr<TimerBox>& box = timers[rng() % kLiveTimers];
    const std::uint32_t slot = cache.back();
    cache.pop_back();

    const Kind kind = pick_kind(rng);
    const std::uint32_t gen = claim(slot, kind, box->id);
    Record& r = records_[slot];
    if (kind == Kind::slow) r.param = static_cast<std::uint8_t>(1 + rng() % 5);
    if (kind == Kind::spawns) r.param = static_cast<std::uint8_t>(rng() % 21);
    const bool spawns = kind == Kind::spawns || kind == Kind::spawns_and_cancels;
    SoakTask task{this, slot, gen, spawns ? box : nullptr};

    const int roll = static_cast<int>(rng() % 1000);
    const auto micros = std::chrono::microseconds(rng() % 50'001);
    TimerFuture f;
    if (roll < 3) {
      f = schedule_after(r, *box, std::move(task), std::chrono::hours::max());
    } else if (roll < 5) {
      f = schedule_after(r, *box, std::move(task), std::chrono::nanoseconds::max());
    } else if (roll < 55) {
      f = schedule_after(r, *box, std::move(task), 0ms);
    } else if (roll < 105) {
      f = schedule_after(r, *box, std::move(task), -micros);  // negative: due now
    } else if (roll < 500) {
      f = schedule_at(r, *box, std::move(task), Clock::now() + micros);
    } else if (roll < 560) {
      f = schedule_after(r, *box, std::move(task), 50ms + micros * 39);  // 50 ms - 2 s
    } else {
      f = schedule_after(r, *box, std::move(task), micros);
    }
    const bool accepted = f.valid();
    // A few are canceled by their producer at once: for due-now ones this races the timer.
    if (accepted && rng() % 100 < 3) {
      ops_.cancel_calls.fetch_add(1, std::memory_order_relaxed);
      if (f.cancel()) {
        r.cancel_wins.fetch_add(1);
        ops_.cancel_wins.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (!finish_claim(slot, std::move(f))) {
      cache.push_back(slot);
      continue;
    }
    if (options_.cancellers != 0 && rng() % 3 == 0) {
      cancel_budget_.fetch_add(1);
      cancel_budget_.notify_one();
    }
  }
  give_back(cache);
}

// Cancels a random LIVE record per cancel the producers granted, whatever its state: some are
// WAITING in the wheel or in an executor's queue, some running, some done, some handed back.
void Soak::cancel_randomly(unsigned index) {
  Rng rng = make_rng(options_.seed, 200 + index);
  for (;;) {
    std::int32_t budget = cancel_budget_.load();
    while (budget <= 0 && !stopping_.load()) {
      cancel_budget_.wait(budget);
      budget = cancel_budget_.load();
    }
    if (stopping_.load()) return;
    if (!cancel_budget_.compare_exchange_weak(budget, budget - 1)) continue;
    const std::uint32_t start = static_cast<std::uint32_t>(rng() % kPoolSize);
    for (std::uint32_t i = 0; i < kPoolSize; ++i) {
      const std::uint32_t slot = (start + i) % kPoolSize;
      Record& r = records_[slot];
      if (phase_of(r.word.load(std::memory_order_relaxed)) != kLive) continue;
      // The stripe lock keeps the checker from recycling the record between cancel() and the
      // count, so it never sees CANCELED without the winning cancel() recorded.
      std::lock_guard lock(stripe(slot));
      if (phase_of(r.word.load(std::memory_order_acquire)) != kLive) continue;
      ops_.cancel_calls.fetch_add(1, std::memory_order_relaxed);
      TimerFuture f = r.future;
      if (f.cancel()) {
        r.cancel_wins.fetch_add(1);
        ops_.cancel_wins.fetch_add(1, std::memory_order_relaxed);
      }
      break;
    }
  }
}

void Soak::rotate() {
  Rng rng = make_rng(options_.seed, 300);
  for (std::size_t index = 0; pace(kRotatePeriod); index = (index + 1) % kLiveTimers) {
    {
      std::lock_guard handoff(handoff_mutex_);
      std::shared_ptr<TimerBox> old = live_timers()[index];
      std::vector<PendingTask> tasks = stop_and_check(*old);
      {
        std::lock_guard lock(timers_mutex_);
        timers_[index] = make_timer(index);
      }
      timers_version_.fetch_add(1);
      hand_off(*old, std::move(tasks), live_timers(), rng);
      graveyard_.push_back(std::move(old));
    }
    // A stopped timer goes once no task captures it any more, so no task ever destroys a timer.
    std::erase_if(graveyard_,
                  [](const std::shared_ptr<TimerBox>& box) { return box.use_count() == 1; });
  }
}

void Soak::check_periodically() {
  while (pace(kCheckPeriod)) check_pass(false);
}

// ---------------------------------------------------------------------------------------------
// Tasks and on_error

void Soak::run_task(std::uint32_t slot, std::uint32_t gen, TimerBox* own) {
  const Clock::time_point now = Clock::now();
  ops_.runs.fetch_add(1, std::memory_order_relaxed);
  if (on_pool_indicator()) ops_.caller_runs.fetch_add(1, std::memory_order_relaxed);
  Record& r = records_[slot];
  if (gen_of(r.word.load(std::memory_order_acquire)) != gen) {
    ops_.ran_twice.fetch_add(1, std::memory_order_relaxed);
    violations_.add("a task ran after it was settled or refused (slot " + std::to_string(slot) +
                    " gen " + std::to_string(gen) + ")");
    return;
  }
  r.started.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  if (r.runs.fetch_add(1, std::memory_order_acq_rel) != 0) {
    ops_.ran_twice.fetch_add(1, std::memory_order_relaxed);
    violations_.add("a task started a second time (slot " + std::to_string(slot) + ")");
  }
  switch (r.kind) {
    case Kind::throws_std:
      throw std::runtime_error("soak task " + std::to_string(slot));
    case Kind::throws_int:
      throw static_cast<int>(slot);
    case Kind::slow:
      std::this_thread::sleep_for(std::chrono::milliseconds(r.param));  // models blocking IO
      break;
    case Kind::spawns:
      spawn_child(*own, r.param, false);
      break;
    case Kind::spawns_and_cancels:
      spawn_child(*own, 0, true);
      break;
    default:
      break;
  }
}

// Schedules a tracked child on the task's own timer (Stopped once that timer was rotated away).
void Soak::spawn_child(TimerBox& own, std::uint32_t delay_ms, bool cancel_at_once) {
  const std::optional<std::uint32_t> slot = try_take_free();
  if (!slot) return;  // the pool is exhausted; producers are waiting for the checker
  const std::uint32_t gen = claim(*slot, Kind::child, own.id);
  Record& r = records_[*slot];
  SoakTask task{this, *slot, gen, nullptr};
  TimerFuture f =
      cancel_at_once ? schedule_after(r, own, std::move(task), 1h)
                     : schedule_after(r, own, std::move(task), std::chrono::milliseconds(delay_ms));
  if (f.valid()) ops_.children.fetch_add(1, std::memory_order_relaxed);
  if (f.valid() && cancel_at_once) {
    // Nobody else can see it yet, and stop() cannot hand it back before this task returns.
    ops_.cancel_calls.fetch_add(1, std::memory_order_relaxed);
    if (f.cancel()) {
      r.cancel_wins.fetch_add(1);
      ops_.cancel_wins.fetch_add(1, std::memory_order_relaxed);
    } else {
      violations_.add(
          "cancel() of a task just scheduled from inside a task returned false, state " +
          std::string(wheeltimer::to_string(f.state())));
    }
  }
  if (!finish_claim(*slot, std::move(f))) give_back(std::span(&*slot, 1));
}

void Soak::on_error(std::exception_ptr error) {
  ops_.on_error_calls.fetch_add(1, std::memory_order_relaxed);
  std::uint32_t slot = kPoolSize;
  try {
    std::rethrow_exception(error);
  } catch (const std::runtime_error& e) {
    constexpr std::string_view prefix = "soak task ";
    const std::string_view what = e.what();
    if (what.starts_with(prefix))
      std::from_chars(what.data() + prefix.size(), what.data() + what.size(), slot);
  } catch (int thrown) {
    slot = static_cast<std::uint32_t>(thrown);
  } catch (...) {
  }
  if (slot >= kPoolSize) {
    violations_.add("on_error received an exception no task threw");
    return;
  }
  records_[slot].errors_reported.fetch_add(1);
}

// ---------------------------------------------------------------------------------------------
// Hand-off and checks

// Waits until every schedule() that was in flight when this is called has published its record,
// so that each task a stop() handed back can be matched. A schedule() that starts later on a
// stopped timer is refused.
void Soak::wait_for_claims() {
  for (std::uint32_t slot = 0; slot < kPoolSize; ++slot) {
    const std::uint32_t word = records_[slot].word.load(std::memory_order_acquire);
    if (phase_of(word) == kClaimed) records_[slot].word.wait(word, std::memory_order_acquire);
  }
}

// Matches every PendingTask from `stopped` to its record, checks it, then adopts it into one of
// `targets`, runs it here or drops it.
void Soak::hand_off(TimerBox& stopped, std::vector<PendingTask> tasks,
                    std::span<const std::shared_ptr<TimerBox>> targets, Rng& rng) {
  ops_.handed_back.fetch_add(tasks.size(), std::memory_order_relaxed);
  wait_for_claims();
  std::unordered_map<Clock::rep, std::vector<std::uint32_t>> by_deadline;
  std::vector<std::uint32_t> of_timer;
  for (std::uint32_t slot = 0; slot < kPoolSize; ++slot) {
    const Record& r = records_[slot];
    if (phase_of(r.word.load(std::memory_order_acquire)) != kLive || r.timer_id != stopped.id)
      continue;
    of_timer.push_back(slot);
    by_deadline[r.future.deadline().time_since_epoch().count()].push_back(slot);
  }
  std::unordered_set<std::uint32_t> matched;
  for (PendingTask& pt : tasks) {
    const TimerFuture f = pt.future();
    const Clock::time_point deadline = pt.deadline();
    if (deadline != f.deadline())
      violations_.add("PendingTask::deadline() differs from its future's");
    std::vector<std::uint32_t>& bucket = by_deadline[deadline.time_since_epoch().count()];
    const auto it = std::find_if(bucket.begin(), bucket.end(),
                                 [&](std::uint32_t s) { return records_[s].future == f; });
    if (it == bucket.end()) {
      violations_.add("stop() of timer " + std::to_string(stopped.id) +
                      " returned a task that is not one of its live tasks (state " +
                      std::string(wheeltimer::to_string(f.state())) + ")");
      continue;  // dropped with the vector
    }
    const std::uint32_t slot = *it;
    bucket.erase(it);  // a second PendingTask for the same task would now fail to match
    matched.insert(slot);
    Record& r = records_[slot];
    const TaskState state = f.state();
    if (state == TaskState::running || state == TaskState::finished || r.runs.load() != 0) {
      flag(slot, r, "stop() handed back a task that had started");
      continue;
    }
    ++r.handoffs;
    // Most are adopted; due ones may be run here (never early applies to them too); some are
    // dropped. With no live target (the final shutdown) some are offered to the stopped timer.
    const bool due = deadline <= Clock::now();
    const int roll = static_cast<int>(rng() % 100);
    TimerBox* target = targets.empty() ? nullptr : targets[rng() % targets.size()].get();
    Handoff action = Handoff::adopted;
    if (roll < 30) {
      action = due ? Handoff::run : target != nullptr ? Handoff::adopted : Handoff::dropped;
    } else if (roll < 40 || (target == nullptr && roll >= 60)) {
      action = Handoff::dropped;
    }
    if (action == Handoff::run) {
      r.last_handoff = Handoff::run;
      ops_.pending_runs.fetch_add(1, std::memory_order_relaxed);
      pt.run();
      const TaskState after = f.state();
      if (after != TaskState::finished && after != TaskState::canceled)
        flag(slot, r,
             "PendingTask::run() left the task " + std::string(wheeltimer::to_string(after)));
    } else if (action == Handoff::dropped) {
      r.last_handoff = Handoff::dropped;
      ops_.drops.fetch_add(1, std::memory_order_relaxed);
      { PendingTask dropped = std::move(pt); }
      if (!f.is_cancelled()) flag(slot, r, "a dropped PendingTask did not cancel its future");
    } else {
      // Into a live timer, or (final shutdown) the stopped one: Stopped, future canceled.
      HashedWheelTimer& into = target != nullptr ? target->timer : stopped.timer;
      const std::uint32_t previous_timer = r.timer_id;
      r.timer_id = target != nullptr ? target->id : stopped.id;
      r.last_handoff = Handoff::adopted;
      try {
        const TimerFuture adopted = into.adopt(std::move(pt));
        ops_.adopts.fetch_add(1, std::memory_order_relaxed);
        if (!(adopted == f)) flag(slot, r, "adopt() returned a different future");
        if (target == nullptr) flag(slot, r, "adopt() into a stopped timer was accepted");
      } catch (const wheeltimer::Stopped&) {
        r.last_handoff = Handoff::refused;
        r.timer_id = previous_timer;
        ops_.adopt_refused.fetch_add(1, std::memory_order_relaxed);
        if (target != nullptr) flag(slot, r, "adopt() into a live timer threw Stopped");
        if (!f.is_cancelled())
          flag(slot, r, "adopt() refused with Stopped did not cancel the future");
      } catch (const wheeltimer::Rejected&) {
        r.last_handoff = Handoff::refused;
        r.timer_id = previous_timer;
        ops_.adopt_refused.fetch_add(1, std::memory_order_relaxed);
        if (!f.is_cancelled())
          flag(slot, r, "adopt() refused with Rejected did not cancel the future");
      }
    }
  }
  // Every task of the stopped timer that is still WAITING must have been handed back.
  for (const std::uint32_t slot : of_timer) {
    if (matched.contains(slot)) continue;
    Record& r = records_[slot];
    const TaskState state = r.future.state();
    if (state == TaskState::waiting) {
      r.lost = true;
      ++outcomes_.lost;
      flag(slot, r, "LOST: a WAITING task of a stopped timer that stop() did not hand back");
    } else if (state == TaskState::running) {
      flag(slot, r, "a task of a stopped timer was still RUNNING after stop() returned");
    }
  }
}

// Settles LIVE records that reached FINISHED or CANCELED (and, when final, finds the lost ones).
void Soak::check_pass(bool final) {
  std::vector<std::uint32_t> freed;
  {
    std::lock_guard handoff(handoff_mutex_);
    for (std::uint32_t slot = 0; slot < kPoolSize; ++slot) {
      Record& r = records_[slot];
      if (phase_of(r.word.load(std::memory_order_acquire)) != kLive) continue;
      // runs first: a task that incremented it has left WAITING for good.
      const int runs = r.runs.load(std::memory_order_acquire);
      const TaskState state = r.future.state();
      if (state == TaskState::finished || state == TaskState::canceled) {
        std::lock_guard lock(stripe(slot));
        settle(slot, r, state);
        freed.push_back(slot);
      } else if (runs != 0 && state == TaskState::waiting) {
        flag(slot, r, "a task ran while its future says WAITING");
      } else if (final && state == TaskState::waiting && !r.lost) {
        ++outcomes_.lost;
        flag(slot, r, "LOST: WAITING after every timer stopped and every hand-off was settled");
      } else if (final && state == TaskState::running) {
        flag(slot, r, "RUNNING after every timer stopped");
      }
    }
  }
  give_back(freed);
}

// Checks a record whose future is final, tallies its outcome and recycles its slot.
void Soak::settle(std::uint32_t slot, Record& r, TaskState state) {
  const int runs = r.runs.load(std::memory_order_acquire);
  const int wins = r.cancel_wins.load();
  const int reported = r.errors_reported.load();
  const Clock::time_point deadline = r.future.deadline();
  if (deadline < r.lowest || deadline > r.highest)
    flag(slot, r, "deadline() is not the one asked for");
  const bool threw = r.kind == Kind::throws_std || r.kind == Kind::throws_int;
  const bool ran_on_timer = r.last_handoff != Handoff::run;
  if (runs > 1) {
    ops_.ran_twice.fetch_add(1, std::memory_order_relaxed);
    flag(slot, r, "a task ran twice");
  }
  if (state == TaskState::finished) {
    if (runs != 1) flag(slot, r, "FINISHED but the task did not run exactly once");
    if (wins != 0) flag(slot, r, "FINISHED although a cancel() returned true");
    if (reported != (threw && ran_on_timer ? 1 : 0))
      flag(slot, r, "on_error was not told exactly once per exception of a task a timer ran");
    bool right_exception = !threw && r.future.exception() == nullptr;
    if (threw && r.future.exception() != nullptr) {
      try {
        std::rethrow_exception(r.future.exception());
      } catch (const std::runtime_error&) {
        right_exception = r.kind == Kind::throws_std;
      } catch (int thrown) {
        right_exception = r.kind == Kind::throws_int && static_cast<std::uint32_t>(thrown) == slot;
      } catch (...) {
      }
    }
    if (!right_exception) flag(slot, r, "exception() is not what the task threw");
    const Clock::time_point started{Clock::duration(r.started.load(std::memory_order_relaxed))};
    if (runs >= 1 && started < deadline) {
      ++outcomes_.early;
      flag(slot, r, "started before its deadline");
    }
    if (runs >= 1 && ran_on_timer && deadline != kNever) {
      const Clock::duration late = started - deadline;
      outcomes_.max_late = std::max(outcomes_.max_late, late);
      outcomes_.late_sum_ms += ms(late);
      ++outcomes_.late_count;
    }
    outcomes_.threw += threw;
    outcomes_.threw_on_timer += threw && ran_on_timer;
    switch (r.last_handoff) {
      case Handoff::none:
        ++outcomes_.finished;
        break;
      case Handoff::adopted:
        ++outcomes_.adopted_ran;
        break;
      case Handoff::run:
        ++outcomes_.pending_ran;
        break;
      default:
        flag(slot, r, "FINISHED after its PendingTask was dropped or refused");
        break;
    }
  } else {  // canceled
    if (runs != 0) flag(slot, r, "CANCELED but the task ran");
    if (reported != 0) flag(slot, r, "on_error told about a task that was canceled");
    if (r.future.exception() != nullptr) flag(slot, r, "CANCELED with an exception");
    if (wins > 1) flag(slot, r, "cancel() returned true more than once");
    if (wins == 1) {
      ++outcomes_.canceled;
    } else if (r.last_handoff == Handoff::dropped) {
      ++outcomes_.dropped;
    } else if (r.last_handoff == Handoff::refused) {
      ++outcomes_.refused;
    } else if (wins == 0) {
      flag(slot, r, "CANCELED with no cancel() returning true and no PendingTask dropped");
    }
  }
  ops_.settled.fetch_add(1, std::memory_order_relaxed);
  r.future = TimerFuture();
  r.word.store(make_word(gen_of(r.word.load(std::memory_order_relaxed)) + 1, kFree),
               std::memory_order_release);
}

// Stops every live timer in turn, handing its tasks to the ones still live (the last one's are
// run, dropped or refused), then checks that nothing is left unsettled.
void Soak::shut_down() {
  Rng rng = make_rng(options_.seed, 400);
  std::array<std::shared_ptr<TimerBox>, kLiveTimers> timers = live_timers();
  {
    std::lock_guard handoff(handoff_mutex_);
    for (std::size_t i = 0; i < kLiveTimers; ++i) {
      std::vector<PendingTask> tasks = stop_and_check(*timers[i]);
      hand_off(*timers[i], std::move(tasks), std::span(timers).subspan(i + 1), rng);
    }
  }
  check_pass(true);
  for (const auto& box : timers) {
    if (const std::size_t pending = box->timer.pending(); pending != 0)
      violations_.add("pending() = " + std::to_string(pending) + " on a stopped timer at the end");
  }
  // Everything is settled, so every task's captures (and their references to timers) are gone.
  const std::uint64_t runs_before = ops_.runs.load();
  std::size_t captured = 0;
  for (const auto& box : graveyard_) captured += box.use_count() != 1;
  {
    std::lock_guard lock(timers_mutex_);
    for (auto& box : timers_) box.reset();
  }
  for (const auto& box : timers) captured += box.use_count() != 1;
  if (captured != 0)
    violations_.add(std::to_string(captured) +
                    " timers still referenced by settled tasks' captures");
  timers = {};
  graveyard_.clear();  // destroys the timers and drains their executors
  if (ops_.runs.load() != runs_before)
    violations_.add("a task ran while the timers were destroyed");
  if (ops_.on_error_calls.load() != outcomes_.threw_on_timer) {
    violations_.add("on_error was called " + std::to_string(ops_.on_error_calls.load()) +
                    " times for " + std::to_string(outcomes_.threw_on_timer) +
                    " tasks that threw on a timer");
  }
}

// ---------------------------------------------------------------------------------------------
// Output

void Soak::progress(Clock::time_point start, bool tty, bool final_line) {
  const Clock::time_point now = Clock::now();
  const double interval = std::chrono::duration<double>(now - last_progress_).count();
  const std::uint64_t accepted = ops_.accepted.load(), cancels = ops_.cancel_calls.load();
  const std::uint64_t in_flight = accepted - ops_.settled.load();
  std::fprintf(stderr,
               "%s[%6.1f s] schedule %8.0f/s  cancel %7.0f/s  stops %5llu  adopts %8llu  in flight "
               "%6llu  violations %llu%s",
               tty ? "\r" : "", std::chrono::duration<double>(now - start).count(),
               (accepted - last_progress_accepted_) / interval,
               (cancels - last_progress_cancels_) / interval,
               static_cast<unsigned long long>(ops_.stops.load()),
               static_cast<unsigned long long>(ops_.adopts.load()),
               static_cast<unsigned long long>(in_flight),
               static_cast<unsigned long long>(violations_.count()),
               tty && !final_line ? "" : "\n");
  std::fflush(stderr);
  last_progress_ = now;
  last_progress_accepted_ = accepted;
  last_progress_cancels_ = cancels;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

void Soak::report(Clock::duration elapsed, std::uint64_t violations) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const Outcomes& o = outcomes_;
  struct Row {
    const char* key;
    const char* label;
    std::uint64_t value;
    bool rate;
  };
  const auto u = [](const std::atomic<std::uint64_t>& a) { return a.load(); };
  const std::vector<Row> rows = {
      {"schedule_accepted", "schedule() accepted", u(ops_.accepted), true},
      {"schedule_stopped", "schedule() refused: Stopped", u(ops_.refused_stopped), true},
      {"schedule_rejected", "schedule() refused: Rejected", u(ops_.refused_rejected), true},
      {"children", "  of them scheduled from inside a task", u(ops_.children), true},
      {"cancel_calls", "cancel() calls", u(ops_.cancel_calls), true},
      {"cancel_wins", "cancel() returned true", u(ops_.cancel_wins), true},
      {"caller_runs", "CallerRunsPool ran a task on the caller", u(ops_.caller_runs), true},
      {"stops", "stop() (timer rotations)", u(ops_.stops), true},
      {"handed_back", "tasks handed back by stop()", u(ops_.handed_back), true},
      {"adopts", "adopt() accepted", u(ops_.adopts), true},
      {"adopt_refused", "adopt() refused (Stopped/Rejected)", u(ops_.adopt_refused), true},
      {"pending_runs", "PendingTask::run()", u(ops_.pending_runs), true},
      {"drops", "PendingTask dropped", u(ops_.drops), true},
      {"finished", "finished on its first timer", o.finished, false},
      {"canceled", "canceled (a cancel() won)", o.canceled, false},
      {"handed_back_adopted", "handed back -> adopted, then ran", o.adopted_ran, false},
      {"handed_back_run", "handed back -> PendingTask::run()", o.pending_ran, false},
      {"handed_back_dropped", "handed back -> dropped", o.dropped, false},
      {"handed_back_refused", "handed back -> adopt() refused", o.refused, false},
      {"exceptions_thrown", "exceptions thrown by tasks", o.threw, false},
      {"exceptions_on_timer", "  of them by tasks a timer ran", o.threw_on_timer, false},
      {"on_error_calls", "on_error calls", u(ops_.on_error_calls), false},
      {"ran_twice", "ran twice", u(ops_.ran_twice), false},
      {"early", "started early", o.early, false},
      {"lost", "lost", o.lost, false},
      {"violations", "invariant violations", violations, false},
  };
  const double mean_late = o.late_count ? o.late_sum_ms / static_cast<double>(o.late_count) : 0.0;
  const std::vector<std::string> first = violations_.first();

  std::FILE* table = options_.json ? stderr : stdout;
  std::fprintf(table, "\nwheeltimer-soak: %.1f s, seed %llu, %u producers, %u cancellers\n",
               seconds, static_cast<unsigned long long>(options_.seed), options_.producers,
               options_.cancellers);
  std::fprintf(table, "timers: %s | %s | %s (one of each live, replaced every %lld ms)\n",
               "none/InlineExecutor", executor_names_[1].c_str(), executor_names_[2].c_str(),
               static_cast<long long>(std::chrono::milliseconds(kRotatePeriod).count()));
  std::fprintf(table, "%-40s %14s %12s\n", "", "total", "per second");
  for (const Row& row : rows) {
    if (row.rate) {
      std::fprintf(table, "%-40s %14llu %12.1f\n", row.label,
                   static_cast<unsigned long long>(row.value),
                   static_cast<double>(row.value) / seconds);
    } else {
      std::fprintf(table, "%-40s %14llu\n", row.label, static_cast<unsigned long long>(row.value));
    }
  }
  std::fprintf(table, "%-40s %14.3f ms\n", "max lateness (ran on a timer)", ms(o.max_late));
  std::fprintf(table, "%-40s %14.3f ms\n", "mean lateness", mean_late);
  for (const std::string& v : first) std::fprintf(table, "  violation: %s\n", v.c_str());
  std::fprintf(table, "result: %s\n", violations == 0 ? "PASS" : "FAIL");
  std::fflush(table);

  if (options_.json) {
    std::string line = "{\"ok\":" + std::string(violations == 0 ? "true" : "false") +
                       ",\"seed\":" + std::to_string(options_.seed) +
                       ",\"seconds\":" + std::to_string(seconds) +
                       ",\"producers\":" + std::to_string(options_.producers) +
                       ",\"cancellers\":" + std::to_string(options_.cancellers);
    for (const Row& row : rows)
      line += ",\"" + std::string(row.key) + "\":" + std::to_string(row.value);
    line += ",\"max_lateness_ms\":" + std::to_string(ms(o.max_late)) +
            ",\"mean_lateness_ms\":" + std::to_string(mean_late) + ",\"first_violations\":[";
    for (std::size_t i = 0; i < first.size(); ++i)
      line += (i ? ",\"" : "\"") + json_escape(first[i]) + "\"";
    line += "]}";
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
}

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

}  // namespace

int main(int argc, char** argv) {
  Options options;
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
  return Soak(options).run();
}
