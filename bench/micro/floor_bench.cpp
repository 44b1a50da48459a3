// The steps schedule() and cancel() cannot skip in the calling thread without giving up a
// guarantee, timed alone and in sequence, so that their targets can be set against a floor measured
// on the same machine in the same run. Each step works on memory already in the cache and on no
// line another thread writes, so each of these rows is a lower bound of what the real call pays.
//
// schedule(fn, delay) must read the clock (the deadline is now + delay), count itself in with one
// compare-and-swap on the timer's admitted count (stop() and max_pending are decided there, see
// WheelCore::admit), enqueue its node on a multi-producer queue, and fence before it looks whether
// the indicator sleeps (a lost wake-up otherwise, see "Waking" in src/wheel_core.hpp).
// cancel() must win its node's state with a compare-and-swap, push the node onto a list the
// indicator takes (once the indicator has taken the node into the wheel), and count the settle
// with a locked add that pending() reads.
// Starting a task touches its node; nodes start in deadline order, which is random with respect to
// their addresses: random_touch times that one touch per node alone, a floor for firing.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>
#include <wheeltimer/clock.hpp>

#include "moodycamel_queue.hpp"
#include "registry.hpp"

namespace micro {
namespace {

constexpr std::int64_t kOps = 500'000;  // as the timer rows
constexpr std::int64_t kCells = 1'000'000;  // as fire's timers

// Each on a line of its own, as the timer keeps them.
struct alignas(64) Word {
  std::atomic<std::uint64_t> value{0};
};

void clock_now(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(wheeltimer::Clock::now());
}

bool cas_increment(Word& word) noexcept {
  std::uint64_t current = word.value.load(std::memory_order_seq_cst);
  return word.value.compare_exchange_weak(current, current + 1, std::memory_order_seq_cst);
}

void compare_and_swap(benchmark::State& state) {
  Word word;
  for (auto _ : state) benchmark::DoNotOptimize(cas_increment(word));
}

void locked_add(benchmark::State& state) {
  Word word;
  for (auto _ : state) benchmark::DoNotOptimize(word.value.fetch_add(1, std::memory_order_seq_cst));
}

void fence(benchmark::State& state) {
  for (auto _ : state) std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Built with room for every item (kOps), so the timed loop allocates no blocks: the timer's queue
// is drained by the indicator as it goes, and its blocks are reused.
using Queue = moodycamel::ConcurrentQueue<void*>;

void enqueue(benchmark::State& state) {
  Queue queue(kOps);
  Word item;
  for (auto _ : state) benchmark::DoNotOptimize(queue.enqueue(&item));
}

void schedule_steps(benchmark::State& state) {
  Queue queue(kOps);
  Word admitted;
  Word item;
  for (auto _ : state) {
    benchmark::DoNotOptimize(wheeltimer::Clock::now());
    benchmark::DoNotOptimize(cas_increment(admitted));
    benchmark::DoNotOptimize(queue.enqueue(&item));
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

void cancel_steps(benchmark::State& state) {
  Word node_state;
  Word list_head;
  Word settled;
  for (auto _ : state) {
    benchmark::DoNotOptimize(cas_increment(node_state));
    benchmark::DoNotOptimize(cas_increment(list_head));
    benchmark::DoNotOptimize(settled.value.fetch_add(1, std::memory_order_seq_cst));
  }
}

// A million 64-byte cells, each read and written once, in random order.
void random_touch(benchmark::State& state) {
  struct alignas(64) Cell {
    std::uint64_t deadline = 0;
    std::uint64_t state = 0;
  };
  std::vector<Cell> cells(static_cast<std::size_t>(kCells));
  std::vector<Cell*> order;
  order.reserve(cells.size());
  for (Cell& cell : cells) order.push_back(&cell);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  std::size_t next = 0;
  for (auto _ : state) {
    Cell& cell = *order[next++];
    benchmark::DoNotOptimize(cell.deadline);
    ++cell.state;
  }
  benchmark::DoNotOptimize(cells.data());
}

void add(const char* name, void (*run)(benchmark::State&), std::int64_t iterations = kOps) {
  benchmark::RegisterBenchmark(name, run)->Iterations(iterations);
}

}  // namespace

void register_floor_benchmarks() {
  add("BM_Floor/clock_now", clock_now);
  add("BM_Floor/compare_and_swap", compare_and_swap);
  add("BM_Floor/locked_add", locked_add);
  add("BM_Floor/seq_cst_fence", fence);
  add("BM_Floor/queue_enqueue", enqueue);
  add("BM_Floor/schedule_steps", schedule_steps);
  add("BM_Floor/cancel_steps", cancel_steps);
  add("BM_Floor/random_touch", random_touch, kCells);
}

}  // namespace micro
