// The soak's threads and tasks: the timers it builds, the schedule attempts, producers,
// cancellers, the rotator, the periodic checker, what a task does when it runs, and on_error.
#include "soak.hpp"

#include <charconv>
#include <chrono>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <pthread.h>

// TimerOptions{.tick = ...} is the documented way to build options; -Wextra would flag every
// member left to its default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace soak {

namespace {

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

}  // namespace

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

}  // namespace soak
