#include "wheel_core.hpp"

#include <pthread.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include <wheeltimer/errors.hpp>

namespace wheeltimer::detail {
namespace {

// control_: bits 0-62 pending tasks, bit 63 "stop() has begun".
constexpr std::uint64_t kOnePending = 1;
constexpr std::uint64_t kStopping = std::uint64_t{1} << 63;
constexpr std::uint64_t kPendingMask = kStopping - 1;

// Netty's cap: a flood of schedule() calls delays the tick by at most this much work; the rest
// waits in the inbound queue for the next tick.
constexpr std::size_t kMaxTransferPerTick = 100000;
constexpr std::size_t kBatch = 256;
constexpr std::size_t kMinPrune = 1024;

// The timer whose task (or on_error) this thread is running, so stop() can refuse to wait for
// itself.
thread_local const WheelCore* running_in = nullptr;

constexpr std::size_t kMaxWheelSize = std::size_t{1} << 30;

TimerOptions validated(TimerOptions options) {
  if (options.tick <= Clock::duration::zero()) {
    throw std::invalid_argument("wheeltimer: TimerOptions::tick must be > 0, got " +
                                std::to_string(options.tick.count()) + " ns");
  }
  if (options.wheel_size == 0 || options.wheel_size > kMaxWheelSize) {
    throw std::invalid_argument("wheeltimer: TimerOptions::wheel_size must be in 1.." +
                                std::to_string(kMaxWheelSize) + ", got " +
                                std::to_string(options.wheel_size));
  }
  options.wheel_size = std::bit_ceil(options.wheel_size);
  return options;
}

}  // namespace

// What a timer hands its executor: a reference to the node and the dispatch epoch. It starts the
// task only if the node is still queued under that epoch, so once the task was canceled or
// handed back by stop() it is a no-op, and it never touches the timer unless the start succeeded
// (a wrapper may outlive its timer in a shared executor's queue).
class WheelCore::ExecutorWork {
 public:
  ExecutorWork(WheelCore* core, TaskNode* node, std::uint32_t epoch) noexcept
      : core_(core), node_(node), epoch_(epoch) {
    node_->retain();
  }
  ExecutorWork(ExecutorWork&& other) noexcept
      : core_(other.core_), node_(std::exchange(other.node_, nullptr)), epoch_(other.epoch_) {}
  ExecutorWork& operator=(ExecutorWork&&) = delete;
  ~ExecutorWork() {
    if (node_ != nullptr) node_->release();
  }

  void operator()() noexcept {
    if (node_ != nullptr && node_->start_dispatched(epoch_)) core_->run_started(node_);
  }

 private:
  WheelCore* core_;
  TaskNode* node_;
  std::uint32_t epoch_;
};

WheelCore::WheelCore(TimerOptions options, std::unique_ptr<TimeSource> time)
    : options_(validated(std::move(options))),
      time_(std::move(time)),
      start_(time_->now()),
      wheel_(options_.wheel_size),
      prune_at_(kMinPrune) {
  indicator_ = std::thread([this] { run_indicator(); });
}

WheelCore::~WheelCore() {
  if (indicator_.joinable()) stop();
}

// ---- Producers -------------------------------------------------------------------------------

void WheelCore::admit(const char* operation) {
  // Check, then count, in one compare-and-swap: pending() never shows a task that is refused.
  std::uint64_t current = control_.load(std::memory_order_acquire);
  do {
    if (current & kStopping) {
      throw Stopped(std::string("wheeltimer: ") + operation + "() after stop() has begun");
    }
    if (options_.max_pending != 0 && (current & kPendingMask) >= options_.max_pending) {
      throw Rejected(std::string("wheeltimer: ") + operation + "() refused: max_pending (" +
                     std::to_string(options_.max_pending) + ") tasks are already pending");
    }
  } while (!control_.compare_exchange_weak(current, current + kOnePending,
                                           std::memory_order_acq_rel, std::memory_order_acquire));
}

void WheelCore::settled_one() noexcept {
  control_.fetch_sub(kOnePending, std::memory_order_release);
}

std::size_t WheelCore::pending() const noexcept {
  return static_cast<std::size_t>(control_.load(std::memory_order_acquire) & kPendingMask);
}

TimerFuture WheelCore::schedule_at(Task task, Clock::time_point deadline) {
  if (!task) throw std::invalid_argument("wheeltimer: schedule_at() was given an empty task");
  admit("schedule");
  TaskNode* node = nullptr;
  try {
    node = TaskNode::create(std::move(task), deadline, this);
    if (!inbound_.enqueue(node)) throw std::bad_alloc();
  } catch (...) {
    if (node != nullptr) node->release(2);  // nobody else has seen it: both references
    settled_one();
    throw;
  }
  return TimerFuture(node);
}

TimerFuture WheelCore::adopt(PendingTask task) {
  if (task.node_ == nullptr) {
    throw std::invalid_argument("wheeltimer: adopt() was given an empty PendingTask");
  }
  admit("adopt");  // on refusal, `task` goes out of scope and cancels its future
  TaskNode* node = task.release();
  if (!node->attach(this)) {  // canceled since stop() handed it back: schedule nothing
    settled_one();
    return TimerFuture(node);
  }
  node->retain();  // the returned future's reference
  if (!inbound_.enqueue(node)) {
    if (node->detach()) {  // else a concurrent cancel() already settled it
      settled_one();
      node->cancel();
    }
    node->release(2);  // ours and the future's that will not be returned
    throw std::bad_alloc();
  }
  return TimerFuture(node);
}

void WheelCore::on_canceled(TaskNode* node, bool in_wheel) noexcept {
  // A node already in the wheel is queued so the indicator unlinks it on the next tick instead of
  // at its deadline; one still in the inbound queue is dropped when the indicator pops it. If the
  // queue cannot grow, the node is still dropped when its slot expires or at stop().
  if (in_wheel) {
    node->retain();
    if (!canceled_.enqueue(node)) node->release();
  }
  settled_one();  // last touch of this timer: stop() waits for pending() to reach zero
}

// ---- The indicator ---------------------------------------------------------------------------

void WheelCore::run_indicator() {
  pthread_setname_np(pthread_self(), options_.thread_name.substr(0, 15).c_str());
  while (time_->sleep_until(tick_time(current_tick_ + 1))) {
    ++current_tick_;
    transfer_inbound();
    unlink_canceled();
    expire_current_tick();
    prune_dispatched();
  }
}

Clock::time_point WheelCore::tick_time(std::uint64_t tick) const noexcept {
  const auto headroom = static_cast<std::uint64_t>((Clock::time_point::max() - start_).count());
  const auto tick_ns = static_cast<std::uint64_t>(options_.tick.count());
  if (tick > headroom / tick_ns) return Clock::time_point::max();
  return start_ + Clock::duration(static_cast<Clock::rep>(tick * tick_ns));
}

std::uint64_t WheelCore::target_tick(Clock::time_point deadline) const noexcept {
  if (deadline == Clock::time_point::max()) return Wheel::kNever;
  if (deadline <= start_) return 0;
  // The first tick whose time is at or after the deadline: tick_time(result) >= deadline.
  const auto since = static_cast<std::uint64_t>((deadline - start_).count());
  const auto tick_ns = static_cast<std::uint64_t>(options_.tick.count());
  return since / tick_ns + (since % tick_ns != 0 ? 1 : 0);
}

void WheelCore::transfer_inbound() {
  TaskNode* batch[kBatch];
  for (std::size_t moved = 0; moved < kMaxTransferPerTick;) {
    const std::size_t count =
        inbound_.try_dequeue_bulk(batch, std::min(kBatch, kMaxTransferPerTick - moved));
    if (count == 0) break;
    moved += count;
    for (std::size_t i = 0; i < count; ++i) {
      TaskNode* node = batch[i];
      if (!node->enter_wheel()) {  // canceled before it reached the wheel
        node->release();
        continue;
      }
      // A slot the wheel has already passed means "due now": this tick, not a rotation later.
      wheel_.insert(node, std::max(target_tick(node->deadline()), current_tick_));
    }
  }
}

void WheelCore::unlink_canceled() {
  TaskNode* batch[kBatch];
  for (std::size_t done = 0; done < kMaxTransferPerTick;) {
    const std::size_t count = canceled_.try_dequeue_bulk(batch, kBatch);
    if (count == 0) break;
    done += count;
    for (std::size_t i = 0; i < count; ++i) {
      TaskNode* node = batch[i];
      const bool in_wheel = Wheel::contains(node);
      if (in_wheel) wheel_.unlink(node);
      node->release(in_wheel ? 2 : 1);  // the queue entry's reference, and the wheel's if linked
    }
  }
}

void WheelCore::expire_current_tick() {
  due_.clear();
  wheel_.expire(current_tick_, tick_time(current_tick_),
                [this](TaskNode* node) { due_.push_back(node); });
  // Tasks due in the same tick start in deadline order.
  std::stable_sort(due_.begin(), due_.end(), [](const TaskNode* a, const TaskNode* b) {
    return a->deadline() < b->deadline();
  });
  for (std::size_t i = 0; i < due_.size(); ++i) {
    if (control_.load(std::memory_order_acquire) & kStopping) {
      // stop() has begun while earlier tasks of this tick ran: what has not started yet goes
      // back into the wheel, where stop() finds it and hands it back.
      for (; i < due_.size(); ++i) wheel_.insert(due_[i], current_tick_);
      return;
    }
    dispatch(due_[i]);
  }
}

void WheelCore::dispatch(TaskNode* node) {
  if (!options_.executor) {
    if (node->start_attached()) run_started(node);
    node->release();
    return;
  }
  const auto epoch = node->mark_dispatched();
  if (!epoch) {  // canceled meanwhile
    node->release();
    return;
  }
  dispatched_.push_back(node);  // keeps the wheel's reference, so stop() can find it
  try {
    options_.executor->execute(ExecutorWork(this, node, *epoch));
  } catch (...) {
    // The executor refused the work: on_error is told, then the task is canceled (it never ran).
    // on_error runs as the timer's own code here, so stop() from it is refused like from a task.
    const WheelCore* outer = std::exchange(running_in, this);
    report(std::current_exception());
    running_in = outer;
    node->refuse(*epoch);
  }
}

void WheelCore::run_started(TaskNode* node) noexcept {
  settled_one();
  const WheelCore* outer = std::exchange(running_in, this);
  node->run([this](const std::exception_ptr& error) { report(error); });
  running_in = outer;
}

void WheelCore::report(std::exception_ptr error) const noexcept {
  if (!options_.on_error) return;
  try {
    options_.on_error(std::move(error));
  } catch (...) {  // on_error's own exception is swallowed, as documented
  }
}

void WheelCore::prune_dispatched() {
  if (dispatched_.size() < prune_at_) return;
  // Keep what stop() may still need: tasks queued in the executor, and running ones to wait for.
  std::erase_if(dispatched_, [](TaskNode* node) {
    const TaskState state = node->state();
    if (state == TaskState::waiting || state == TaskState::running) return false;
    node->release();
    return true;
  });
  prune_at_ = std::max(kMinPrune, 2 * dispatched_.size());
}

// ---- stop() ----------------------------------------------------------------------------------

std::vector<PendingTask> WheelCore::stop() {
  if (running_in == this) {
    throw std::logic_error(
        "wheeltimer: stop() called from inside one of the timer's own tasks (it would wait for "
        "itself)");
  }
  std::lock_guard<std::mutex> guard(stop_mutex_);
  if (stopped_) return {};
  control_.fetch_or(kStopping, std::memory_order_acq_rel);
  time_->interrupt();
  if (indicator_.joinable()) indicator_.join();

  // The indicator has exited: its wheel, queues and dispatched list are ours now. Room for the
  // tasks known so far is made before any is taken out, so an allocation failure cannot strand
  // half of them.
  std::vector<PendingTask> handed_back;
  std::vector<TaskNode*> running;
  handed_back.reserve(wheel_.size() + dispatched_.size());
  running.reserve(dispatched_.size());
  const auto reclaim = [&](TaskNode* node) {
    if (node->detach()) {
      settled_one();
      handed_back.push_back(PendingTask(node));
    } else if (node->state() == TaskState::running) {
      running.push_back(node);
    } else {
      node->release();
    }
  };
  wheel_.drain(reclaim);
  for (TaskNode* dispatched : std::exchange(dispatched_, {})) reclaim(dispatched);
  for (TaskNode* started : running) {
    started->wait_until(Clock::time_point::max());
    started->release();
  }
  // Every accepted task keeps pending() above zero until it settles or is reclaimed here. Tasks
  // that producers admitted before the flag may still be on their way into the inbound queue,
  // and cancel() calls that won elsewhere may still be finishing: drain until nothing is pending.
  // After that no thread touches this timer again.
  for (TaskNode* node = nullptr;;) {
    while (inbound_.try_dequeue(node)) reclaim(node);
    if ((control_.load(std::memory_order_acquire) & kPendingMask) == 0) break;
    std::this_thread::yield();
  }
  for (TaskNode* node = nullptr; canceled_.try_dequeue(node);) node->release();

  std::stable_sort(handed_back.begin(), handed_back.end(),
                   [](const PendingTask& a, const PendingTask& b) {
                     return a.deadline() < b.deadline();
                   });
  stopped_ = true;
  return handed_back;
}

}  // namespace wheeltimer::detail
