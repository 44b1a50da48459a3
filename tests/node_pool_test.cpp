// The node pool on its own, for every cell size: cells are whole and distinct while in use, freed
// cells are reused instead of carving new ones (on the same thread, across threads through the
// depot, and after the freeing thread has exited), and cells of different sizes never mix.
#include <algorithm>
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

std::vector<void*> allocate_cells(std::size_t count, std::size_t bytes) {
  std::vector<void*> cells;
  for (std::size_t i = 0; i < count; ++i) cells.push_back(node_pool::allocate(bytes));
  return cells;
}

void free_cells(const std::vector<void*>& cells) {
  for (void* cell : cells) node_pool::free(cell);
}

// Every size the pool serves, smallest and largest included.
std::vector<std::size_t> all_cell_sizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t size = node_pool::kMinCellSize; size <= node_pool::kMaxCellSize;
       size += alignof(void*)) {
    sizes.push_back(size);
  }
  return sizes;
}

// A request that is a multiple of max_align_t's alignment gets a cell aligned for it, also below
// the smallest cell (a node on a 32-bit target: a 32-byte header and a 16-byte capture).
TEST(NodePoolAlignment, SmallAlignedRequestsGetAlignedCells) {
  constexpr std::size_t kMaxAlign = alignof(std::max_align_t);
  for (std::size_t bytes = kMaxAlign; bytes <= node_pool::kMaxCellSize; bytes += kMaxAlign) {
    const std::vector<void*> cells = allocate_cells(2 * kBatch + 3, bytes);
    for (void* cell : cells) {
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(cell) % kMaxAlign, 0u) << bytes << " bytes";
      ASSERT_GE(node_pool::cell_size(cell), bytes);
    }
    free_cells(cells);
  }
}

class NodePool : public ::testing::TestWithParam<std::size_t> {
 protected:
  const std::size_t size_ = GetParam();
};

TEST_P(NodePool, CellsInUseAreDistinctAndKeepTheirBytes) {
  const std::vector<void*> cells = allocate_cells(3 * kBatch + 5, size_);
  EXPECT_EQ(std::set<void*>(cells.begin(), cells.end()).size(), cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(cells[i]) % alignof(void*), 0u);
    // A node whose callable is aligned to 16 has a size that is a multiple of 16.
    if (size_ % alignof(std::max_align_t) == 0) {
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(cells[i]) % alignof(std::max_align_t), 0u);
    }
    EXPECT_EQ(node_pool::cell_size(cells[i]), size_);
    std::memset(cells[i], static_cast<int>(i % 251), size_);
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const auto* bytes = static_cast<const unsigned char*>(cells[i]);
    for (std::size_t b = 0; b < size_; ++b) {
      ASSERT_EQ(bytes[b], i % 251) << "cell " << i << " byte " << b << " overlaps another cell";
    }
  }
  free_cells(cells);
}

TEST_P(NodePool, FreedCellsAreReusedOnTheSameThread) {
  free_cells(allocate_cells(4 * kBatch, size_));
  const std::size_t carved = node_pool::cells_carved(size_);
  for (int round = 0; round < 10; ++round) free_cells(allocate_cells(4 * kBatch, size_));
  EXPECT_EQ(node_pool::cells_carved(size_), carved);
}

// The fire pattern: one thread allocates, another frees. The freeing thread's full batches go
// back to the depot, so the allocating thread keeps finding cells there.
TEST_P(NodePool, CellsFreedOnAnotherThreadAreReused) {
  constexpr std::size_t kPerRound = 20 * kBatch;
  constexpr int kRounds = 20;
  const std::size_t carved = node_pool::cells_carved(size_);
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<void*> cells = allocate_cells(kPerRound, size_);
    std::thread([&cells] { free_cells(cells); }).join();
  }
  // Each round's freeing thread returns all it freed when it exits; without reuse this would be
  // kRounds * kPerRound.
  EXPECT_LE(node_pool::cells_carved(size_) - carved, kPerRound + 4 * kBatch);
}

TEST_P(NodePool, AnExitingThreadHandsBackEveryCellItHeld) {
  const std::size_t carved = node_pool::cells_carved(size_);
  const std::size_t in_depot = node_pool::cells_in_depot(size_);
  // Not a multiple of the batch size, so the thread ends with a partial batch as well.
  const std::size_t size = size_;
  std::thread([size] { free_cells(allocate_cells(9 * kBatch + 7, size)); }).join();
  // Every cell the thread carved or took from the depot is free again, back in the depot,
  // including the two batches it kept cached until it exited.
  EXPECT_EQ(node_pool::cells_in_depot(size_) - in_depot, node_pool::cells_carved(size_) - carved);
}

TEST_P(NodePool, ManyThreadsAllocatingAndFreeingAtOnceNeverShareACell) {
  constexpr int kThreads = 4;
  constexpr std::size_t kCells = 5 * kBatch + 17;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  const std::size_t size = size_;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, size, &failures] {
      for (int round = 0; round < 20; ++round) {
        const std::vector<void*> cells = allocate_cells(kCells, size);
        for (void* cell : cells) std::memset(cell, t + 1, size);
        for (void* cell : cells) {
          const auto* bytes = static_cast<const unsigned char*>(cell);
          for (std::size_t b = 0; b < size; ++b) {
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

INSTANTIATE_TEST_SUITE_P(EveryCellSize, NodePool, ::testing::ValuesIn(all_cell_sizes()));

// A request is served from the smallest size that holds it, and a freed cell goes back to the
// cells of its own size, whichever sizes were freed in between.
TEST(NodePoolSizes, RequestsRoundUpToAWholeWordAndFreedCellsKeepTheirSize) {
  EXPECT_EQ(node_pool::cell_size(node_pool::allocate(1)), node_pool::kMinCellSize);
  for (std::size_t bytes = node_pool::kMinCellSize - 7; bytes <= node_pool::kMaxCellSize; ++bytes) {
    void* cell = node_pool::allocate(bytes);
    const std::size_t expected =
        std::max(node_pool::kMinCellSize, (bytes + alignof(void*) - 1) / alignof(void*) *
                                              alignof(void*));
    EXPECT_EQ(node_pool::cell_size(cell), expected) << bytes << " bytes";
    node_pool::free(cell);
  }
  // Freed in an interleaved order, then allocated again: each comes back at its own size, and
  // distinct. (Interleaved, every freed cell's prefetch hint points into another size's list: a
  // hint must never be followed as a link.)
  std::vector<void*> mixed;
  for (int round = 0; round < 2 * static_cast<int>(kBatch); ++round) {
    for (std::size_t size : all_cell_sizes()) mixed.push_back(node_pool::allocate(size));
  }
  free_cells(mixed);
  for (std::size_t size : all_cell_sizes()) {
    const std::vector<void*> again = allocate_cells(2 * kBatch, size);
    for (void* cell : again) ASSERT_EQ(node_pool::cell_size(cell), size);
    EXPECT_EQ(std::set<void*>(again.begin(), again.end()).size(), again.size());
    free_cells(again);
  }
}

}  // namespace
}  // namespace wheeltimer::detail
