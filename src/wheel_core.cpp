#include "wheel_core.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <future>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <wheeltimer/errors.hpp>

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

// How far ahead of real time the wheel runs: tasks due within this are in the due queue, and an
// upper slot starts cascading this long before its first task is due, so a big cascade, worked
// through in chunks, is done before anything in it is due.
constexpr Clock::duration kLookahead = std::chrono::milliseconds(64);
// The real clock's timed sleeps end no sooner than tick / kCoalescingPerTick (at most
// kMaxCoalescing) after the last one that ran to its time: a task in a dense stream starts at most
// that much (plus the OS's wake-up latency) late. Measured with `wheeltimer-bench fire` (1,000,000
// over 1 s, 1 ms tick): a tenth of a tick cut the wake-ups from ~8,500 to ~5,200 and the firing CPU
// by a fifth, while the kernel's default timer slack (kTimerSlackNs in wheel_core_indicator.cpp)
// still added its 50 us to every sleep. Without that slack, a seventh keeps a dense stream's
// wake-ups near where they were (the process's voluntary context switches 5,494 against 5,039,
// medians of 13 runs each: 9% more), for the same CPU (0.637 against 0.629 s) and median lateness
// (0.116 against 0.121 ms).
// Never more than kMaxCoalescing, so a coarse tick (a second, an hour) does not make tasks that
// many sevenths of a second late; with ticks of 7 ms or more that bounds timed wake-ups to a
// thousand a second (about 7,000 with a 1 ms tick).
constexpr int kCoalescingPerTick = 7;
constexpr Clock::duration kMaxCoalescing = std::chrono::milliseconds(1);

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
                            named = std::move(named)]() mutable { indicator_main(name, named); });
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
template <bool kCount>
bool WheelCore::admission(const char* operation) {
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
    // Checking only: there was room when `current` was read, by the argument above.
    if constexpr (!kCount) return false;
    next = (current & kStopping) | ((current + 1) & kAdmittedMask);
  } while (!control_.compare_exchange_weak(current, next, std::memory_order_seq_cst,
                                           std::memory_order_seq_cst));
  return (next & kAdmittedMask) % kHousekeepingPeriod == 0;
}

bool WheelCore::admit(const char* operation) { return admission<true>(operation); }

void WheelCore::check_admission(const char* operation) { admission<false>(operation); }

WheelCore::Stripe& WheelCore::own_stripe() noexcept {
  unsigned stripe = settle_stripe;
  if (stripe == kNoStripe) [[unlikely]] {
    stripe = next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
    settle_stripe = stripe;
  }
  return stripes_[stripe];
}

void WheelCore::settled_uncounted(TaskNode* node) noexcept {
  settled_one();
  node->counted();
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
  // admit() counts the task before attach() can: a cancel() that wins in between must wait until
  // the count has dropped again.
  if (!task.node_->mark_uncounted()) {
    // Canceled or run since stop() handed it back (or running: adopt() from the task's own run()):
    // not pending, so it is checked as admit() would check it, but never counted (no other call
    // may see it pending, or be refused for it).
    check_admission("adopt");
    return TimerFuture(task.release());
  }
  bool housekeeping = false;
  try {
    housekeeping = admit("adopt");
  } catch (...) {
    // Refused: nothing was counted, and `task` goes out of scope and cancels its future.
    task.node_->counted();
    throw;
  }
  TaskNode* node = task.release();
  if (!node->attach(this)) {  // canceled since it was marked: schedule nothing
    settled_uncounted(node);
    return TimerFuture(node);
  }
  node->retain();  // the returned future's reference
  if (!inbound_.push(node, node->deadline())) {
    if (node->detach()) {  // else a concurrent cancel() already settled it
      settled_uncounted(node);
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

// ---- stop() ----------------------------------------------------------------------------------

void WheelCore::halt_indicator() {
  // Outside admit()'s seq_cst argument, and need not be in it: a read-modify-write is ordered with
  // every CAS on control_, so each admit() either counts its task before the flag or sees it.
  control_.fetch_or(kStopping, std::memory_order_acq_rel);
  stopping_.store(true, std::memory_order_relaxed);
  time_->interrupt();
  if (indicator_.joinable()) indicator_.join();
}

}  // namespace wheeltimer::detail
