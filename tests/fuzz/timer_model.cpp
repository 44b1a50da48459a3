#include "timer_model.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

#include "manual_clock.hpp"
#include "wheel_core.hpp"

namespace wheeltimer::fuzz {
namespace {

using namespace std::chrono_literals;
using detail::ManualClock;
using detail::WheelCore;

constexpr Clock::duration kTick = 1ms;
constexpr std::size_t kMaxOperations = 64;
constexpr auto kDueWithin = 10s;  // a due task handed to a pool must start by then

// Reads the input front to back; zeros once it runs out.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return position_ >= size_; }
  std::uint8_t next() { return position_ < size_ ? data_[position_++] : 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
};

// What a task's body records. Written by the task before its future turns FINISHED; read by the
// checker only after it has seen FINISHED (or to confirm that a task never ran).
struct Probe {
  std::atomic<int> runs{0};
  Clock::time_point ran_at{};
};

// waiting: in a timer's wheel or queues; queued: handed to the held executor, not started.
enum class Fate { waiting, queued, finished, canceled, handed_back };
enum class Throws { nothing, an_int, a_runtime_error };

// Whether `error` is what a task that `throws` left in its future: nothing, the int 7, or the
// std::runtime_error "task failed" (not only whether there is one).
bool threw(const std::exception_ptr& error, Throws throws) {
  if (!error) return throws == Throws::nothing;
  try {
    std::rethrow_exception(error);
  } catch (int value) {
    return throws == Throws::an_int && value == 7;
  } catch (const std::runtime_error& thrown) {
    return throws == Throws::a_runtime_error && std::string(thrown.what()) == "task failed";
  } catch (...) {
    return false;
  }
}

// An executor the model drives. It keeps what it is given until release_all(), or refuses it
// (execute() throws) after dropping it, keeping it, or running it, so the model sees tasks queued
// in an executor meet cancel(), stop() and adopt(), and wrappers that start after their task was
// canceled, handed back or adopted elsewhere.
class HeldExecutor final : public Executor {
 public:
  enum class Mode : std::uint8_t { hold, refuse, hold_and_refuse, run_and_refuse };
  static constexpr const char* kRefusal = "executor refused";

  void set_mode(Mode mode) {
    const std::lock_guard lock(mutex_);
    mode_ = mode;
  }

  // On the indicator's thread.
  void execute(Task work) override {
    std::unique_lock lock(mutex_);
    switch (mode_) {
      case Mode::hold:
        held_.push_back(std::move(work));
        return;
      case Mode::refuse:
        break;
      case Mode::hold_and_refuse:
        held_.push_back(std::move(work));
        break;
      case Mode::run_and_refuse:
        lock.unlock();
        work();
        break;
    }
    throw std::runtime_error(kRefusal);
  }

  // Runs everything held so far on the calling thread, in the order it came.
  void release_all() {
    std::deque<Task> work;
    {
      const std::lock_guard lock(mutex_);
      work.swap(held_);
    }
    for (Task& each : work) each();
  }

 private:
  std::mutex mutex_;
  Mode mode_ = Mode::hold;
  std::deque<Task> held_;
};

// Whether `error` is the held executor's refusal.
bool refused(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const std::runtime_error& thrown) {
    return std::string(thrown.what()) == HeldExecutor::kRefusal;
  } catch (...) {
    return false;
  }
}

struct ModelTask {
  TimerFuture future;
  Clock::time_point deadline;
  Throws throws = Throws::nothing;
  Fate fate = Fate::waiting;
  int owner = -1;                 // the timer it waits in, while waiting or queued
  Clock::time_point ran_at;       // the clock's time when the model saw it become due
  bool run_by_caller = false;     // PendingTask::run(): no deadline applies
};

struct ModelTimer {
  std::unique_ptr<WheelCore> core;
  bool stopped = false;
};

struct HandedBack {
  std::optional<PendingTask> task;  // empty once run, adopted or dropped
  std::size_t model_index;
};

class Checker {
 public:
  explicit Checker(Bytes& bytes) : bytes_(bytes) {
    const std::uint8_t setup = bytes_.next(), limit = bytes_.next();
    options_.tick = kTick;
    options_.wheel_size = std::size_t{1} << (setup % 7);  // 1 .. 64 slots
    options_.max_pending = limit % 4 == 0 ? (limit >> 2) % 8 + 1 : 0;  // a quarter have a limit
    options_.on_error = [this](std::exception_ptr error) {
      errors_.fetch_add(1);
      if (!threw(error, Throws::an_int) && !threw(error, Throws::a_runtime_error) &&
          !refused(error)) {
        unknown_errors_.fetch_add(1);
      }
    };
    switch ((setup >> 3) % 5) {
      case 0: break;  // inline on the indicator
      case 1: options_.executor = std::make_shared<InlineExecutor>(); break;
      case 2: options_.executor = std::make_shared<CallerRunsPool>(1, 2); break;
      case 3:
        held_executor_ = std::make_shared<HeldExecutor>();
        options_.executor = held_executor_;
        break;
      default:
#if WHEELTIMER_HAS_TBB
        options_.executor = std::make_shared<TbbArenaExecutor>(1);
#else
        options_.executor = std::make_shared<CallerRunsPool>(2, 1);
#endif
        break;
    }
    inline_ = !options_.executor || dynamic_cast<InlineExecutor*>(options_.executor.get());
    add_timer();
  }

  std::string run() {
    for (std::size_t step = 0; step < kMaxOperations && !bytes_.empty() && error_.empty(); ++step) {
      // Ops 8 and 9 drive the held executor, so without one a byte picks among the first 8.
      const std::uint8_t op = bytes_.next();
      switch (op % (held_executor_ ? 10 : 8)) {
        case 0:
        case 1: schedule(); break;
        case 2: cancel(); break;
        case 3: advance(); break;
        case 4: stop(timer_for(bytes_.next())); break;
        case 5: adopt(); break;
        case 6: run_handed_back(); break;
        case 7: drop_handed_back(); break;
        case 8: release_held(); break;
        default: set_held_mode(bytes_.next()); break;
      }
      if (error_.empty()) check("after operation " + std::to_string(step));
    }
    if (error_.empty()) finish();
    return error_;
  }

 private:
  void add_timer() {
    ModelTimer timer;
    timer.core = std::make_unique<WheelCore>(options_, clock_->source());
    timers_.push_back(std::move(timer));
  }

  // 0 is the first timer; an odd byte picks the second, creating it on first use.
  int timer_for(std::uint8_t byte) {
    if ((byte & 1) == 0) return 0;
    if (timers_.size() < 2) add_timer();
    return 1;
  }

  // Accepted by `timer` and not started, canceled or handed back: what its pending() counts.
  std::size_t waiting_in(int timer) const {
    return static_cast<std::size_t>(std::count_if(tasks_.begin(), tasks_.end(), [&](const auto& t) {
      return not_started(t) && t.owner == timer;
    }));
  }
  static bool not_started(const ModelTask& task) {
    return task.fate == Fate::waiting || task.fate == Fate::queued;
  }

  // A task is dispatched at the first clock reading at or after its deadline: within the advance()
  // that reaches it, or right after schedule()/adopt() if it is already due (which wakes the
  // indicator; advance(0) waits for it to finish). Every executor but the held one runs it then:
  // marks every waiting task due by now as finished, or as the held executor's mode says.
  void settle_due() {
    const Clock::time_point now = clock_->now();
    for (ModelTask& task : tasks_) {
      if (task.fate != Fate::waiting || task.deadline > now) continue;
      if (held_executor_) {
        dispatch_to_held(task, now);
        continue;
      }
      // An inline task has run by the time advance() returns; a pool may still be running it.
      if (!inline_ && !task.future.wait_for(kDueWithin)) {
        return fail("a task due at " + describe(task.deadline) + " never finished");
      }
      finished(task, now);
    }
  }

  // A timer ran the task at `now` (on_error hears what it threw).
  void finished(ModelTask& task, Clock::time_point now) {
    task.fate = Fate::finished;
    task.ran_at = now;
    if (task.throws != Throws::nothing) ++expected_errors_;
  }

  // What the indicator's execute() call on the held executor did with a due task. A refusal goes
  // to on_error and cancels the task, unless the executor ran it first.
  void dispatch_to_held(ModelTask& task, Clock::time_point now) {
    switch (held_mode_) {
      case HeldExecutor::Mode::hold:
        task.fate = Fate::queued;
        return;
      case HeldExecutor::Mode::refuse:
      case HeldExecutor::Mode::hold_and_refuse:
        task.fate = Fate::canceled;
        break;
      case HeldExecutor::Mode::run_and_refuse:
        finished(task, now);
        break;
    }
    ++expected_errors_;
  }

  // Runs every wrapper the held executor keeps: each queued task runs now, and the wrappers of
  // tasks canceled, refused, handed back or adopted since then start nothing.
  void release_held() {
    if (!held_executor_) return;  // finish() calls it with any executor
    held_executor_->release_all();
    const Clock::time_point now = clock_->now();
    for (ModelTask& task : tasks_) {
      if (task.fate == Fate::queued) finished(task, now);
    }
  }

  void set_held_mode(std::uint8_t byte) {
    held_mode_ = static_cast<HeldExecutor::Mode>(byte % 4);
    held_executor_->set_mode(held_mode_);
  }

  void run_if_due(const ModelTask& task) {
    if (task.deadline > clock_->now()) return;
    clock_->advance(0ns);
    settle_due();
  }

  bool refuses(int timer, const char* operation, std::exception_ptr& refusal,
               std::optional<std::string>& expected) {
    const ModelTimer& model = timers_[static_cast<std::size_t>(timer)];
    if (model.stopped) {
      expected = "Stopped";
    } else if (options_.max_pending != 0 && waiting_in(timer) >= options_.max_pending) {
      expected = "Rejected";
    }
    std::string got;
    try {
      if (refusal) std::rethrow_exception(refusal);
    } catch (const Stopped&) {
      got = "Stopped";
    } catch (const Rejected&) {
      got = "Rejected";
    }
    if (got != expected.value_or("")) {
      fail(std::string(operation) + " on timer " + std::to_string(timer) + ": expected " +
           expected.value_or("acceptance") + ", got " + (got.empty() ? "acceptance" : got));
    }
    return !got.empty();
  }

  void schedule() {
    const std::uint8_t how = bytes_.next(), delay = bytes_.next(), fraction = bytes_.next();
    const int timer = timer_for(how);
    const Clock::time_point now = clock_->now();
    Clock::time_point deadline;
    if (delay == 255) {
      deadline = Clock::time_point::max();
    } else if (delay >= 240) {
      deadline = now - (delay - 239) * kTick / 2;
    } else if (delay >= 216) {  // 1 to 2^23 ticks out: lands on upper levels and cascades down
      deadline = now + (std::int64_t{1} << (delay - 216)) * kTick + fraction * (kTick / 256);
    } else {
      deadline = now + static_cast<int>(delay % (4 * options_.wheel_size + 4)) * kTick +
                 fraction * (kTick / 256);
    }
    ModelTask task;
    task.deadline = deadline;
    task.throws = static_cast<Throws>((how >> 1) % 3);
    Probe& probe = probes_.emplace_back();
    const Throws throws = task.throws;
    ManualClock* clock = clock_.get();
    std::exception_ptr refusal;
    try {
      task.future = timers_[static_cast<std::size_t>(timer)].core->schedule_at(
          [&probe, clock, throws] {
            probe.ran_at = clock->now();
            probe.runs.fetch_add(1);
            if (throws == Throws::an_int) throw 7;
            if (throws == Throws::a_runtime_error) throw std::runtime_error("task failed");
          },
          deadline);
    } catch (...) {
      refusal = std::current_exception();
    }
    std::optional<std::string> expected;
    if (refuses(timer, "schedule", refusal, expected)) {
      probes_.pop_back();
      return;
    }
    task.owner = timer;
    tasks_.push_back(std::move(task));
    run_if_due(tasks_.back());
  }

  void cancel() {
    const std::uint8_t which = bytes_.next();
    if (tasks_.empty()) return;
    ModelTask& task = tasks_[which % tasks_.size()];
    const bool expected = not_started(task) || task.fate == Fate::handed_back;
    const bool got = task.future.cancel();
    if (got != expected) return fail("cancel() returned " + std::to_string(got));
    if (got) task.fate = Fate::canceled;
  }

  void advance() {
    const std::uint8_t ticks = bytes_.next(), fraction = bytes_.next();
    if (ticks >= 232) {  // a long jump: up to 2^23 ticks, across many cascades at once
      clock_->advance((std::int64_t{1} << (ticks - 232)) * kTick + fraction * (kTick / 256));
    } else {
      clock_->advance(static_cast<int>(ticks % (2 * options_.wheel_size + 3)) * kTick +
                      fraction * (kTick / 256));
    }
    settle_due();
  }

  void stop(int timer) {
    ModelTimer& model = timers_[static_cast<std::size_t>(timer)];
    std::vector<PendingTask> returned = model.core->stop();
    if (model.stopped) {
      if (!returned.empty()) fail("a second stop() returned tasks");
      return;
    }
    model.stopped = true;
    std::vector<std::size_t> expected;
    for (std::size_t i = 0; i < tasks_.size(); ++i) {
      if (not_started(tasks_[i]) && tasks_[i].owner == timer) expected.push_back(i);
    }
    if (returned.size() != expected.size()) {
      return fail("stop() returned " + std::to_string(returned.size()) + " tasks, expected " +
                  std::to_string(expected.size()));
    }
    const auto by_deadline = [](const PendingTask& a, const PendingTask& b) {
      return a.deadline() < b.deadline();
    };
    if (!std::is_sorted(returned.begin(), returned.end(), by_deadline)) {
      return fail("stop() did not order tasks by deadline");
    }
    for (std::size_t i = 0; i < returned.size(); ++i) {
      const TimerFuture future = returned[i].future();
      const auto match = std::find_if(expected.begin(), expected.end(), [&](std::size_t index) {
        return tasks_[index].future == future;
      });
      if (match == expected.end()) return fail("stop() returned a task that had started");
      ModelTask& task = tasks_[*match];
      if (returned[i].deadline() != task.deadline) return fail("a handed-back deadline changed");
      task.fate = Fate::handed_back;
      task.owner = -1;
      handed_back_.push_back({std::move(returned[i]), *match});
      expected.erase(match);
    }
  }

  HandedBack* pick_handed_back() {
    const std::uint8_t which = bytes_.next();
    if (handed_back_.empty()) return nullptr;
    HandedBack& entry = handed_back_[which % handed_back_.size()];
    return entry.task ? &entry : nullptr;
  }

  void adopt() {
    HandedBack* entry = pick_handed_back();
    const int timer = timer_for(bytes_.next());
    if (entry == nullptr) return;
    ModelTask& task = tasks_[entry->model_index];
    std::exception_ptr refusal;
    TimerFuture returned;
    try {
      returned = timers_[static_cast<std::size_t>(timer)].core->adopt(std::move(*entry->task));
    } catch (...) {
      refusal = std::current_exception();
    }
    entry->task.reset();
    std::optional<std::string> expected;
    if (refuses(timer, "adopt", refusal, expected)) {
      task.fate = Fate::canceled;  // a refused task's future is canceled
      return;
    }
    if (!(returned == task.future)) return fail("adopt() returned a different future");
    if (task.fate == Fate::canceled) return;  // canceled meanwhile: nothing scheduled
    task.fate = Fate::waiting;
    task.owner = timer;
    run_if_due(task);
  }

  void run_handed_back() {
    HandedBack* entry = pick_handed_back();
    if (entry == nullptr) return;
    ModelTask& task = tasks_[entry->model_index];
    entry->task->run();
    entry->task.reset();
    if (task.fate == Fate::handed_back) {
      task.fate = Fate::finished;
      task.run_by_caller = true;
    }
  }

  void drop_handed_back() {
    HandedBack* entry = pick_handed_back();
    if (entry == nullptr) return;
    entry->task.reset();
    ModelTask& task = tasks_[entry->model_index];
    if (task.fate == Fate::handed_back) task.fate = Fate::canceled;
  }

  // Stops every timer and drops what they hand back: every task must end FINISHED or CANCELED.
  // Then what the held executor still keeps runs, and must start nothing.
  void finish() {
    for (std::size_t timer = 0; timer < timers_.size() && error_.empty(); ++timer) {
      stop(static_cast<int>(timer));
    }
    for (HandedBack& entry : handed_back_) {
      if (!entry.task) continue;
      entry.task.reset();
      ModelTask& task = tasks_[entry.model_index];
      if (task.fate == Fate::handed_back) task.fate = Fate::canceled;
    }
    release_held();
    if (error_.empty()) check("at the end");
  }

  void check(const std::string& when) {
    const Clock::time_point now = clock_->now();
    for (std::size_t i = 0; i < tasks_.size() && error_.empty(); ++i) {
      const ModelTask& task = tasks_[i];
      const Probe& probe = probes_[i];
      const TaskState expected = task.fate == Fate::finished   ? TaskState::finished
                                 : task.fate == Fate::canceled ? TaskState::canceled
                                                               : TaskState::waiting;  // or queued
      const std::string which = when + ", task " + std::to_string(i) + " (deadline " +
                                describe(task.deadline) + ", now " + describe(now) + ")";
      if (task.future.state() != expected) {
        return fail(which + ": state " + std::string(to_string(task.future.state())) +
                    ", model says " + std::string(to_string(expected)));
      }
      if (task.future.deadline() != task.deadline) {
        return fail(which + ": the future's deadline is " + describe(task.future.deadline()));
      }
      const int runs = probe.runs.load();
      if (runs != (task.fate == Fate::finished ? 1 : 0)) {
        return fail(which + ": ran " + std::to_string(runs) + " times");
      }
      if (task.fate != Fate::finished) continue;
      if (!task.run_by_caller && probe.ran_at < task.deadline) return fail(which + ": ran early");
      if (!task.run_by_caller && probe.ran_at != task.ran_at) {
        return fail(which + ": ran at " + describe(probe.ran_at) + ", model says " +
                    describe(task.ran_at));
      }
      if (!threw(task.future.exception(), task.throws)) {
        return fail(which + ": exception() is not what the task threw");
      }
    }
    if (error_.empty() && errors_.load() != expected_errors_) {
      fail(when + ": on_error was told " + std::to_string(errors_.load()) + " times, model says " +
           std::to_string(expected_errors_));
    }
    if (error_.empty() && unknown_errors_.load() != 0) {
      fail(when + ": on_error was told something neither a task nor the executor threw");
    }
    for (std::size_t timer = 0; timer < timers_.size() && error_.empty(); ++timer) {
      const std::size_t expected = timers_[timer].stopped ? 0 : waiting_in(static_cast<int>(timer));
      const std::size_t got = timers_[timer].core->pending();
      if (got != expected) {
        fail(when + ": timer " + std::to_string(timer) + " pending() " + std::to_string(got) +
             ", model says " + std::to_string(expected));
      }
    }
  }

  std::string describe(Clock::time_point time) const {
    if (time == Clock::time_point::max()) return "never";
    std::ostringstream text;
    text << std::chrono::duration<double, std::milli>(time - origin_).count() << " ms";
    return text.str();
  }

  void fail(const std::string& message) {
    if (error_.empty()) error_ = message;
  }

  Bytes& bytes_;
  // Declared first so they outlive the executor and timers (queued work refers to probes).
  std::deque<Probe> probes_;
  std::shared_ptr<ManualClock> clock_ = ManualClock::create();
  const Clock::time_point origin_ = clock_->now();
  std::atomic<int> errors_{0};          // on_error's calls
  std::atomic<int> unknown_errors_{0};  // ... with an exception no task or executor threw
  int expected_errors_ = 0;
  std::shared_ptr<HeldExecutor> held_executor_;  // when the timers' executor is the held one
  HeldExecutor::Mode held_mode_ = HeldExecutor::Mode::hold;
  TimerOptions options_;
  bool inline_ = true;
  std::vector<ModelTimer> timers_;
  std::vector<ModelTask> tasks_;
  std::vector<HandedBack> handed_back_;
  std::string error_;
};

}  // namespace

std::string check_against_model(const std::uint8_t* data, std::size_t size) {
  Bytes bytes(data, size);
  auto checker = std::make_unique<Checker>(bytes);
  std::string error = checker->run();
  // A timer that disagreed with the model may never finish stopping (a task it counts as pending
  // that another timer ran): leave it running, so that the disagreement is reported, not a hang.
  if (!error.empty()) static_cast<void>(checker.release());
  return error;
}

}  // namespace wheeltimer::fuzz
