// The soak's checks: each stop(), matching the tasks it hands back to their records and handing
// them on, settling finished and canceled records, and the final shutdown.
#include "soak.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace soak {

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

}  // namespace soak
