// The node pool on its own: cells are whole and distinct while in use, freed cells are reused
// instead of carving new ones (on the same thread, across threads through the depot, and after
// the freeing thread has exited).
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "node_pool.hpp"

namespace wheeltimer::detail {
namespace {

constexpr std::size_t kBatch = node_pool::kBatch;

std::vector<void*> allocate_cells(std::size_t count) {
  std::vector<void*> cells;
  for (std::size_t i = 0; i < count; ++i) cells.push_back(node_pool::allocate());
  return cells;
}

void free_cells(const std::vector<void*>& cells) {
  for (void* cell : cells) node_pool::free(cell);
}

TEST(NodePool, CellsInUseAreDistinctAndKeepTheirBytes) {
  const std::vector<void*> cells = allocate_cells(3 * kBatch + 5);
  EXPECT_EQ(std::set<void*>(cells.begin(), cells.end()).size(), cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(cells[i]) % alignof(void*), 0u);
    std::memset(cells[i], static_cast<int>(i % 251), node_pool::kCellSize);
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto* bytes = static_cast<const unsigned char*>(cells[i]);
    for (std::size_t b = 0; b < node_pool::kCellSize; ++b) {
      ASSERT_EQ(bytes[b], i % 251) << "cell " << i << " byte " << b << " overlaps another cell";
    }
  }
  free_cells(cells);
}

TEST(NodePool, FreedCellsAreReusedOnTheSameThread) {
  free_cells(allocate_cells(4 * kBatch));
  const std::size_t carved = node_pool::cells_carved();
  for (int round = 0; round < 10; ++round) free_cells(allocate_cells(4 * kBatch));
  EXPECT_EQ(node_pool::cells_carved(), carved);
}

// The fire pattern: one thread allocates, another frees. The freeing thread's full batches go
// back to the depot, so the allocating thread keeps finding cells there.
TEST(NodePool, CellsFreedOnAnotherThreadAreReused) {
  constexpr std::size_t kPerRound = 20 * kBatch;
  constexpr int kRounds = 20;
  const std::size_t carved = node_pool::cells_carved();
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<void*> cells = allocate_cells(kPerRound);
    std::thread([&cells] { free_cells(cells); }).join();
  }
  // Each round's freeing thread returns all it freed when it exits; without reuse this would be
  // kRounds * kPerRound.
  EXPECT_LE(node_pool::cells_carved() - carved, kPerRound + 4 * kBatch);
}

TEST(NodePool, AnExitingThreadHandsBackEveryCellItHeld) {
  const std::size_t carved = node_pool::cells_carved();
  const std::size_t in_depot = node_pool::cells_in_depot();
  // Not a multiple of the batch size, so the thread ends with a partial batch as well.
  std::thread([] { free_cells(allocate_cells(9 * kBatch + 7)); }).join();
  // Every cell the thread carved or took from the depot is free again, back in the depot,
  // including the two batches it kept cached until it exited.
  EXPECT_EQ(node_pool::cells_in_depot() - in_depot, node_pool::cells_carved() - carved);
}

TEST(NodePool, ManyThreadsAllocatingAndFreeingAtOnceNeverShareACell) {
  constexpr int kThreads = 4;
  constexpr std::size_t kCells = 5 * kBatch + 17;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int round = 0; round < 20; ++round) {
        const std::vector<void*> cells = allocate_cells(kCells);
        for (void* cell : cells) std::memset(cell, t + 1, node_pool::kCellSize);
        for (void* cell : cells) {
          const auto* bytes = static_cast<const unsigned char*>(cell);
          for (std::size_t b = 0; b < node_pool::kCellSize; ++b) {
            if (bytes[b] != t + 1) ++failures[t];
          }
        }
        free_cells(cells);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace wheeltimer::detail
