// Captures of every size from 1 to 136 bytes and of alignments up to 256, through every executor
// and through stop()'s hand-back: each must reach its task whole and aligned. The sizes cross
// each boundary of the task's storage: a capture of up to 32 bytes moves into the node's own
// storage, whose size follows it word by word; a larger one (or one aligned beyond
// std::max_align_t, or whose move may throw) stays on the heap, and the node holds a pointer to
// it. Under AddressSanitizer a node sized a word short would also show here.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

#include "test_support.hpp"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"  // TimerOptions{.executor = ...}

namespace wheeltimer::testing {
namespace {

// What a task found in its capture (kRanTwice: it ran before).
enum Found : int { kNotRun = 0, kWhole = 1, kCorrupt = 2, kMisaligned = 3, kRanTwice = 4 };

// N bytes, aligned to A, each set from its index and N, so a byte lost, moved or taken from a
// neighbour shows.
template <std::size_t N, std::size_t A>
struct alignas(A) Blob {
  static_assert(N % A == 0 || A == 1);
  std::array<unsigned char, N> bytes;

  static unsigned char expected(std::size_t i) { return static_cast<unsigned char>(i * 37 + N); }
  Blob() {
    for (std::size_t i = 0; i < N; ++i) bytes[i] = expected(i);
  }
  Found check() const {
    if (reinterpret_cast<std::uintptr_t>(this) % A != 0) return kMisaligned;
    for (std::size_t i = 0; i < N; ++i) {
      if (bytes[i] != expected(i)) return kCorrupt;
    }
    return kWhole;
  }
};

// A task that records what it found in its capture, and that it ran, into `found`.
template <std::size_t N, std::size_t A>
Task checking_task(std::atomic<int>& found) {
  return [blob = Blob<N, A>(), &found] {
    found.store(found.load() == kNotRun ? blob.check() : kRanTwice);
  };
}

// Where a task whose capture is its blob alone reports, so the capture is exactly N bytes. One
// such task at a time; a static, so a task that ran after its test gave up still writes here.
std::atomic<int> lone_found{kNotRun};

template <std::size_t N, std::size_t A>
Task lone_checking_task() {
  auto task = [blob = Blob<N, A>()] {
    lone_found.store(lone_found.load() == kNotRun ? blob.check() : kRanTwice);
  };
  static_assert(sizeof(task) == N && alignof(decltype(task)) == A);
  return task;
}

class CaptureLayoutTest : public ::testing::TestWithParam<ExecutorKind> {
 protected:
  // Runs a task whose capture is a Blob<N, A> on `timer` and returns what it found.
  template <std::size_t N, std::size_t A>
  static int run_one(HashedWheelTimer& timer) {
    lone_found.store(kNotRun);
    TimerFuture future = timer.schedule(lone_checking_task<N, A>(), std::chrono::microseconds(N));
    if (!future.wait_for(kMustHappen)) return kNotRun;
    return lone_found.load();
  }

  template <std::size_t N>
  static void expect_whole(HashedWheelTimer& timer) {
    EXPECT_EQ((run_one<N, 1>(timer)), kWhole) << "a capture of " << N << " bytes";
  }
  template <std::size_t... Sizes>
  static void every_size(HashedWheelTimer& timer, std::index_sequence<Sizes...>) {
    (expect_whole<Sizes + 1>(timer), ...);  // from 1 to sizeof...(Sizes) bytes
  }
};

TEST_P(CaptureLayoutTest, EveryCaptureSizeUpTo136BytesArrivesWhole) {
  HashedWheelTimer timer(TimerOptions{.executor = GetParam().make()});
  every_size(timer, std::make_index_sequence<136>{});
}

TEST_P(CaptureLayoutTest, OverAlignedCapturesArriveWholeAndAligned) {
  HashedWheelTimer timer(TimerOptions{.executor = GetParam().make()});
  EXPECT_EQ((run_one<8, 8>(timer)), kWhole);
  EXPECT_EQ((run_one<16, 16>(timer)), kWhole);
  EXPECT_EQ((run_one<48, 16>(timer)), kWhole);
  EXPECT_EQ((run_one<96, 16>(timer)), kWhole);
  EXPECT_EQ((run_one<32, 32>(timer)), kWhole);
  EXPECT_EQ((run_one<64, 64>(timer)), kWhole);
  EXPECT_EQ((run_one<128, 128>(timer)), kWhole);
  EXPECT_EQ((run_one<256, 256>(timer)), kWhole);
}

// Handed back by stop(), then run by PendingTask::run() or adopted by another timer: the capture
// moves with the task and arrives whole, once.
TEST_P(CaptureLayoutTest, CapturesHandedBackByStopArriveWhole) {
  constexpr std::size_t kTasks = 8;
  std::array<std::atomic<int>, kTasks> found{};
  std::vector<PendingTask> handed_back;
  {
    HashedWheelTimer timer(TimerOptions{.executor = GetParam().make()});
    const auto later = std::chrono::hours(1);
    timer.schedule(checking_task<1, 1>(found[0]), later);
    timer.schedule(checking_task<40, 8>(found[1]), later);
    timer.schedule(checking_task<72, 8>(found[2]), later);
    timer.schedule(checking_task<80, 16>(found[3]), later);
    timer.schedule(checking_task<88, 8>(found[4]), later);
    timer.schedule(checking_task<136, 8>(found[5]), later);
    timer.schedule(checking_task<64, 64>(found[6]), later);
    timer.schedule(checking_task<256, 256>(found[7]), later);
    handed_back = timer.stop();
  }
  ASSERT_EQ(handed_back.size(), kTasks);
  HashedWheelTimer other(TimerOptions{.executor = GetParam().make()});
  std::vector<TimerFuture> adopted;
  for (std::size_t i = 0; i < kTasks; ++i) {
    // Every other one is run here; the rest are adopted, and their deadline brought back by stop()
    // once more, then run.
    if (i % 2 == 0) {
      handed_back[i].run();
    } else {
      adopted.push_back(other.adopt(std::move(handed_back[i])));
    }
  }
  std::vector<PendingTask> again = other.stop();
  ASSERT_EQ(again.size(), adopted.size());
  for (PendingTask& task : again) task.run();
  for (std::size_t i = 0; i < kTasks; ++i) EXPECT_EQ(found[i].load(), kWhole) << "task " << i;
}

INSTANTIATE_TEST_SUITE_P(EveryExecutor, CaptureLayoutTest,
                         ::testing::ValuesIn(executor_kinds(4)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace wheeltimer::testing
