// The "stress" suite: the conservation invariant (API.md Guarantees 1-3) under contention.
//
// Producer threads schedule tasks with random delays (due now, a few milliseconds, or saturated to
// "never"), canceller threads cancel random ones, and two threads call stop() at once while the
// producers are still scheduling. Afterwards every task that schedule accepted must be exactly one
// of: ran once and FINISHED; CANCELED and never ran; handed back by stop() and never ran. No task
// starts before its deadline, nothing runs after stop() has returned, and refused tasks never run.
// Each round is repeated for every executor kind, with a variant that adopts the handed-back tasks
// into a second timer and one that runs into max_pending.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

using namespace std::chrono_literals;
using wheeltimer::CallerRunsPool;
using wheeltimer::Clock;
using wheeltimer::Executor;
using wheeltimer::HashedWheelTimer;
using wheeltimer::PendingTask;
using wheeltimer::Rejected;
using wheeltimer::Stopped;
using wheeltimer::TaskState;
using wheeltimer::TimerFuture;
using wheeltimer::TimerOptions;
using wheeltimer::testing::kLateBound;
using wheeltimer::testing::ExecutorKind;
using wheeltimer::testing::kMustHappen;

namespace {

constexpr Clock::time_point kNever = Clock::time_point::max();

// Sizes: a round takes a few hundred milliseconds in a normal build and stays well inside the
// 600 s limit under ThreadSanitizer.
constexpr int kProducers = 4;
constexpr int kTasksPerProducer = 5000;
constexpr int kCancellers = 2;
constexpr int kRounds = 4;

enum class Attempt : std::uint8_t { none, accepted, stopped, rejected };

// One schedule attempt and everything its task did. The task touches only the atomics.
struct Record {
  std::atomic<int> runs{0};
  std::atomic<Clock::rep> started{0};  // Clock::now() when the task started (last run)
  std::atomic<int> cancel_wins{0};     // cancel() calls that returned true
  // Written by the scheduling thread before the record is published to cancellers.
  Attempt attempt = Attempt::none;
  Clock::time_point lowest_deadline;  // the deadline must lie in [lowest, highest]
  Clock::time_point highest_deadline;
  TimerFuture future;
  bool cancellable = true;  // false: cancellers leave it alone (fixed records with a known outcome)
  // Main thread only, after the threads joined.
  int handed_back = 0;
};

// Collects violations from any thread; keeps the first few messages for the report.
class Violations {
 public:
  void add(const std::string& what) {
    count_.fetch_add(1);
    std::lock_guard lock(mutex_);
    if (messages_.size() < 15) messages_.push_back(what);
  }
  std::size_t count() const { return count_.load(); }
  std::string report() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& m : messages_) out += "  " + m + "\n";
    return out;
  }

 private:
  std::atomic<std::size_t> count_{0};
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

std::string describe(const Record& r) {
  std::ostringstream out;
  out << "runs=" << r.runs.load() << " state=" << wheeltimer::to_string(r.future.state())
      << " cancel_wins=" << r.cancel_wins.load() << " handed_back=" << r.handed_back
      << " deadline_is_never=" << (r.future.deadline() == kNever);
  return out.str();
}

// One round: a timer, its executor, the records, and the threads that hammer it.
class StressRound {
 public:
  StressRound(std::shared_ptr<Executor> executor, std::size_t max_pending, unsigned seed)
      : executor_(std::move(executor)), max_pending_(max_pending), seed_(seed) {
    timer_ = std::make_unique<HashedWheelTimer>(TimerOptions{
        .tick = 1ms, .wheel_size = 16, .max_pending = max_pending_, .executor = executor_});
    for (auto& lane : lanes_) lane = std::make_unique<Record[]>(kTasksPerProducer);
  }

  // Records whose outcome is known in advance, scheduled from this thread before the race starts:
  // one that must be handed back, one that must finish, one that must be canceled.
  void schedule_fixed_records() {
    Record& sentinel = fixed_.emplace_back();
    sentinel.cancellable = false;
    schedule_at(sentinel, kNever);
    expect_attempt(sentinel, Attempt::accepted, "sentinel");

    Record& due_now = fixed_.emplace_back();
    due_now.cancellable = false;
    schedule_after(due_now, 0ms);
    expect_attempt(due_now, Attempt::accepted, "due-now task");
    if (due_now.attempt == Attempt::accepted && !due_now.future.wait_for(kMustHappen)) {
      violations_.add("a due-now task did not finish within kMustHappen");
    }

    Record& canceled = fixed_.emplace_back();
    canceled.cancellable = false;
    schedule_after(canceled, std::chrono::hours::max());
    expect_attempt(canceled, Attempt::accepted, "task to cancel");
    cancel(canceled);
    if (canceled.cancel_wins.load() != 1)
      violations_.add("cancel() of a fresh task returned false");
  }

  // max_pending variant: fill the timer to the brim from this thread, check that one more is
  // Rejected (deterministically), then cancel half of the fillers to make room for the race.
  void fill_to_max_pending() {
    ASSERT_GT(max_pending_, 0u);
    std::vector<Record*> fillers;
    while (timer_->pending() < max_pending_) {
      Record& filler = fixed_.emplace_back();
      schedule_at(filler, kNever);
      ASSERT_EQ(filler.attempt, Attempt::accepted) << "pending()=" << timer_->pending();
      fillers.push_back(&filler);
    }
    EXPECT_EQ(timer_->pending(), max_pending_);
    Record& probe = fixed_.emplace_back();
    schedule_after(probe, 1ms);
    EXPECT_EQ(probe.attempt, Attempt::rejected);
    EXPECT_EQ(timer_->pending(), max_pending_);
    const std::size_t to_cancel = fillers.size() / 2;
    for (std::size_t i = 0; i < to_cancel; ++i) cancel(*fillers[i]);
    EXPECT_EQ(timer_->pending(), max_pending_ - to_cancel);
  }

  // Producers, cancellers and two stoppers; returns once stop() has returned and all joined.
  void race_until_stopped() {
    std::latch halfway(kProducers);
    std::atomic<bool> stop_requested{false};
    std::atomic<bool> cancellers_done{false};
    std::vector<PendingTask> results[2];
    {
      std::vector<std::jthread> threads;
      for (int p = 0; p < kProducers; ++p) {
        threads.emplace_back(
            [this, p, &halfway, &stop_requested] { produce(p, halfway, stop_requested); });
      }
      std::vector<std::jthread> cancellers;
      for (int c = 0; c < kCancellers; ++c) {
        cancellers.emplace_back(
            [this, c, &cancellers_done] { cancel_randomly(seed_ * 31 + c, cancellers_done); });
      }
      for (int s = 0; s < 2; ++s) {
        threads.emplace_back([this, s, &halfway, &stop_requested, &results] {
          halfway.wait();
          stop_requested.store(true);
          stop_requested.notify_all();
          results[s] = timer_->stop();
          // Fully stopped now: nothing running, nothing pending, nothing will start.
          const int running = running_.load();
          const std::size_t pending = timer_->pending();
          runs_when_stopped_[s] = total_runs_.load();
          stop_returned_.store(true);
          if (running != 0) violations_.add("a task was still running after stop() returned");
          if (pending != 0)
            violations_.add("pending() = " + std::to_string(pending) + " after stop()");
        });
      }
      for (auto& t : threads) t.join();
      cancellers_done.store(true);
    }
    // Concurrent stop() calls: one returns everything, the other an empty vector.
    if (!results[0].empty() && !results[1].empty()) {
      violations_.add("two concurrent stop() calls both returned tasks");
    }
    for (auto& result : results) {
      for (auto& pt : result) handed_back_.push_back(std::move(pt));
      if (!std::is_sorted(result.begin(), result.end(),
                          [](const PendingTask& a, const PendingTask& b) {
                            return a.deadline() < b.deadline();
                          })) {
        violations_.add("stop() did not return its tasks ordered by deadline");
      }
    }
    if (runs_when_stopped_[0] != total_runs_.load() ||
        runs_when_stopped_[1] != total_runs_.load()) {
      violations_.add("a task ran after stop() returned");
    }
  }

  // Matches every PendingTask to its record (by TimerFuture equality) and checks the invariant.
  void check_conservation_after_stop() {
    EXPECT_EQ(timer_->pending(), 0u);
    EXPECT_TRUE(timer_->stop().empty()) << "a later stop() must return nothing";

    std::unordered_map<Clock::rep, std::vector<Record*>> by_deadline;
    for_each_record([&](Record& r) {
      if (r.attempt == Attempt::accepted) {
        by_deadline[r.future.deadline().time_since_epoch().count()].push_back(&r);
      }
    });
    for (const PendingTask& pt : handed_back_) {
      const TimerFuture f = pt.future();
      if (pt.deadline() != f.deadline()) violations_.add("PendingTask::deadline() != its future's");
      int matches = 0;
      for (Record* r : by_deadline[pt.deadline().time_since_epoch().count()]) {
        if (r->future == f) {
          ++r->handed_back;
          ++matches;
        }
      }
      if (matches != 1)
        violations_.add("a handed-back task matches " + std::to_string(matches) + " records");
    }

    for_each_record([&](Record& r) {
      if (r.attempt != Attempt::accepted) {
        if (r.runs.load() != 0) violations_.add("a refused task (Stopped/Rejected) ran");
        return;
      }
      const int runs = r.runs.load();
      const TaskState state = r.future.state();
      const int wins = r.cancel_wins.load();
      const bool ran_once =
          runs == 1 && state == TaskState::finished && wins == 0 && r.handed_back == 0;
      const bool canceled =
          runs == 0 && state == TaskState::canceled && wins == 1 && r.handed_back == 0;
      // A canceller may still cancel a handed-back task (its future stays usable), so CANCELED with
      // one winning cancel() is allowed for those too.
      const bool returned = runs == 0 && r.handed_back == 1 &&
                            ((state == TaskState::waiting && wins == 0) ||
                             (state == TaskState::canceled && wins == 1));
      if (ran_once + canceled + returned != 1)
        violations_.add("conservation broken: " + describe(r));
      check_deadline_and_start(r);
    });

    // Fixed records: their outcome is known.
    if (!fixed_.empty()) {
      const Record& sentinel = fixed_[0];
      if (sentinel.handed_back != 1 || sentinel.future.state() != TaskState::waiting) {
        violations_.add("sentinel was not handed back WAITING: " + describe(sentinel));
      }
      if (!fixed_[1].future.is_done())
        violations_.add("due-now task not FINISHED: " + describe(fixed_[1]));
      if (!fixed_[2].future.is_cancelled())
        violations_.add("canceled task not CANCELED: " + describe(fixed_[2]));
    }
  }

  // Tears down the timer, then the executor (which drains its queue: handed-back and canceled
  // tasks must run as no-ops), and checks that no task ran meanwhile.
  void destroy_timer_and_executor() {
    const long before = total_runs_.load();
    timer_.reset();
    executor_.reset();
    if (total_runs_.load() != before)
      violations_.add("a task ran while the timer/executor shut down");
  }

  // Plain variant: run half of the handed-back tasks here, drop the other half (which cancels
  // them).
  void run_or_drop_handed_back() {
    std::vector<TimerFuture> run_futures;
    std::vector<TimerFuture> dropped_futures;
    for (std::size_t i = 0; i < handed_back_.size(); ++i) {
      if (i % 2 == 0) {
        run_futures.push_back(handed_back_[i].future());
        handed_back_[i].run();
        handed_back_[i].run();  // a second run() is a no-op
      } else {
        dropped_futures.push_back(handed_back_[i].future());
      }
    }
    handed_back_.clear();
    for (const auto& f : run_futures) {
      if (f.state() != TaskState::finished && f.state() != TaskState::canceled) {
        violations_.add("PendingTask::run() left the task " +
                        std::string(wheeltimer::to_string(f.state())));
      }
    }
    for (const auto& f : dropped_futures) {
      if (!f.is_cancelled()) violations_.add("a dropped PendingTask did not cancel its future");
    }
    check_all_settled();
  }

  // Adopt variant: adopt every handed-back task into a second timer (sharing the executor) from two
  // threads while a canceller races, let everything with a finite deadline settle, then stop the
  // second timer: it must hand back exactly the uncanceled "never" tasks.
  void adopt_into_second_timer() {
    auto second = std::make_unique<HashedWheelTimer>(
        TimerOptions{.tick = 1ms, .wheel_size = 64, .executor = executor_});
    timer_.reset();  // the first timer may go: adopted tasks no longer belong to it
    std::atomic<bool> cancellers_done{false};
    {
      std::jthread canceller(
          [this, &cancellers_done] { cancel_randomly(seed_ * 37 + 5, cancellers_done); });
      std::vector<std::jthread> adopters;
      for (int a = 0; a < 2; ++a) {
        adopters.emplace_back([this, a, &second] {
          for (std::size_t i = a; i < handed_back_.size(); i += 2) {
            const TimerFuture original = handed_back_[i].future();
            try {
              const TimerFuture adopted = second->adopt(std::move(handed_back_[i]));
              if (!(adopted == original)) violations_.add("adopt() returned a different future");
            } catch (const std::exception& e) {
              violations_.add(std::string("adopt() threw: ") + e.what());
            }
          }
        });
      }
      for (auto& t : adopters) t.join();
      cancellers_done.store(true);
    }
    handed_back_.clear();  // all moved from

    std::vector<Record*> expect_returned;
    for_each_record([&](Record& r) {
      if (r.handed_back != 1) return;
      if (r.future.deadline() == kNever) {
        if (r.future.state() == TaskState::waiting) expect_returned.push_back(&r);
      } else if (!r.future.wait_for(kMustHappen)) {
        violations_.add("an adopted task did not settle: " + describe(r));
      }
    });

    std::vector<PendingTask> again = second->stop();
    EXPECT_EQ(second->pending(), 0u);
    if (again.size() != expect_returned.size()) {
      violations_.add("second stop() returned " + std::to_string(again.size()) +
                      " tasks, expected " + std::to_string(expect_returned.size()));
    }
    for (const PendingTask& pt : again) {
      const bool known = std::any_of(expect_returned.begin(), expect_returned.end(),
                                     [&](const Record* r) { return r->future == pt.future(); });
      if (!known) violations_.add("second stop() returned an unexpected task");
    }
    again.clear();  // dropping them cancels their futures
    second.reset();
    for_each_record([&](Record& r) { check_deadline_and_start(r); });
    check_all_settled();
  }

  // Adopt variant with a stop(): adopt every handed-back task into a second timer from two threads
  // while a canceller races and, once half are adopted, a third thread stops the second timer. The
  // adopters wait at the halfway mark until the stop() is about to begin, so the rest of their
  // adopt() calls race it (else they would often all be done before it); the last one waits for
  // the stop() to return, so every round has a refused adopt() whatever the race did. An adopt()
  // refused by the stop() is Stopped and cancels the task; every other task ran, was canceled, or
  // is among those the stop() handed back, and only those are still WAITING.
  void adopt_while_the_second_timer_stops() {
    auto second = std::make_unique<HashedWheelTimer>(
        TimerOptions{.tick = 1ms, .wheel_size = 64, .executor = executor_});
    timer_.reset();
    const std::size_t half = handed_back_.size() / 2;
    std::atomic<std::size_t> adopted{0}, refused{0};
    std::atomic<bool> cancellers_done{false}, stopping{false}, stopped{false};
    std::vector<PendingTask> returned;
    {
      std::jthread canceller(
          [this, &cancellers_done] { cancel_randomly(seed_ * 41 + 3, cancellers_done); });
      std::jthread stopper([this, half, &adopted, &stopping, &stopped, &second, &returned] {
        while (adopted.load() < half) std::this_thread::yield();
        stopping.store(true);
        // Then up to 200 us, as the seed says, so that the stop() meets the adopters at a
        // different point of their second halves in each round: some adopt() calls land just
        // before it, and the rest are refused. (A spin: a sleep or yield hands the adopters a
        // whole time slice, and they finish before the stop() begins.)
        wheeltimer::testing::spin_for(
            std::chrono::microseconds(std::mt19937(seed_ * 43 + 5)() % 200));
        returned = second->stop();
        stopped.store(true);
      });
      std::vector<std::jthread> adopters;
      for (int a = 0; a < 2; ++a) {
        adopters.emplace_back([this, a, half, &second, &adopted, &refused, &stopping, &stopped] {
          for (std::size_t i = a; i < handed_back_.size(); i += 2) {
            // The two adopters together adopt exactly the first `half` before either waits.
            if (i >= half) {
              while (!stopping.load()) std::this_thread::yield();
            }
            if (i + 1 == handed_back_.size()) {
              while (!stopped.load()) std::this_thread::yield();
            }
            const TimerFuture original = handed_back_[i].future();
            try {
              if (!(second->adopt(std::move(handed_back_[i])) == original)) {
                violations_.add("adopt() returned a different future");
              }
            } catch (const wheeltimer::Stopped&) {
              refused.fetch_add(1);
              if (!original.is_cancelled()) violations_.add("a refused adopt() left it uncanceled");
            } catch (const std::exception& e) {
              violations_.add(std::string("adopt() threw: ") + e.what());
            }
            adopted.fetch_add(1);
          }
        });
      }
      for (auto& t : adopters) t.join();
      cancellers_done.store(true);
    }
    std::printf("[ stress   ] adoptions %zu: %zu refused by the stop(), which handed back %zu\n",
                adopted.load(), refused.load(), returned.size());
    handed_back_.clear();  // all moved from

    // stop() has returned: nothing of the second timer runs or waits but what it handed back
    // (which the canceller may have canceled since).
    for_each_record([&](Record& r) {
      if (r.handed_back != 1) return;
      const auto in_returned =
          std::count_if(returned.begin(), returned.end(),
                        [&](const PendingTask& pt) { return pt.future() == r.future; });
      if (in_returned > 1) violations_.add("stop() returned a task twice: " + describe(r));
      const TaskState state = r.future.state();
      if (in_returned == 1 && (state == TaskState::finished || r.runs.load() != 0)) {
        violations_.add("stop() returned a task that had run: " + describe(r));
      }
      if (in_returned == 0 && state != TaskState::finished && state != TaskState::canceled) {
        violations_.add("after stop(), neither settled nor returned: " + describe(r));
      }
    });
    EXPECT_EQ(second->pending(), 0u);
    returned.clear();  // dropping them cancels their futures
    second.reset();
    for_each_record([&](Record& r) { check_deadline_and_start(r); });
    check_all_settled();
  }

  // The number of Rejected schedule attempts.
  std::size_t rejected() {
    std::size_t n = 0;
    for_each_record([&](Record& r) { n += r.attempt == Attempt::rejected; });
    return n;
  }

  // The number of Rejected schedule attempts by the racing producers (not fill_to_max_pending()'s
  // probe, which is rejected by construction).
  std::size_t rejected_in_race() {
    std::size_t n = 0;
    for (auto& lane : lanes_) {
      for (int i = 0; i < kTasksPerProducer; ++i) n += lane[i].attempt == Attempt::rejected;
    }
    return n;
  }

  // One line per round, so a log shows that every outcome was exercised.
  void print_outcomes(const char* label) {
    std::size_t ran = 0, canceled = 0, returned = 0, stopped = 0, rejected = 0;
    for_each_record([&](Record& r) {
      stopped += r.attempt == Attempt::stopped;
      rejected += r.attempt == Attempt::rejected;
      if (r.attempt != Attempt::accepted) return;
      if (r.handed_back != 0) {
        ++returned;
      } else if (r.runs.load() != 0) {
        ++ran;
      } else {
        ++canceled;
      }
    });
    std::printf(
        "[ stress   ] %s seed %u: ran %zu, canceled %zu, handed back %zu, Stopped %zu, Rejected "
        "%zu\n",
        label, seed_, ran, canceled, returned, stopped, rejected);
  }

  void expect_no_violations() {
    EXPECT_EQ(violations_.count(), 0u) << "seed " << seed_ << ", first violations:\n"
                                       << violations_.report();
  }

 private:
  template <class F>
  void for_each_record(F&& f) {
    for (auto& r : fixed_) f(r);
    for (auto& lane : lanes_) {
      for (int i = 0; i < kTasksPerProducer; ++i) f(lane[i]);
    }
  }

  wheeltimer::Task make_task(Record& r) {
    return [this, &r] {
      running_.fetch_add(1);
      r.started.store(Clock::now().time_since_epoch().count());
      r.runs.fetch_add(1);
      total_runs_.fetch_add(1);
      running_.fetch_sub(1);
    };
  }

  void expect_attempt(const Record& r, Attempt want, const char* what) {
    if (r.attempt != want) violations_.add(std::string(what) + " was not accepted");
  }

  // Both record a refusal instead of throwing.
  void schedule_at(Record& r, Clock::time_point deadline) {
    r.lowest_deadline = r.highest_deadline = deadline;
    attempt(r, [&] { return timer_->schedule_at(make_task(r), deadline); });
  }
  template <class Rep, class Period>
  void schedule_after(Record& r, std::chrono::duration<Rep, Period> delay) {
    const Clock::time_point before = Clock::now();
    attempt(r, [&] { return timer_->schedule(make_task(r), delay); });
    const Clock::time_point after = Clock::now();
    r.lowest_deadline = wheeltimer::saturating_deadline(delay, before);
    r.highest_deadline = wheeltimer::saturating_deadline(delay, after);
  }
  template <class Schedule>
  void attempt(Record& r, Schedule&& schedule) {
    try {
      r.future = schedule();
      r.attempt = Attempt::accepted;
    } catch (const Stopped&) {
      r.attempt = Attempt::stopped;
    } catch (const Rejected&) {
      r.attempt = Attempt::rejected;
    }
  }

  void cancel(Record& r) {
    TimerFuture f = r.future;  // a copy: the record's own handle is never written concurrently
    if (f.cancel()) r.cancel_wins.fetch_add(1);
  }

  void produce(int p, std::latch& halfway, std::atomic<bool>& stop_requested) {
    std::mt19937 rng(seed_ * 1000 + p);
    std::uniform_int_distribution<int> percent(0, 99);
    std::uniform_int_distribution<int> micros(0, 20'000);
    Record* lane = lanes_[p].get();
    bool saw_stopped = false;
    for (int i = 0; i < kTasksPerProducer; ++i) {
      if (i == kTasksPerProducer / 2) halfway.count_down();
      // Make sure the last quarter races with (or follows) stop(), whatever the scheduler does.
      if (i == kTasksPerProducer * 3 / 4) stop_requested.wait(false);
      // Spread the scheduling over tens of milliseconds, so tasks come due and run while the
      // producers, cancellers and stop() race (a pure burst would finish before the first tick).
      if (i % 50 == 49) std::this_thread::sleep_for(1ms);
      Record& r = lane[i];
      const bool stop_had_returned = stop_returned_.load();
      const int roll = percent(rng);
      if (roll < 10) {
        schedule_after(r,
                       std::chrono::microseconds(-micros(rng) / 20));  // zero or negative: due now
      } else if (roll < 12) {
        schedule_after(r, std::chrono::hours::max());
      } else if (roll < 13) {
        schedule_after(r, std::chrono::nanoseconds::max());
      } else if (roll < 14) {
        schedule_after(r, std::chrono::duration<double>(1e300));
      } else if (roll < 15) {
        schedule_at(r, kNever);
      } else if (roll < 55) {
        schedule_at(r, Clock::now() + std::chrono::microseconds(micros(rng)));
      } else {
        schedule_after(r, std::chrono::microseconds(micros(rng)));
      }
      if (r.attempt == Attempt::accepted && (saw_stopped || stop_had_returned)) {
        violations_.add("schedule accepted a task after stop()");
      }
      if (r.attempt == Attempt::rejected && (stop_had_returned || max_pending_ == 0)) {
        violations_.add(max_pending_ == 0 ? "Rejected without max_pending"
                                          : "Rejected instead of Stopped");
      }
      saw_stopped = saw_stopped || r.attempt == Attempt::stopped;
      // Some tasks are canceled by their producer right away (racing the timer for due-now ones).
      if (r.attempt == Attempt::accepted && roll % 20 == 7) cancel(r);
      published_[p].store(i + 1);  // publishes r.attempt and r.future to the cancellers
    }
  }

  void cancel_randomly(unsigned seed, const std::atomic<bool>& done) {
    std::mt19937 rng(seed);
    for (unsigned iteration = 0; !done.load(); ++iteration) {
      const int p = static_cast<int>(rng() % kProducers);
      const int published = published_[p].load();
      if (published > 0) {
        Record& r = lanes_[p][rng() % published];
        if (r.attempt == Attempt::accepted && r.cancellable) cancel(r);
      }
      // Pace the cancellers so they do not starve producers and the indicator on two cores.
      if (iteration % 8 == 0) std::this_thread::sleep_for(20us);
    }
  }

  void check_deadline_and_start(const Record& r) {
    if (r.attempt != Attempt::accepted) return;
    const Clock::time_point deadline = r.future.deadline();
    if (deadline < r.lowest_deadline || deadline > r.highest_deadline) {
      violations_.add("deadline() differs from the one asked for");
    }
    if (r.runs.load() == 0) return;
    const Clock::time_point started{Clock::duration(r.started.load())};
    if (started < deadline) violations_.add("a task started before its deadline (never early)");
    if (deadline != kNever && started > deadline + kLateBound)
      violations_.add("a task started very late");
  }

  void check_all_settled() {
    for_each_record([&](Record& r) {
      if (r.attempt != Attempt::accepted) {
        if (r.runs.load() != 0) violations_.add("a refused task ran");
        return;
      }
      const TaskState state = r.future.state();
      const int runs = r.runs.load();
      const bool ok = (state == TaskState::finished && runs == 1) ||
                      (state == TaskState::canceled && runs == 0);
      if (!ok || !r.future.wait_for(0s)) violations_.add("not settled at the end: " + describe(r));
    });
  }

  std::shared_ptr<Executor> executor_;
  const std::size_t max_pending_;
  const unsigned seed_;
  std::unique_ptr<HashedWheelTimer> timer_;

  std::deque<Record> fixed_;                                 // scheduled by the test thread
  std::array<std::unique_ptr<Record[]>, kProducers> lanes_;  // one per producer
  std::atomic<int> published_[kProducers] = {};
  std::vector<PendingTask> handed_back_;

  std::atomic<int> running_{0};
  std::atomic<long> total_runs_{0};
  long runs_when_stopped_[2] = {0, 0};
  std::atomic<bool> stop_returned_{false};
  Violations violations_;
};

class ConservationStressTest : public ::testing::TestWithParam<ExecutorKind> {};

TEST_P(ConservationStressTest, ScheduleCancelStopConservesEveryTask) {
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StressRound r(GetParam().make(), 0, 100 + round);
    r.schedule_fixed_records();
    r.race_until_stopped();
    r.check_conservation_after_stop();
    r.print_outcomes(GetParam().name.c_str());
    r.destroy_timer_and_executor();
    r.run_or_drop_handed_back();
    EXPECT_EQ(r.rejected(), 0u);
    r.expect_no_violations();
  }
}

// The adopt variants, kRounds rounds each: the race and its checks, then `adopt` (one of the
// StressRound members that adopt the handed-back tasks into a second timer).
void run_adopt_rounds(const ExecutorKind& kind, unsigned first_seed,
                      void (StressRound::*adopt)()) {
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StressRound r(kind.make(), 0, first_seed + static_cast<unsigned>(round));
    r.schedule_fixed_records();
    r.race_until_stopped();
    r.check_conservation_after_stop();
    r.print_outcomes(kind.name.c_str());
    (r.*adopt)();
    r.destroy_timer_and_executor();
    r.expect_no_violations();
  }
}

TEST_P(ConservationStressTest, HandedBackTasksAdoptedIntoSecondTimer) {
  run_adopt_rounds(GetParam(), 200, &StressRound::adopt_into_second_timer);
}

TEST_P(ConservationStressTest, HandedBackTasksAdoptedWhileTheSecondTimerStops) {
  run_adopt_rounds(GetParam(), 400, &StressRound::adopt_while_the_second_timer_stops);
}

TEST_P(ConservationStressTest, MaxPendingRejectsAndRejectedNeverRun) {
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    StressRound r(GetParam().make(), 128, 300 + round);
    r.schedule_fixed_records();
    ASSERT_NO_FATAL_FAILURE(r.fill_to_max_pending());
    r.race_until_stopped();
    r.check_conservation_after_stop();
    r.print_outcomes(GetParam().name.c_str());
    r.destroy_timer_and_executor();
    r.run_or_drop_handed_back();
    EXPECT_GT(r.rejected_in_race(), 0u) << "the race never reached max_pending";
    r.expect_no_violations();
  }
}

// Refused schedule() calls (Rejected, Stopped) are not "accepted", so they must never show up in
// pending() nor take a max_pending slot, even transiently while they race with other calls.
class RefusalRaceStressTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kMaxPending = 8;
  static constexpr int kHammers = 2;
  static constexpr int kAttemptsPerHammer = 20000;

  // Threads that call schedule() on `timer` until told to stop or out of attempts. On a full or
  // stopped timer every call is refused; one that is accepted (it won a slot freed meanwhile) is
  // kept in `hammer_accepted_` so the test can tell.
  void start_hammers(HashedWheelTimer& timer) {
    finished_hammers_.store(0);
    for (int h = 0; h < kHammers; ++h) {
      hammers_.emplace_back([this, &timer] {
        for (int i = 0; i < kAttemptsPerHammer && !done_.load(); ++i) {
          try {
            TimerFuture f = timer.schedule_at([this] { hammered_runs_.fetch_add(1); }, kNever);
            std::lock_guard lock(mutex_);
            hammer_accepted_.push_back(f);
          } catch (const Rejected&) {
          } catch (const Stopped&) {
          }
        }
        finished_hammers_.fetch_add(1);
      });
    }
  }
  void TearDown() override { join_hammers(); }
  bool hammers_running() const { return finished_hammers_.load() < kHammers; }
  void join_hammers() {
    done_.store(true);
    for (auto& t : hammers_) t.join();
    hammers_.clear();
    done_.store(false);
  }
  std::size_t hammer_accepted() {
    std::lock_guard lock(mutex_);
    return hammer_accepted_.size();
  }

  std::vector<std::thread> hammers_;
  std::atomic<bool> done_{false};
  std::atomic<int> finished_hammers_{0};
  std::atomic<int> hammered_runs_{0};
  std::mutex mutex_;
  std::vector<TimerFuture> hammer_accepted_;  // guarded by mutex_
};

TEST_F(RefusalRaceStressTest, PendingCountsOnlyAcceptedTasksWhileRefusalsRace) {
  HashedWheelTimer timer(TimerOptions{.max_pending = kMaxPending});
  std::vector<TimerFuture> fillers;
  for (std::size_t i = 0; i < kMaxPending; ++i) fillers.push_back(timer.schedule_at([] {}, kNever));
  ASSERT_EQ(timer.pending(), kMaxPending);

  // Full timer: every hammered schedule() is Rejected; pending() must stay exactly kMaxPending.
  start_hammers(timer);
  std::size_t wrong_while_full = 0;
  std::size_t highest = 0;
  while (hammers_running()) {
    const std::size_t seen = timer.pending();
    wrong_while_full += seen != kMaxPending;
    highest = std::max(highest, seen);
  }
  join_hammers();
  EXPECT_EQ(hammer_accepted(), 0u);
  EXPECT_EQ(timer.pending(), kMaxPending);
  EXPECT_EQ(wrong_while_full, 0u) << "pending() read as high as " << highest << " with max_pending "
                                  << kMaxPending << " while Rejected schedule() calls raced";

  // Stopped timer: every schedule() is Stopped; pending() must stay 0.
  std::vector<PendingTask> handed_back = timer.stop();
  EXPECT_EQ(handed_back.size(), kMaxPending);
  start_hammers(timer);
  std::size_t wrong_after_stop = 0;
  highest = 0;
  while (hammers_running()) {
    const std::size_t seen = timer.pending();
    wrong_after_stop += seen != 0;
    highest = std::max(highest, seen);
  }
  join_hammers();
  EXPECT_EQ(hammer_accepted(), 0u);
  EXPECT_EQ(timer.pending(), 0u);
  EXPECT_EQ(wrong_after_stop, 0u) << "pending() read as high as " << highest
                                  << " after stop() while Stopped schedule() calls raced";
  EXPECT_EQ(hammered_runs_.load(), 0);
}

TEST_F(RefusalRaceStressTest, FreedSlotIsUsableWhileRejectionsRace) {
  HashedWheelTimer timer(TimerOptions{.max_pending = kMaxPending});
  std::vector<TimerFuture> fillers;
  for (std::size_t i = 0; i < kMaxPending; ++i) fillers.push_back(timer.schedule_at([] {}, kNever));

  // Each step frees one slot and takes it again at once. A hammer may legitimately win the slot
  // first; if none did, only kMaxPending - 1 tasks were accepted when this thread scheduled, so
  // Rejected is wrong however many refused calls race with it.
  start_hammers(timer);
  int spurious_rejections = 0;
  int legit_rejections = 0;
  int steps = 0;
  constexpr int kMaxSteps = 200000;
  for (std::size_t i = 0; hammers_running() && steps < kMaxSteps;
       i = (i + 1) % kMaxPending, ++steps) {
    const std::size_t hammer_wins_before = hammer_accepted();
    if (!fillers[i].cancel()) {  // no ASSERT here: the hammers must be joined before returning
      ADD_FAILURE() << "cancel() of a WAITING filler returned false";
      break;
    }
    try {
      fillers[i] = timer.schedule_at([] {}, kNever);
    } catch (const Rejected&) {
      join_hammers();
      if (hammer_accepted() == hammer_wins_before) {
        ++spurious_rejections;
      } else {
        ++legit_rejections;
      }
      // Quiet again: give the hammers' slots back and retake ours.
      {
        std::lock_guard lock(mutex_);
        for (auto& f : hammer_accepted_) f.cancel();
      }
      fillers[i] = timer.schedule_at([] {}, kNever);
      start_hammers(timer);
    }
  }
  join_hammers();
  EXPECT_EQ(spurious_rejections, 0)
      << "schedule() into a freed slot was Rejected " << spurious_rejections << " times out of "
      << steps << " (" << legit_rejections << " more lost the slot to a hammer, which is fine)";
  EXPECT_EQ(hammered_runs_.load(), 0);
}

// A cancel() that races stop() has lowered pending() when it returns true, also when it wins on a
// task stop() has just taken out to hand back, before stop() counted it as handed back. Each round
// races one task's cancel() against stop(), landing at a random point of stop()'s work. Without
// the handshake, 1 to 3 of every 10,000 winning cancels here returned with the task still counted,
// so this catches that in most runs, not all; tests/task_node_test.cpp checks the handshake itself
// every time.
TEST(CancelDuringStopStressTest, AWinningCancelHasLoweredPendingWhenItReturns) {
  constexpr int kRounds = WHEELTIMER_TEST_TSAN ? 600 : 30000;
  std::mt19937 random(20261123);
  int wins = 0;
  int still_counted = 0;
  for (int round = 0; round < kRounds; ++round) {
    HashedWheelTimer timer;
    TimerFuture task = timer.schedule([] {}, 1h);
    std::latch go(2);
    std::thread stopper([&] {
      go.arrive_and_wait();
      timer.stop();
    });
    go.arrive_and_wait();
    // Until stop() has begun, then a random delay: probes that are canceled at once, so that
    // only `task` is left to count.
    for (;;) {
      try {
        timer.schedule([] {}, 1h).cancel();
      } catch (const Stopped&) {
        break;
      }
    }
    const int delay = static_cast<int>(random() % 20000);
    std::atomic<int> spun{0};
    while (spun.fetch_add(1, std::memory_order_relaxed) < delay) {
    }
    if (task.cancel()) {
      ++wins;
      still_counted += timer.pending() != 0;
    }
    stopper.join();
  }
  EXPECT_EQ(still_counted, 0) << "of " << wins << " cancel() calls that won against stop()";
  EXPECT_GT(wins, 0) << "no cancel() won: the race was never run";
}

// Adopting a task that was canceled after stop() handed it back schedules nothing, so it is never
// pending on the adopting timer, not even for a moment: while one thread adopts such tasks into a
// timer with max_pending = 1, another thread's schedule() must always find room, and its pending()
// must read 0 once its own task is canceled (nothing else settles there). adopt() used to count
// the task and take the count back, which in a normal build refused about a thousand of these
// schedules a run.
TEST(AdoptRefusalStressTest, AdoptingCanceledTasksNeverTakesRoom) {
  constexpr std::size_t kTasks = WHEELTIMER_TEST_TSAN ? 20000 : 200000;
  std::vector<PendingTask> canceled;
  {
    HashedWheelTimer first;
    for (std::size_t i = 0; i < kTasks; ++i) first.schedule_at([] {}, kNever);
    canceled = first.stop();
  }
  ASSERT_EQ(canceled.size(), kTasks);
  for (PendingTask& task : canceled) ASSERT_TRUE(task.future().cancel());

  HashedWheelTimer second(TimerOptions{.max_pending = 1});
  std::atomic<bool> adopting{true};
  std::atomic<bool> scheduling{false};  // the adopts start once this thread's loop has begun
  std::size_t adopted_settled = 0;
  std::size_t refused = 0;  // while this thread's own task held the room: Rejected is right then
  std::thread adopter([&] {
    scheduling.wait(false, std::memory_order_acquire);
    for (PendingTask& task : canceled) {
      try {
        adopted_settled += second.adopt(std::move(task)).state() == TaskState::canceled;
      } catch (const Rejected&) {
        ++refused;
      }
    }
    adopting.store(false, std::memory_order_release);
  });
  int schedules = 0;
  int rejected = 0;
  int counted = 0;
  do {
    if (schedules == 1) {
      scheduling.store(true, std::memory_order_release);
      scheduling.notify_one();
    }
    ++schedules;
    try {
      TimerFuture task = second.schedule_at([] {}, kNever);
      EXPECT_TRUE(task.cancel());
      counted += second.pending() != 0;
    } catch (const Rejected&) {
      ++rejected;
    }
  } while (adopting.load(std::memory_order_acquire));
  adopter.join();
  EXPECT_EQ(adopted_settled + refused, kTasks) << "an adopted canceled task was not CANCELED";
  EXPECT_EQ(rejected, 0) << "of " << schedules << " schedule() calls on an empty timer";
  EXPECT_EQ(counted, 0) << "pending() read non-zero with nothing pending, in " << schedules
                        << " reads";
  EXPECT_EQ(second.pending(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Executors, ConservationStressTest,
                         ::testing::ValuesIn(wheeltimer::testing::executor_kinds(4)),
                         [](const ::testing::TestParamInfo<ExecutorKind>& info) {
                           return info.param.name;
                         });

}  // namespace
