// Tests for wheeltimer::Task: conversions, emptiness, move semantics, small-buffer storage (checked
// with a counting global operator new) and the lifetime of captures.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

#include "test_support.hpp"

using namespace std::chrono_literals;
using wheeltimer::Task;

// ---------------------------------------------------------------------------------------------
// Allocation counting: a replaced global operator new that counts calls made by this thread while
// an AllocationCounter is alive. Thread-local, so nothing gtest or another thread does is counted.
namespace {
thread_local bool t_counting = false;
thread_local std::size_t t_allocations = 0;

class AllocationCounter {
 public:
  AllocationCounter() {
    t_allocations = 0;
    t_counting = true;
  }
  ~AllocationCounter() { t_counting = false; }
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  // Allocations since construction (or the last call).
  std::size_t take() {
    const std::size_t n = t_allocations;
    t_allocations = 0;
    return n;
  }
};

void* counted_alloc(std::size_t size) {
  if (t_counting) ++t_allocations;
  if (size == 0) size = 1;
  if (void* p = std::malloc(size)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size); }
void* operator new[](std::size_t size) { return counted_alloc(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

// ---------------------------------------------------------------------------------------------
// Compile-time contract.
static_assert(!std::is_copy_constructible_v<Task>);
static_assert(!std::is_copy_assignable_v<Task>);
static_assert(std::is_nothrow_move_constructible_v<Task>);
static_assert(std::is_nothrow_move_assignable_v<Task>);
static_assert(std::is_nothrow_default_constructible_v<Task>);
static_assert(!std::is_convertible_v<Task, bool>, "operator bool must be explicit");
static_assert(std::is_constructible_v<bool, Task>);
// Implicit conversions from callables (needed for `timer.schedule([]{...}, 10ms)`).
static_assert(std::is_convertible_v<decltype([] {}), Task>);
static_assert(std::is_convertible_v<void (*)(), Task>);
static_assert(std::is_convertible_v<std::function<void()>, Task>);
static_assert(std::is_convertible_v<decltype([p = std::unique_ptr<int>()] {}), Task>);
// Not callable as void(): no conversion.
static_assert(!std::is_convertible_v<int, Task>);
static_assert(!std::is_convertible_v<decltype([](int) {}), Task>);

std::atomic<int> g_free_function_calls{0};
void free_function() { ++g_free_function_calls; }

// Counts how many times the *owning* instance of a capture is destroyed: moved-from copies do not
// count, so a correct Task makes `destroyed` go to exactly 1 whatever it does internally.
struct DestroyCount {
  int destroyed = 0;
  int calls = 0;
};

struct Tracker {
  DestroyCount* counts;
  bool owns = true;
  explicit Tracker(DestroyCount* c) noexcept : counts(c) {}
  Tracker(Tracker&& other) noexcept
      : counts(other.counts), owns(std::exchange(other.owns, false)) {}
  Tracker(const Tracker& other) = delete;
  Tracker& operator=(const Tracker&) = delete;
  Tracker& operator=(Tracker&&) = delete;
  ~Tracker() {
    if (owns) ++counts->destroyed;
  }
  void operator()() { ++counts->calls; }
};

// A Tracker padded to 128 bytes: too large for the inline buffer.
struct BigTracker {
  Tracker tracker;
  std::array<std::byte, 128 - sizeof(Tracker)> padding{};
  explicit BigTracker(DestroyCount* c) noexcept : tracker(c) {}
  void operator()() { tracker(); }
};
static_assert(sizeof(BigTracker) == 128);

class TaskTest : public ::testing::Test {};

// ---------------------------------------------------------------------------------------------
// Construction and conversion.

TEST_F(TaskTest, DefaultConstructedIsEmpty) {
  Task task;
  EXPECT_FALSE(task);
  EXPECT_FALSE(task.stored_inline());
}

TEST_F(TaskTest, NullptrGivesEmptyTask) {
  Task task = nullptr;
  EXPECT_FALSE(task);
}

TEST_F(TaskTest, ImplicitlyConvertsFromLambda) {
  int calls = 0;
  auto take = [](Task t) { return t; };  // forces an implicit conversion at the call site
  Task task = take([&calls] { ++calls; });
  ASSERT_TRUE(task);
  task();
  task();
  EXPECT_EQ(calls, 2);
}

TEST_F(TaskTest, AcceptsLambdaReturningAValue) {
  int calls = 0;
  Task task = [&calls] { return ++calls; };  // result discarded, still a void() task
  task();
  EXPECT_EQ(calls, 1);
}

TEST_F(TaskTest, ConvertsFromFunctionPointerAndFunctionName) {
  g_free_function_calls = 0;
  void (*fp)() = &free_function;
  Task from_pointer = fp;
  Task from_name = free_function;
  ASSERT_TRUE(from_pointer);
  ASSERT_TRUE(from_name);
  from_pointer();
  from_name();
  EXPECT_EQ(g_free_function_calls.load(), 2);
}

TEST_F(TaskTest, NullFunctionPointerGivesEmptyTask) {
  void (*fp)() = nullptr;
  Task task = fp;
  EXPECT_FALSE(task);
  EXPECT_THROW(task(), std::bad_function_call);
}

TEST_F(TaskTest, ConvertsFromStdFunction) {
  int calls = 0;
  std::function<void()> fn = [&calls] { ++calls; };
  Task task = fn;  // a copy: `fn` stays usable
  ASSERT_TRUE(task);
  task();
  fn();
  EXPECT_EQ(calls, 2);

  Task moved = std::move(fn);
  ASSERT_TRUE(moved);
  moved();
  EXPECT_EQ(calls, 3);
}

TEST_F(TaskTest, EmptyStdFunctionGivesEmptyTask) {
  std::function<void()> empty;
  Task task = empty;
  EXPECT_FALSE(task);
  Task moved = std::move(empty);
  EXPECT_FALSE(moved);
}

TEST_F(TaskTest, AcceptsMoveOnlyLambdaCapturingUniquePtr) {
  auto value = std::make_unique<int>(41);
  int seen = 0;
  Task task = [v = std::move(value), &seen] { seen = ++*v; };
  ASSERT_TRUE(task);
  task();
  EXPECT_EQ(seen, 42);
}

TEST_F(TaskTest, AcceptsMoveOnlyLambdaCapturingPromise) {
  std::promise<int> promise;
  std::future<int> result = promise.get_future();
  Task task = [p = std::move(promise)]() mutable { p.set_value(7); };
  Task moved = std::move(task);  // relocating a promise must keep it connected to its future
  moved();
  ASSERT_EQ(result.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(result.get(), 7);
}

TEST_F(TaskTest, MutableLambdaKeepsStateAcrossCalls) {
  int last = 0;
  Task task = [n = 0, &last]() mutable { last = ++n; };
  task();
  task();
  Task moved = std::move(task);  // the state travels with the callable
  moved();
  EXPECT_EQ(last, 3);
}

TEST_F(TaskTest, ExceptionFromCallablePropagates) {
  Task task = [] { throw std::runtime_error("boom"); };
  EXPECT_THROW(task(), std::runtime_error);
  EXPECT_TRUE(task);  // still holds its callable
}

// ---------------------------------------------------------------------------------------------
// Emptiness, moves and reset().

TEST_F(TaskTest, CallingEmptyTaskThrowsBadFunctionCall) {
  Task task;
  EXPECT_THROW(task(), std::bad_function_call);
}

TEST_F(TaskTest, MoveConstructionLeavesSourceEmpty) {
  int calls = 0;
  Task source = [&calls] { ++calls; };
  Task target = std::move(source);
  EXPECT_FALSE(source);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  ASSERT_TRUE(target);
  target();
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(source(), std::bad_function_call);  // NOLINT(bugprone-use-after-move)
}

TEST_F(TaskTest, MoveAssignmentTransfersCallableAndDestroysOldOne) {
  DestroyCount old_counts;
  DestroyCount new_counts;
  Task target = Tracker(&old_counts);
  Task source = Tracker(&new_counts);
  target = std::move(source);
  EXPECT_EQ(old_counts.destroyed, 1);  // the callable that was overwritten is gone
  EXPECT_EQ(new_counts.destroyed, 0);
  EXPECT_FALSE(source);  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(target);
  target();
  EXPECT_EQ(new_counts.calls, 1);
  EXPECT_EQ(old_counts.calls, 0);
}

TEST_F(TaskTest, MoveAssignmentFromEmptyEmptiesTarget) {
  DestroyCount counts;
  Task target = Tracker(&counts);
  Task empty;
  target = std::move(empty);
  EXPECT_FALSE(target);
  EXPECT_EQ(counts.destroyed, 1);
}

TEST_F(TaskTest, SelfMoveAssignmentKeepsCallable) {
  DestroyCount counts;
  Task task = Tracker(&counts);
  Task& alias = task;  // through a reference, so the compiler does not flag the self-move
  task = std::move(alias);
  ASSERT_TRUE(task);
  task();
  EXPECT_EQ(counts.calls, 1);
  EXPECT_EQ(counts.destroyed, 0);
}

TEST_F(TaskTest, ResetDestroysCapturesAndEmpties) {
  DestroyCount counts;
  Task task = Tracker(&counts);
  task.reset();
  EXPECT_FALSE(task);
  EXPECT_EQ(counts.destroyed, 1);
  task.reset();  // resetting an empty task is a no-op
  EXPECT_EQ(counts.destroyed, 1);
  EXPECT_THROW(task(), std::bad_function_call);
}

TEST_F(TaskTest, EmptyTaskCanBeReassigned) {
  int calls = 0;
  Task task;
  task = Task([&calls] { ++calls; });
  ASSERT_TRUE(task);
  task();
  EXPECT_EQ(calls, 1);
}

// ---------------------------------------------------------------------------------------------
// Capture lifetime: destroyed exactly once, whatever path the Task takes.

// A Task made from a `Capture`, stored inline or not as `inline_expected` says, moved,
// move-assigned and called: the capture lives until the last Task holding it dies, then dies once.
template <class Capture>
void expect_destroyed_exactly_once(bool inline_expected) {
  DestroyCount counts;
  {
    Task task = Capture(&counts);
    EXPECT_EQ(task.stored_inline(), inline_expected);
    Task moved = std::move(task);
    Task assigned;
    assigned = std::move(moved);
    assigned();
    EXPECT_EQ(counts.destroyed, 0);
  }
  EXPECT_EQ(counts.calls, 1);
  EXPECT_EQ(counts.destroyed, 1);
}

TEST_F(TaskTest, InlineCaptureDestroyedExactlyOnce) {
  expect_destroyed_exactly_once<Tracker>(true);
}

TEST_F(TaskTest, HeapCaptureDestroyedExactlyOnce) {
  expect_destroyed_exactly_once<BigTracker>(false);
}

TEST_F(TaskTest, SharedCaptureReleasedWhenTaskDies) {
  auto shared = std::make_shared<int>(1);
  std::weak_ptr<int> watch = shared;
  {
    Task task = [s = std::move(shared)] { ++*s; };
    task();
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

// ---------------------------------------------------------------------------------------------
// Small-buffer storage.

TEST_F(TaskTest, EightByteCaptureIsStoredInline) {
  int calls = 0;
  auto callable = [&calls] { ++calls; };
  static_assert(sizeof(callable) == 8);
  Task task = callable;
  EXPECT_TRUE(task.stored_inline());
  task();
  EXPECT_EQ(calls, 1);
}

TEST_F(TaskTest, ThirtyTwoByteCaptureIsStoredInline) {
  std::int64_t sum = 0;
  std::array<std::int64_t, 3> data{1, 2, 3};
  auto callable = [data, &sum] { sum = data[0] + data[1] + data[2]; };
  static_assert(sizeof(callable) == 32);
  Task task = callable;
  EXPECT_TRUE(task.stored_inline());
  task();
  EXPECT_EQ(sum, 6);
}

TEST_F(TaskTest, MoveOnlySmallCaptureIsStoredInline) {
  std::promise<void> promise;
  auto done = promise.get_future();
  Task task = [p = std::move(promise)]() mutable { p.set_value(); };
  EXPECT_TRUE(task.stored_inline());
  task();
  EXPECT_EQ(done.wait_for(0s), std::future_status::ready);
}

TEST_F(TaskTest, SmallCapturesAllocateNothing) {
  int calls = 0;
  std::array<std::int64_t, 3> data{1, 2, 3};
  std::size_t allocations = 0;
  {
    AllocationCounter counter;
    {
      Task small = [&calls] { ++calls; };
      Task full = [data, &calls] { calls += static_cast<int>(data[2]); };
      Task moved = std::move(full);
      Task assigned;
      assigned = std::move(small);
      moved();
      assigned();
      assigned.reset();
    }
    allocations = counter.take();
  }
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(calls, 4);
}

TEST_F(TaskTest, LargeCaptureIsHeapAllocatedOnceAndWorks) {
  std::array<std::int64_t, 16> data{};
  data[15] = 5;
  std::int64_t seen = 0;
  std::size_t at_construction = 0;
  std::size_t at_moves = 0;
  bool was_inline = true;
  {
    AllocationCounter counter;
    auto callable = [data, &seen] { seen = data[15]; };
    static_assert(sizeof(callable) > Task::inline_capacity);
    Task task = callable;
    at_construction = counter.take();
    was_inline = task.stored_inline();
    Task moved = std::move(task);
    Task assigned;
    assigned = std::move(moved);
    at_moves = counter.take();
    assigned();
  }
  EXPECT_FALSE(was_inline);
  EXPECT_EQ(at_construction, 1u);  // "moved to the heap once"
  EXPECT_EQ(at_moves, 0u);         // relocating a heap task moves a pointer
  EXPECT_EQ(seen, 5);
}

// A long double or an SSE vector in a capture is aligned to 16: such a capture is small too.
TEST_F(TaskTest, SixteenByteAlignedSmallCaptureIsStoredInline) {
  struct alignas(16) Aligned {
    long double scale;
    double* out;
    void operator()() const {
      *out = reinterpret_cast<std::uintptr_t>(this) % 16 == 0 ? static_cast<double>(scale) : -1;
    }
  };
  static_assert(alignof(Aligned) == 16 && sizeof(Aligned) == 32);
  double out = 0;
  std::size_t allocations = 0;
  bool was_inline = false;
  {
    AllocationCounter counter;
    Task task = Aligned{2.5L, &out};
    was_inline = task.stored_inline();
    Task moved = std::move(task);
    moved();
    allocations = counter.take();
  }
  EXPECT_TRUE(was_inline);
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(out, 2.5);  // and it ran at an address aligned for it
}

TEST_F(TaskTest, OverAlignedCaptureStillWorks) {
  struct alignas(64) Aligned {
    int* out;
    void operator()() const { *out = 9; }
  };
  int out = 0;
  Task task = Aligned{&out};
  Task moved = std::move(task);
  moved();
  EXPECT_EQ(out, 9);
}

TEST_F(TaskTest, CallableWithThrowingMoveStillWorks) {
  struct ThrowingMove {
    int* out;
    explicit ThrowingMove(int* o) : out(o) {}
    ThrowingMove(ThrowingMove&& other) noexcept(false) : out(other.out) {}
    ThrowingMove(const ThrowingMove& other) = default;
    void operator()() const { ++*out; }
  };
  int out = 0;
  Task task = ThrowingMove(&out);
  Task moved = std::move(task);  // Task's own move stays noexcept
  moved();
  EXPECT_EQ(out, 1);
}

}  // namespace
