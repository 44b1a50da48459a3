// Running out of memory on the indicator's side: the due queue and the wheel's cascade queue, the
// two structures the indicator grows while it works, keep every task and fire none early when an
// allocation fails, and carry on once memory is back. And in stop() and the destructor: no task
// is lost or canceled by stop() running out of memory, and destroying a timer needs none. And a
// timer that finds no memory to be built on its executor's own thread.
//
// This binary replaces the global operator new, so a test can make the allocations of its own
// thread fail for a while, all of them or all after the first few.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <wheeltimer/wheeltimer.hpp>

#include "due_queue.hpp"
#include "lent_nodes.hpp"
#include "task_node.hpp"
#include "test_support.hpp"
#include "wheel.hpp"

namespace {
thread_local bool out_of_memory = false;
thread_local int allocations_left = -1;  // before out_of_memory; -1: no limit

void* allocate_unless_failing(std::size_t bytes, std::size_t alignment) {
  if (out_of_memory || allocations_left == 0) throw std::bad_alloc();
  if (allocations_left > 0) --allocations_left;
  // aligned_alloc wants a multiple of the alignment; a size that would wrap is no memory.
  if (bytes > SIZE_MAX - alignment) throw std::bad_alloc();
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + alignment - 1) & ~(alignment - 1);
  if (void* memory = std::aligned_alloc(alignment, size)) return memory;
  throw std::bad_alloc();
}
}  // namespace

// GCC cannot see that these pair with each other (aligned_alloc and free underneath).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t bytes) {
  return allocate_unless_failing(bytes, alignof(std::max_align_t));
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
// The over-aligned forms (a timer's core has cache-line-aligned members), so they fail alike.
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  return allocate_unless_failing(bytes, static_cast<std::size_t>(alignment));
}
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
// The nothrow forms too (std::stable_sort's scratch buffer, a timer's core), so they fail alike
// and pair with free.
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(bytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* memory, const std::nothrow_t&) noexcept { std::free(memory); }
void* operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* memory, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(memory);
}

namespace wheeltimer::detail {
namespace {

using namespace std::chrono_literals;

constexpr auto kTick = 1ms;

// Every allocation on this thread fails while one of these lives.
struct OutOfMemory {
  OutOfMemory() { out_of_memory = true; }
  ~OutOfMemory() { out_of_memory = false; }
};
// The same, after the first `allowed` allocations.
struct OutOfMemoryAfter {
  explicit OutOfMemoryAfter(int allowed) { allocations_left = allowed; }
  ~OutOfMemoryAfter() { allocations_left = -1; }
};

class AllocationFailureTest : public ::testing::Test {
 protected:
  TaskNode* node_at(Clock::duration offset) { return nodes_.at(offset); }

  const Clock::time_point start_ = Clock::now();
  LentNodes nodes_{start_};
};

TEST_F(AllocationFailureTest, DueQueueKeepsWhatItCannotStoreAndHandsItOutInOrder) {
  Wheel wheel(8, start_, kTick);
  DueQueue due(wheel, 4);
  TaskNode* at5 = node_at(5ms);
  TaskNode* at1 = node_at(1ms);
  TaskNode* at3 = node_at(3ms);
  TaskNode* at2_5 = node_at(2500us);
  TaskNode* at40 = node_at(40ms);
  TaskNode* at0 = node_at(0ms);
  TaskNode* at2_8 = node_at(2800us);
  {
    const OutOfMemory no_memory;
    for (TaskNode* node : {at5, at1, at3, at2_5, at40, at0}) due.push(node);
    EXPECT_EQ(due.size(), 6u);
    EXPECT_EQ(due.earliest(), at0->deadline());
    // Still no memory: they come out of the overflow list, in order, only once due.
    EXPECT_EQ(due.pop_due(start_ + 2600us), at0);
    EXPECT_EQ(due.pop_due(start_ + 2600us), at1);
    EXPECT_EQ(due.pop_due(start_ + 2600us), at2_5);
    EXPECT_EQ(due.pop_due(start_ + 2600us), nullptr);
    EXPECT_EQ(due.earliest(), at3->deadline());
  }
  // Memory is back: the rest goes into the buckets and heap, merged with what comes next.
  due.push(at2_8);
  EXPECT_EQ(due.size(), 4u);
  std::vector<TaskNode*> popped;
  while (TaskNode* node = due.pop_due(start_ + 10ms)) popped.push_back(node);
  EXPECT_EQ(popped, (std::vector<TaskNode*>{at2_8, at3, at5}));
  std::vector<TaskNode*> drained;
  due.drain([&](TaskNode* node) { drained.push_back(node); });
  EXPECT_EQ(drained, (std::vector<TaskNode*>{at40}));
  EXPECT_EQ(due.size(), 0u);
}

TEST_F(AllocationFailureTest, DueQueueDrainsWhatOverflowed) {
  Wheel wheel(8, start_, kTick);
  DueQueue due(wheel, 4);
  due.push(node_at(2ms));
  TaskNode* at1 = node_at(1ms);
  TaskNode* at9 = node_at(9ms);
  {
    const OutOfMemory no_memory;
    due.push(at1);
    due.push(at9);
  }
  std::vector<TaskNode*> drained;
  due.drain([&](TaskNode* node) { drained.push_back(node); });
  EXPECT_EQ(std::set<TaskNode*>(drained.begin(), drained.end()),
            std::set<TaskNode*>(nodes_.all().begin(), nodes_.all().end()));
  EXPECT_EQ(drained.size(), 3u);
  EXPECT_EQ(due.size(), 0u);
}

// Level-1 slots of an 8-slot wheel span 8 ticks: one node in each of 30 of them makes advancing
// queue 30 cascades, and queuing each one takes memory.
TEST_F(AllocationFailureTest, WheelResumesACascadeItHadNoMemoryToQueue) {
  constexpr int kNodes = 30;
  Wheel wheel(8, start_, kTick);
  for (int k = 1; k <= kNodes; ++k) ASSERT_TRUE(wheel.insert(node_at(kTick * (8 * k + 3))));
  std::vector<TaskNode*> taken;
  taken.reserve(kNodes);
  const auto take = [&](TaskNode* node) {
    EXPECT_GE(wheel.now_tick(), wheel.tick_of(node->deadline())) << "taken early";
    taken.push_back(node);
  };
  constexpr std::uint64_t kEnd = 8 * kNodes + 8;
  {
    const OutOfMemory no_memory;
    EXPECT_THROW(wheel.advance_to(kEnd, take), std::bad_alloc);
  }
  EXPECT_EQ(wheel.size() + taken.size(), static_cast<std::size_t>(kNodes));
  // Memory is back: cascades move nodes down to level 0, then advancing takes them.
  for (int round = 0; round < 3; ++round) {
    wheel.advance_to(kEnd, take);
    wheel.finish_cascades_by(kEnd, take);
  }
  EXPECT_EQ(std::set<TaskNode*>(taken.begin(), taken.end()),
            std::set<TaskNode*>(nodes_.all().begin(), nodes_.all().end()));
  EXPECT_EQ(taken.size(), static_cast<std::size_t>(kNodes));
  EXPECT_EQ(wheel.size(), 0u);
}

// stop() fails at each of its allocations in turn (until it needs no more than it is allowed). The
// tasks it had taken out are neither canceled nor lost: the next stop() hands every one back, in
// deadline order; or, if the timer is destroyed instead, they are canceled with the rest.
constexpr std::size_t kTimerTasks = 1000;
constexpr int kMostAllocationsInStop = 64;  // far more than stop() makes: ends a runaway loop

std::vector<TimerFuture> schedule_far_tasks(HashedWheelTimer& timer, Clock::time_point first) {
  std::vector<TimerFuture> futures;
  for (std::size_t i = 0; i < kTimerTasks; ++i) {
    futures.push_back(timer.schedule_at([] {}, first + i * 1ms));
  }
  return futures;
}

// Runs timer.stop() with only `allowed` allocations; true if it ran out.
bool stop_with(HashedWheelTimer& timer, int allowed, std::vector<PendingTask>& handed_back) {
  const OutOfMemoryAfter limit(allowed);
  try {
    handed_back = timer.stop();
  } catch (const std::bad_alloc&) {
    return true;
  }
  return false;
}

TEST(StopOutOfMemory, TheNextStopHandsBackEveryTask) {
  for (int allowed = 0;; ++allowed) {
    ASSERT_LT(allowed, kMostAllocationsInStop);
    HashedWheelTimer timer;
    const Clock::time_point first = Clock::now() + 1h;
    std::vector<TimerFuture> futures = schedule_far_tasks(timer, first);
    std::vector<PendingTask> handed_back;
    const bool ran_out = stop_with(timer, allowed, handed_back);
    if (ran_out) {
      EXPECT_THROW(timer.schedule([] {}, 1ms), Stopped) << "allowed " << allowed;
      handed_back = timer.stop();
    }
    ASSERT_EQ(handed_back.size(), kTimerTasks) << "allowed " << allowed;
    for (std::size_t i = 0; i < kTimerTasks; ++i) {
      EXPECT_EQ(handed_back[i].deadline(), first + i * 1ms) << "allowed " << allowed;
      EXPECT_EQ(futures[i].state(), TaskState::waiting) << "allowed " << allowed;
    }
    EXPECT_EQ(timer.pending(), 0u);
    EXPECT_TRUE(timer.stop().empty());
    if (!ran_out) {
      EXPECT_GT(allowed, 0) << "stop() never ran out of memory: the test shows nothing";
      break;
    }
  }
}

TEST(StopOutOfMemory, DestroyingTheTimerInsteadCancelsEveryTask) {
  for (int allowed = 0;; ++allowed) {
    ASSERT_LT(allowed, kMostAllocationsInStop);
    std::vector<TimerFuture> futures;
    bool ran_out = false;
    {
      HashedWheelTimer timer;
      futures = schedule_far_tasks(timer, Clock::now() + 1h);
      std::vector<PendingTask> handed_back;
      ran_out = stop_with(timer, allowed, handed_back);
      if (!ran_out) handed_back.clear();  // discarded, as the destructor would
    }
    for (const TimerFuture& future : futures) {
      ASSERT_EQ(future.state(), TaskState::canceled) << "allowed " << allowed;
    }
    if (!ran_out) {
      EXPECT_GT(allowed, 0) << "stop() never ran out of memory: the test shows nothing";
      break;
    }
  }
}

TEST(StopOutOfMemory, DestroyingATimerNeedsNoMemory) {
  std::vector<TimerFuture> futures;
  {
    auto timer = std::make_unique<HashedWheelTimer>();
    futures = schedule_far_tasks(*timer, Clock::now() + 1h);
    const OutOfMemory no_memory;
    timer.reset();
  }
  for (const TimerFuture& future : futures) ASSERT_EQ(future.state(), TaskState::canceled);
}

// Out of memory, the destructor cancels the tasks where they lie, and drops them only once it has
// let go of its lock, as the stop() it could not finish would have: a task whose captures call
// stop() on the timer from their destructor (an RAII guard, say) gets an empty vector, as it would
// with memory, instead of locking the timer's mutex twice on one thread.
TEST(StopOutOfMemory, CapturesMayCallStopWhileATimerWithNoMemoryIsDestroyed) {
  struct StopsTheTimerWhenDestroyed {
    HashedWheelTimer* timer;  // null once moved from
    int* stops_returning_nothing;
    StopsTheTimerWhenDestroyed(HashedWheelTimer* t, int* stops)
        : timer(t), stops_returning_nothing(stops) {}
    StopsTheTimerWhenDestroyed(StopsTheTimerWhenDestroyed&& other) noexcept
        : timer(std::exchange(other.timer, nullptr)),
          stops_returning_nothing(other.stops_returning_nothing) {}
    ~StopsTheTimerWhenDestroyed() {
      if (timer != nullptr && timer->stop().empty()) ++*stops_returning_nothing;
    }
    void operator()() const {}
  };
  int stops_returning_nothing = 0;
  std::vector<TimerFuture> futures;
  {
    auto timer = std::make_unique<HashedWheelTimer>();
    futures = schedule_far_tasks(*timer, Clock::now() + 1h);
    futures.push_back(timer->schedule(
        StopsTheTimerWhenDestroyed(timer.get(), &stops_returning_nothing), 2h));
    const OutOfMemory no_memory;
    timer.reset();
  }
  EXPECT_EQ(stops_returning_nothing, 1);
  for (const TimerFuture& future : futures) ASSERT_EQ(future.state(), TaskState::canceled);
}

// A job on the pool's own thread builds a timer, handing it the pool's last reference, and finds
// no memory for it: the constructor throws std::bad_alloc, and the reference is not released on
// that thread (the pool's destructor would join it: std::terminate). With no memory to hand it
// to a thread of its own either, it is kept for good, so the pool outlives the failed timer.
TEST(BuildOutOfMemory, OnTheExecutorsOwnThreadKeepsTheExecutor) {
  auto pool = testing::make_leaked_on_purpose<CallerRunsPool>(std::size_t{1}, std::size_t{8});
  const std::weak_ptr<CallerRunsPool> watch = pool;
  const auto threw = testing::run_holding_its_last_reference<bool>(
      std::move(pool), [](std::shared_ptr<CallerRunsPool> last) {
        auto options = TimerOptions();
        options.executor = std::move(last);
        const OutOfMemory no_memory;
        try {
          HashedWheelTimer timer(std::move(options));
        } catch (const std::bad_alloc&) {
          return true;
        }
        return false;
      });
  ASSERT_TRUE(threw.has_value()) << "the job did not finish";
  EXPECT_TRUE(*threw);
  EXPECT_TRUE(testing::kept_and_working(watch)) << "the pool was not kept";
}

}  // namespace
}  // namespace wheeltimer::detail
