#include "wheel_core.hpp"

#include <pthread.h>
#include <sys/prctl.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <future>
#include <limits>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <wheeltimer/errors.hpp>

#include "indicator_steps.hpp"
#include "take_in_turn.hpp"

namespace wheeltimer::detail {
namespace {

// control_: bits 0-61 tasks admitted (wrapping), bit 63 "stop() has begun". The settled counts
// (in stripes_) wrap at 2^64; counts are compared modulo 2^62.
constexpr std::uint64_t kAdmittedMask = (std::uint64_t{1} << 62) - 1;
constexpr std::uint64_t kStopping = std::uint64_t{1} << 63;

// How many of `admitted` tasks `settled` leaves, modulo 2^62; zero if `settled` is ahead (it was
// read after `admitted` and counts tasks admitted since).
std::uint64_t left_over(std::uint64_t admitted, std::uint64_t settled) noexcept {
  const std::uint64_t difference = (admitted - settled) & kAdmittedMask;
  return difference > kAdmittedMask / 2 ? 0 : difference;
}

// The stripe of a timer's stripes_ this thread uses, handed out round-robin on its first use, so
// the first kStripes threads each get one of their own.
constexpr unsigned kNoStripe = ~0u;
std::atomic<unsigned> next_stripe{0};
thread_local unsigned settle_stripe = kNoStripe;
// The list of its stripe this thread pushes its next canceled node onto: each in turn, so the
// lists stay even, and the indicator, taking one node off each in turn, frees one thread's nodes
// in the reverse order of its cancels (see for_each_canceled()).
thread_local unsigned canceled_turn = 0;

// A flood of schedule() or cancel() calls delays due tasks by at most about this much work per
// round, each (intake may take one batch more: see InboundLanes::take_round()); the rest waits
// in its lanes or lists for the next round, which follows at once. Netty takes 100,000 a tick;
// at 50-90 ns each that held due tasks back 4-9 ms in `wheeltimer-bench fire`'s scheduling loop.
constexpr std::size_t kMaxNodesPerRound = 4096;
// How many canceled nodes in the wheel behind the one taken unlink_canceled() unlinks: enough for
// a few cache misses in flight.
constexpr std::size_t kUnlinkLag = 8;

// Cascaded nodes moved per round, between rounds of starting due tasks: a due task waits for at
// most one chunk of cascading (and one round of intake and of unlinking). In `wheeltimer-bench
// fire` a level-1 slot of ~490,000 nodes cascades from 448 ms on. The p99 lateness of the tasks
// due 400-500 ms, median of 8-9 runs: 0.42 ms with chunks of 4,096 (up to 1.8 ms), 0.28 ms with
// 1,024 (up to 0.65), at no measurable cost in CPU.
constexpr std::size_t kCascadeChunk = 1024;
// How far ahead of real time the wheel runs: tasks due within this are in the due queue, and an
// upper slot starts cascading this long before its first task is due, so a big cascade, worked
// through in chunks, is done before anything in it is due.
constexpr Clock::duration kLookahead = std::chrono::milliseconds(64);
constexpr std::size_t kMinPrune = 1024;
// The real clock's timed sleeps end no sooner than tick / kCoalescingPerTick (at most
// kMaxCoalescing) after the last one that ran to its time: a task in a dense stream starts at
// most that much (plus the OS's wake-up latency) late. Measured with
// `wheeltimer-bench fire` (1,000,000 over 1 s, 1 ms tick): a tenth of a tick cut the wake-ups
// from ~8,500 to ~5,200 and the firing CPU by a fifth, while the kernel's default timer slack
// (below) still added its 50 us to every sleep. Without that slack, a seventh keeps a dense
// stream's wake-ups near where they were (the process's voluntary context switches 5,494 against
// 5,039, medians of 13 runs each: 9% more), for the same CPU (0.637 against 0.629 s) and median
// lateness (0.116 against 0.121 ms).
// Never more than kMaxCoalescing, so a coarse tick (a second, an hour) does not make tasks that
// many sevenths of a second late; with ticks of 7 ms or more that bounds timed wake-ups to a
// thousand a second (about 7,000 with a 1 ms tick).
constexpr int kCoalescingPerTick = 7;
constexpr Clock::duration kMaxCoalescing = std::chrono::milliseconds(1);
// Linux lets a thread's timed sleep end up to its timer slack late (50 us by default), to batch
// wake-ups across the system. The indicator batches its own (above); the kernel's slack on top
// only made lone tasks late: one task a millisecond, on a 1 ms tick, started at a median of 96 us
// late with it and 49 us with 1 us (medians of 5 runs each). prctl() takes 0 for "the default".
constexpr unsigned long kTimerSlackNs = 1000;
// How long the indicator waits before trying again when it found no memory for its own work.
constexpr Clock::duration kOutOfMemoryRetry = std::chrono::milliseconds(1);

// The timer whose task (or on_error) this thread is running, so stop() can refuse to wait for
// itself.
thread_local const WheelCore* running_in = nullptr;
// The timer whose indicator this thread is. A thread id would not do: once the indicator has been
// joined, a new thread may get its id.
thread_local const WheelCore* indicator_of = nullptr;

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

// Linux keeps at most 15 bytes of a thread's name. Cut there, but never inside a UTF-8 character,
// which would leave top -H an invalid byte sequence.
std::string indicator_name(const std::string& configured) {
  constexpr std::size_t kLongest = 15;
  if (configured.size() <= kLongest) return configured;
  std::size_t length = kLongest;
  const auto continuation = [](char byte) {
    return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
  };
  while (length > 0 && continuation(configured[length])) --length;
  return configured.substr(0, length);
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
    // The run drops this wrapper's reference in the step that publishes FINISHED.
    if (node_ != nullptr && node_->start_dispatched(epoch_)) {
      core_->run_started(std::exchange(node_, nullptr));
    }
  }

 private:
  WheelCore* core_;
  TaskNode* node_;
  std::uint32_t epoch_;
};

// Nothing may throw before executor_ holds the reference: building the by-value options does not.
static_assert(std::is_nothrow_move_constructible_v<TimerOptions>);

WheelCore::WheelCore(TimerOptions options, std::unique_ptr<TimeSource> time)
    : executor_(std::move(options.executor)),  // first, so that a failure below releases it safely
      options_(validated(std::move(options))),
      time_(time ? std::move(time)
                 : std::make_unique<SteadyTimeSource>(
                       std::min(options_.tick / kCoalescingPerTick, kMaxCoalescing))),
      start_(time_->now()),
      lookahead_ticks_(std::max<std::uint64_t>(
          1, static_cast<std::uint64_t>(kLookahead / options_.tick))),
      wheel_(options_.wheel_size, start_, options_.tick),
      due_(wheel_, lookahead_ticks_),
      prune_at_(kMinPrune) {
  // The thread names itself (a prctl() on its own thread; naming it from here would write
  // /proc/self/task/<tid>/comm, which a sandbox or a non-dumpable process may refuse), and the
  // constructor waits for that, so the name shows as soon as the timer exists.
  std::promise<void> named;
  std::future<void> done_naming = named.get_future();
  indicator_ = std::thread([this, name = indicator_name(options_.thread_name),
                            named = std::move(named)]() mutable {
    indicator_of = this;
    pthread_setname_np(pthread_self(), name.c_str());
    prctl(PR_SET_TIMERSLACK, kTimerSlackNs);  // a refusal would cost accuracy, nothing else
    named.set_value();
    run_indicator();
  });
  done_naming.wait();
}

WheelCore::~WheelCore() {
  stop_discarding();
  // An adopt() whose task was canceled between attach and push can leave its node in the inbound
  // queue after stop() has drained it (pending() had already dropped): release what is left.
  for (TaskNode* node = nullptr; inbound_.take(&node, 1) != 0;) node->release();
  // executor_, the first member, is the last to go (see ExecutorReference).
}

// ---- Producers -------------------------------------------------------------------------------

// Every counter here only grows, and every update and read of them in admit(), settled_one() and
// pending() is seq_cst: they all fall into one total order, so "the admitted and settled counts at
// a point of that order" is well defined, and pending at that point is their difference. A sum of
// the stripes read one after another lies between the settled counts at its first and last read.
//
// admit() is linearizable: it checks and counts in one compare-and-swap on control_, so it takes
// effect at that CAS, with the admitted count it read at `current` still there. If max_pending is
// set, `floor` is a settled sum read before the CAS (the cached settled_floor_, or a fresh sum),
// hence at most the settled count at the CAS: current - floor bounds pending from above, and
// current - floor < max_pending proves there is room. When the cached floor cannot prove it, the
// stripes are summed afresh, AFTER `current` was read: that sum is at least the settled count at
// that read, so current - sum is at most what was pending then, and current - sum >= max_pending
// proves the timer was full at the moment `current` was read, during this call: the Rejected is
// ordered there. (Had the sum been read before `current`, tasks admitted and settled in between
// could make the timer look full when it never was.) A sum that is ahead of `current` means
// control_ has moved on, so the CAS fails and the loop reads it again.
// Without a max_pending a fetch_add would do the counting, but a producer that lost the race with
// stop() would count its task before seeing the flag and taking it back, and pending() would show
// a refused task meanwhile (even after stop() has returned): the CAS never counts a refused task.
bool WheelCore::admit(const char* operation) {
  const std::uint64_t limit = options_.max_pending;
  std::uint64_t current = control_.load(std::memory_order_seq_cst);
  // Acquire, pairing with the release below: the stripe reads that produced a floor another thread
  // stored happen before this CAS, so the floor is at most the settled count at it.
  std::uint64_t floor = limit != 0 ? settled_floor_.load(std::memory_order_acquire) : 0;
  std::uint64_t next = 0;
  do {
    if (current & kStopping) {
      throw Stopped(std::string("wheeltimer: ") + operation + "() after stop() has begun");
    }
    if (limit != 0 && left_over(current, floor) >= limit) {
      floor = settled_sum();
      if (left_over(current, floor) >= limit) {
        throw Rejected(std::string("wheeltimer: ") + operation + "() refused: max_pending (" +
                       std::to_string(limit) + ") tasks are already pending");
      }
      // Any sum is a lower bound from now on; a racing store of an older one only costs a recount.
      if (static_cast<std::int64_t>(floor - settled_floor_.load(std::memory_order_relaxed)) > 0) {
        settled_floor_.store(floor, std::memory_order_release);
      }
    }
    next = (current & kStopping) | ((current + 1) & kAdmittedMask);
  } while (!control_.compare_exchange_weak(current, next, std::memory_order_seq_cst,
                                           std::memory_order_seq_cst));
  return (next & kAdmittedMask) % kHousekeepingPeriod == 0;
}

WheelCore::Stripe& WheelCore::own_stripe() noexcept {
  unsigned stripe = settle_stripe;
  if (stripe == kNoStripe) [[unlikely]] {
    stripe = next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
    settle_stripe = stripe;
  }
  return stripes_[stripe];
}

void WheelCore::settled_one() noexcept {
  own_stripe().settled.fetch_add(1, std::memory_order_seq_cst);
}

std::uint64_t WheelCore::settled_sum() const noexcept {
  std::uint64_t sum = 0;
  for (const Stripe& stripe : stripes_) sum += stripe.settled.load(std::memory_order_seq_cst);
  return sum;
}

// The stripes first, then control_: the sum is at most the settled count when control_ is read,
// so the result is at least what was pending at that moment (never "negative"); zero means that
// every task admitted by then had settled, and that this thread has read each settle (stop() relies
// on that). A thread sees its own cancel, and any settle that happened before its call. With
// settles running during the call, the result can exceed the count at any one moment by up to the
// number of those settles.
std::uint64_t WheelCore::outstanding() const noexcept {
  const std::uint64_t settled = settled_sum();
  return left_over(control_.load(std::memory_order_seq_cst), settled);
}

std::size_t WheelCore::pending() const noexcept {
  const std::uint64_t count = outstanding();
  // Never more than max_pending can be pending, so capping is still an upper bound of the count
  // when control_ was read, and keeps the overshoot described above within the documented limit.
  const std::uint64_t limit = options_.max_pending;
  return static_cast<std::size_t>(limit != 0 ? std::min(count, limit) : count);
}

TimerFuture WheelCore::schedule_at(Task task, Clock::time_point deadline) {
  if (!task) throw std::invalid_argument("wheeltimer: schedule_at() was given an empty task");
  const bool housekeeping = admit("schedule");
  TaskNode* node = nullptr;
  try {
    node = TaskNode::create(std::move(task), deadline, this);
    if (!inbound_.push(node, deadline)) throw std::bad_alloc();
  } catch (...) {
    // Settled first, as cancel() does it: the release destroys the captures, whose destructors
    // may call stop(), which waits for every admitted task to settle.
    settled_one();
    if (node != nullptr) node->release(2);  // nobody else has seen it: both references
    throw;
  }
  after_push(deadline, housekeeping);
  return TimerFuture(node);
}

TimerFuture WheelCore::adopt(PendingTask task) {
  if (task.node_ == nullptr) {
    throw std::invalid_argument("wheeltimer: adopt() was given an empty PendingTask");
  }
  // On refusal, `task` goes out of scope and cancels its future.
  const bool housekeeping = admit("adopt");
  TaskNode* node = task.release();
  if (!node->attach(this)) {  // canceled, or run, since stop() handed it back: schedule nothing
    settled_one();
    return TimerFuture(node);
  }
  node->retain();  // the returned future's reference
  if (!inbound_.push(node, node->deadline())) {
    if (node->detach()) {  // else a concurrent cancel() already settled it
      settled_one();
      node->cancel();
    }
    node->release(2);  // ours and the future's that will not be returned
    throw std::bad_alloc();
  }
  after_push(node->deadline(), housekeeping);
  return TimerFuture(node);
}

void WheelCore::store_load_barrier() noexcept {
#if defined(WHEELTIMER_TSAN)
  // ThreadSanitizer does not model standalone fences. A seq_cst read-modify-write of one shared
  // word gives the same guarantee (whichever side's comes second sees what the other wrote before
  // its own), in terms it understands, at the price of a contended cache line.
  tsan_barrier_.fetch_add(1, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

void WheelCore::after_push(Clock::time_point deadline, bool housekeeping) noexcept {
  store_load_barrier();  // pairs with the one in run_indicator(): see "Waking" in the header
  Clock::rep wake_at = wake_at_.load(std::memory_order_relaxed);
  if (wake_at == kAwake) return;  // it will look at the queue before it sleeps
  if (deadline.time_since_epoch().count() >= wake_at && !housekeeping) return;
  claim_wake(wake_at);
}

void WheelCore::claim_wake(Clock::rep seen) noexcept {
  // Only the thread that flips the published time to kAwake wakes it: one wake-up, not one per
  // thread. (Waking first and claiming after would not do: the indicator may wake, publish the
  // same time again and sleep, and the late claim would then hide it from every producer.)
  if (wake_at_.compare_exchange_strong(seen, kAwake, std::memory_order_relaxed)) time_->wake();
}

void WheelCore::on_canceled(TaskNode* node, bool in_wheel) noexcept {
  // A node already in the wheel is listed, with the reference cancel() took for it, so the
  // indicator unlinks it when it next wakes instead of at its deadline; one still in the inbound
  // queue is dropped when the indicator pops it.
  Stripe& stripe = own_stripe();
  if (in_wheel) {
    std::atomic<TaskNode*>& list = stripe.canceled[canceled_turn];
    canceled_turn = canceled_turn + 1 == kCanceledLists ? 0 : canceled_turn + 1;
    // Pushes and whole-list exchanges only: a head that was taken and came back (ABA) still makes
    // a correct push, since the link written is the head compared.
    TaskNode* head = list.load(std::memory_order_relaxed);
    do {
      node->set_next_canceled(head);
    } while (!list.compare_exchange_weak(head, node, std::memory_order_release,
                                         std::memory_order_relaxed));
  }
  // A burst of cancels with no schedule() after it would otherwise leave its nodes listed until
  // the indicator's next wake-up, which may be hours away. Best effort, so a plain read of the
  // count will do: a settle that does not ask (a task's start, another thread's cancel racing on
  // the stripe) may step over the multiple, and then a later one asks. Before the settle, which
  // must be the last touch of this timer: stop() waits for pending() to reach zero before it
  // takes the lists, and the timer may be destroyed after that.
  if ((stripe.settled.load(std::memory_order_relaxed) + 1) % kHousekeepingPeriod == 0) {
    ask_to_unlink();
  }
  stripe.settled.fetch_add(1, std::memory_order_seq_cst);
}

void WheelCore::ask_to_unlink() noexcept {
  // A read-modify-write, so every set stays in the release sequence the indicator's exchange
  // reads from: that makes every asking thread's list pushes visible to its next take.
  unlink_wanted_.exchange(true, std::memory_order_acq_rel);
  store_load_barrier();  // pairs with the one in run_indicator(): see "Waking" in the header
  const Clock::rep wake_at = wake_at_.load(std::memory_order_relaxed);
  if (wake_at != kAwake) claim_wake(wake_at);
}

// ---- The indicator ---------------------------------------------------------------------------

void WheelCore::run_indicator() noexcept {
  do {
    transfer_inbound();
    if (unlink_wanted_.load(std::memory_order_relaxed)) {
      unlink_wanted_.exchange(false, std::memory_order_acquire);
    }
    const bool more_canceled = unlink_canceled();
    const Clock::time_point now = time_->now();
    const auto to_due = [this](TaskNode* node) { due_.push(node); };
    // Run the wheel ahead of now (at least into the next tick, so a tick's first tasks start at
    // their own deadlines, not at a wake-up at the tick's beginning). What it cascades on the way
    // is worked through in chunks below; only a cascade whose tasks are due now is finished here.
    const std::uint64_t tick = wheel_.tick_of(now);
    if (tick != Wheel::kNever) {
      try {
        const std::uint64_t ahead = saturating_tick_add(tick, lookahead_ticks_);
        wheel_.advance_to(ahead, to_due);
        inbound_.set_horizon(wheel_.tick_time(ahead + 1));  // tasks due before it go to due_
      } catch (const std::bad_alloc&) {
        // Out of memory for the cascade queue: every task is still held. Start what is due and
        // try again shortly (or when woken).
        fire_due(now);
        if (!time_->sleep_until(now + kOutOfMemoryRetry)) return;
        continue;
      }
      wheel_.finish_cascades_by(tick + 1, to_due);
    }
    fire_due(now);
    prune_dispatched();
    if (wheel_.cascading() && !stop_requested()) {
      wheel_.cascade_some(kCascadeChunk, to_due);
      continue;  // no sleep until the cascade is done; due tasks start between chunks
    }
    if (stop_requested()) {
      // stop() interrupts the time source right after setting the flag; returning through it
      // tells the source (and a ManualClock) that this indicator is gone.
      while (time_->sleep_until(Clock::time_point::max())) {
      }
      return;
    }
    if (more_canceled) continue;  // no sleep while the lists taken still hold canceled nodes

    const Clock::rep wake_at =
        next_wake(wheel_, due_, lookahead_ticks_).time_since_epoch().count();
    wake_at_.store(wake_at, std::memory_order_relaxed);
    // Pairs with the ones in after_push() and ask_to_unlink(): see "Waking" in the header.
    store_load_barrier();
    if (inbound_.size_approx() != 0 || unlink_wanted_.load(std::memory_order_relaxed)) {
      wake_at_.store(kAwake, std::memory_order_relaxed);
      continue;
    }
    const bool running = time_->sleep_until(Clock::time_point(Clock::duration(wake_at)));
    wake_at_.store(kAwake, std::memory_order_relaxed);
    if (!running) return;
  } while (true);
}

void WheelCore::transfer_inbound() {
  // What is left is seen by the check of the inbound lanes before the indicator sleeps.
  inbound_.take_round(kMaxNodesPerRound, [this](std::span<TaskNode* const> nodes) {
    // The nodes were written on the producers' cores. Ask for all of them first: enter_wheel()'s
    // compare-and-swap would otherwise wait out each cache miss in turn.
    for (TaskNode* node : nodes) __builtin_prefetch(node, 1);
    for (TaskNode* node : nodes) {
      if (!node->enter_wheel()) {  // canceled before it reached the wheel
        node->release();
        continue;
      }
      if (!wheel_.insert(node)) due_.push(node);  // its tick has begun (or passed)
    }
  });
}

// The order matters beyond this walk: the node pool hands cells out again in the order they came
// back, so it becomes the next timers' order in memory. Released a whole list at a time (every
// seventh node), the cells of a million canceled tasks left cancel on the next timer at 34-42 ns
// instead of 24-28 (`wheeltimer-micro`, repetitions after the first).
template <class Handle>
bool WheelCore::for_each_canceled(std::size_t limit, Handle&& handle) noexcept {
  std::size_t taken = 0;
  do {
    taken += take_in_turn(
        unlinking_.data(), unlinking_.size(), limit - taken,
        [](const TaskNode* node) { return node->next_canceled(); }, handle);
    if (taken == limit) return true;
  } while (take_canceled());
  return false;
}

bool WheelCore::unlink_canceled() noexcept {
  // Unlinking writes into a node's neighbours in the wheel, each likely a cache miss. So each
  // node's neighbours are asked for when it is taken, and it is unlinked kUnlinkLag nodes later,
  // so that the misses of several unlinks can be in flight at once. The delay is safe: unlink()
  // reads the links when it runs, and nothing else touches the wheel here (a prefetch made stale
  // by a neighbour's unlink is only wasted). First in, first out keeps the wheel nodes' release
  // order, which the node pool reuses (see for_each_canceled()); a due node, released at once,
  // may pass up to kUnlinkLag of them.
  std::array<TaskNode*, kUnlinkLag> lagging{};
  std::size_t turn = 0;
  const auto unlink = [this](TaskNode* node) {
    wheel_.unlink(node);
    node->release(2);  // the list's reference and the wheel's
  };
  const bool more = for_each_canceled(kMaxNodesPerRound, [&](TaskNode* node) {
    if (!Wheel::contains(node)) {  // among the due ones: dropped when its deadline comes
      node->release();
      return;
    }
    Wheel::prefetch_neighbours(node);
    TaskNode*& slot = lagging[turn++ % kUnlinkLag];
    if (slot != nullptr) unlink(slot);
    slot = node;
  });
  for (std::size_t i = 0; i < kUnlinkLag; ++i) {
    if (TaskNode* node = lagging[turn++ % kUnlinkLag]) unlink(node);
  }
  return more;
}

bool WheelCore::take_canceled() noexcept {
  for (Stripe& stripe : stripes_) {
    bool taken = false;
    for (std::size_t i = 0; i < kCanceledLists; ++i) {
      // Read first: an exchange would take the line of an idle stripe from its thread.
      if (stripe.canceled[i].load(std::memory_order_relaxed) == nullptr) continue;
      unlinking_[i] = stripe.canceled[i].exchange(nullptr, std::memory_order_acquire);
      taken = true;
    }
    if (taken) return true;
  }
  return false;
}

void WheelCore::release_canceled() noexcept {
  for_each_canceled(std::numeric_limits<std::size_t>::max(),
                    [](TaskNode* node) { node->release(); });
}

void WheelCore::fire_due(Clock::time_point now) {
  // Once stop() has begun, what has not started stays for stop() to hand back.
  while (!stop_requested()) {
    TaskNode* node = due_.pop_due(now);
    if (node == nullptr) return;
    dispatch(node);
  }
}

void WheelCore::dispatch(TaskNode* node) {
  if (!executor_) {
    // The wheel's reference goes with the run's last step, or here if the task was canceled.
    if (node->start_attached()) {
      run_started(node);
    } else {
      node->release();
    }
    return;
  }
  const auto epoch = node->mark_dispatched();
  if (!epoch) {  // canceled meanwhile
    node->release();
    return;
  }
  try {
    dispatched_.push_back(node);  // keeps the wheel's reference, so stop() can find it
  } catch (const std::bad_alloc&) {
    // No room to track it until it starts: refused, as if by the executor.
    refuse(node, *epoch, std::current_exception());
    node->release();
    return;
  }
  try {
    executor_.get()->execute(ExecutorWork(this, node, *epoch));
  } catch (...) {
    refuse(node, *epoch, std::current_exception());
  }
}

void WheelCore::refuse(TaskNode* node, std::uint32_t epoch, std::exception_ptr why) noexcept {
  // on_error is told, then the task is canceled (it never ran), which destroys its captures. Both
  // run as the timer's own code here, so stop() from either is refused like from a task.
  const WheelCore* outer = std::exchange(running_in, this);
  report(std::move(why));
  node->refuse(epoch);
  running_in = outer;
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

void WheelCore::halt_indicator() {
  // Outside admit()'s seq_cst argument, and need not be in it: a read-modify-write is ordered with
  // every CAS on control_, so each admit() either counts its task before the flag or sees it.
  control_.fetch_or(kStopping, std::memory_order_acq_rel);
  stopping_.store(true, std::memory_order_relaxed);
  time_->interrupt();
  if (indicator_.joinable()) indicator_.join();
}

bool WheelCore::on_own_thread() const noexcept {
  return running_in == this || indicator_of == this;
}

}  // namespace wheeltimer::detail
