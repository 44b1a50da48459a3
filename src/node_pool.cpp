#include "node_pool.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>

namespace wheeltimer::detail::node_pool {
namespace {

constexpr std::size_t kWord = alignof(void*);
constexpr std::size_t kSizes = (kMaxCellSize - kMinCellSize) / kWord + 1;
static_assert(kMinCellSize % kWord == 0 && kMaxCellSize % kWord == 0);

// Cells of a size that is a multiple of kMaxAlign are aligned for any scalar (see kHeaderBytes).
constexpr std::size_t kMaxAlign = alignof(std::max_align_t);
constexpr std::size_t kMinAlignedCell = (kMinCellSize + kMaxAlign - 1) / kMaxAlign * kMaxAlign;
static_assert(kMinAlignedCell <= kMaxCellSize);

std::size_t size_index(std::size_t bytes) noexcept {
  // A multiple of kMaxAlign below the smallest cell (a node on a 32-bit target) keeps its
  // alignment in the smallest cell that is a multiple too.
  if (bytes < kMinCellSize && bytes % kMaxAlign == 0) bytes = kMinAlignedCell;
  return (std::max(bytes, kMinCellSize) - kMinCellSize + kWord - 1) / kWord;
}
constexpr std::size_t size_of_index(std::size_t index) noexcept {
  return kMinCellSize + index * kWord;
}

// A free cell. The first cell of a batch also links the batch into the depot and knows its size.
//
// `ahead` is a hint, never followed, only prefetched: the cell about kAhead places further down
// the same list (or null). A list of free cells is a pointer chase, and after a million timers
// have been freed in wheel order its cells lie scattered and out of this core's cache: each
// allocation would wait out a whole miss before the next could begin. Asking for the cell kAhead
// allocations early overlaps those misses. (wheeltimer-micro, process CPU per schedule+cancel
// pair run after the schedule and cancel rows, median of three interleaved sets: 128 ns instead
// of 181.) A stale hint, such as one into another list, costs one useless prefetch.
struct Cell {
  Cell* next;
  Cell* ahead;
  Cell* next_batch;
  std::size_t batch_size;
};
static_assert(sizeof(Cell) <= kMinCellSize);
constexpr std::size_t kAhead = 8;

// Asks for every cache line of a cell of `size` bytes (cells are not line-aligned: a 56-byte cell
// spans two lines six times in eight), to be written soon. Integer arithmetic, so `cell` may be
// null or stale: a prefetch never faults.
constexpr std::uintptr_t kCacheLine = 64;
void prefetch_cell(const Cell* cell, std::size_t size) noexcept {
  const auto last = reinterpret_cast<std::uintptr_t>(cell) + size - 1;
  for (auto line = reinterpret_cast<std::uintptr_t>(cell) & ~(kCacheLine - 1); line <= last;
       line += kCacheLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
  }
}

// Chunks are kChunkBytes long and aligned to that, so a cell finds its chunk's header by masking
// its address. The header takes the first kHeaderBytes; cells follow.
constexpr std::size_t kChunkBytes = std::size_t{256} << 10;
constexpr std::size_t kHeaderBytes = 64;
struct ChunkHeader {
  std::size_t size_index;
};
static_assert(sizeof(ChunkHeader) <= kHeaderBytes);
// So that cells of a size that is a multiple of kMaxAlign are aligned for any scalar.
static_assert(kHeaderBytes % kMaxAlign == 0);

const ChunkHeader& chunk_of(const void* cell) noexcept {
  return *reinterpret_cast<const ChunkHeader*>(reinterpret_cast<std::uintptr_t>(cell) &
                                               ~(std::uintptr_t{kChunkBytes} - 1));
}

// Where the cells of one size go when no thread keeps them.
class Depot {
 public:
  explicit Depot(std::size_t index)
      : index_(index),
        cell_size_(size_of_index(index)),
        cells_per_chunk_((kChunkBytes - kHeaderBytes) / cell_size_),
        carved_in_chunk_(cells_per_chunk_) {}

  // A list of cells, up to kBatch of them, and how many it holds.
  Cell* take(std::size_t& count) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (full_ != nullptr) {
      Cell* batch = std::exchange(full_, full_->next_batch);
      count = batch->batch_size;
      held_ -= count;
      return batch;
    }
    if (carved_in_chunk_ == cells_per_chunk_) {
      // Never freed: cells of a chunk are handed around for the life of the process.
      chunk_ = static_cast<char*>(std::aligned_alloc(kChunkBytes, kChunkBytes));
      if (chunk_ == nullptr) throw std::bad_alloc();
      ::new (chunk_) ChunkHeader{index_};
      carved_in_chunk_ = 0;
    }
    count = std::min(kBatch, cells_per_chunk_ - carved_in_chunk_);
    Cell* head = nullptr;
    for (std::size_t i = count; i-- > 0;) {
      auto* cell =
          reinterpret_cast<Cell*>(chunk_ + kHeaderBytes + (carved_in_chunk_ + i) * cell_size_);
      cell->next = head;
      cell->ahead = i + kAhead < count ? reinterpret_cast<Cell*>(reinterpret_cast<char*>(cell) +
                                                                 kAhead * cell_size_)
                                       : nullptr;
      head = cell;
    }
    carved_in_chunk_ += count;
    carved_total_ += count;
    return head;
  }

  void give(Cell* batch, std::size_t count) noexcept {
    batch->batch_size = count;
    std::lock_guard<std::mutex> lock(mutex_);
    batch->next_batch = full_;
    full_ = batch;
    held_ += count;
  }

  std::size_t carved() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return carved_total_;
  }
  std::size_t held() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  const std::size_t index_;
  const std::size_t cell_size_;
  const std::size_t cells_per_chunk_;
  std::mutex mutex_;
  Cell* full_ = nullptr;  // batches given back
  std::size_t held_ = 0;  // cells in them
  char* chunk_ = nullptr;
  std::size_t carved_in_chunk_;
  std::size_t carved_total_ = 0;
};

// Never destroyed: threads may free nodes into them until the very end of the process.
Depot& depot(std::size_t index) {
  static Depot* const* const instances = [] {
    auto** depots = new Depot*[kSizes];
    for (std::size_t i = 0; i < kSizes; ++i) depots[i] = new Depot(i);
    return depots;
  }();
  return *instances[index];
}

// One thread's cells of one size: `active` to allocate from and free to, and a full `spare`.
class ThreadCache {
 public:
  // `index`: the cell size's, for the depot, which is looked up only when a batch changes hands.
  void* allocate(std::size_t index) {
    if (active_count_ == 0) {
      if (spare_ != nullptr) {
        active_ = std::exchange(spare_, nullptr);
        active_count_ = kBatch;
      } else {
        active_ = depot(index).take(active_count_);
      }
    }
    --active_count_;
    Cell* cell = std::exchange(active_, active_->next);
    // Every line of the cell: schedule() writes all of it, and its store-load barrier would wait
    // for a line not asked for. (With cells recycled from a million earlier timers, asking for
    // the first line only left a fire-like scheduling loop at 270-300 ns a timer; now 120-200.)
    prefetch_cell(cell->ahead, size_of_index(index));
    return cell;
  }

  // `ahead`: the cell this thread freed kAhead frees earlier, which lies kAhead places further
  // down if both went to this list.
  void free(Cell* cell, std::size_t index, Cell* ahead) noexcept {
    if (active_count_ == kBatch) {
      if (spare_ != nullptr) depot(index).give(spare_, kBatch);
      spare_ = std::exchange(active_, nullptr);
      active_count_ = 0;
    }
    cell->next = active_;
    cell->ahead = ahead;
    active_ = cell;
    ++active_count_;
  }

  void give_back(Depot& depot) noexcept {
    if (active_ != nullptr) depot.give(std::exchange(active_, nullptr), active_count_);
    if (spare_ != nullptr) depot.give(std::exchange(spare_, nullptr), kBatch);
    active_count_ = 0;
  }

 private:
  Cell* active_ = nullptr;
  std::size_t active_count_ = 0;
  Cell* spare_ = nullptr;
};

// A thread's caches, one per cell size; all handed back to the depots when the thread exits.
class ThreadCaches {
 public:
  ~ThreadCaches() {
    for (std::size_t i = 0; i < kSizes; ++i) by_size_[i].give_back(depot(i));
    destroyed_ = true;
  }
  void* allocate(std::size_t index) { return by_size_[index].allocate(index); }
  void free(Cell* cell, std::size_t index) noexcept {
    // One ring for all sizes (static TLS is scarce): a thread that frees cells of two sizes in
    // turn only gets stale hints.
    Cell* ahead = std::exchange(recent_[recent_at_], cell);
    recent_at_ = (recent_at_ + 1) % kAhead;
    by_size_[index].free(cell, index, ahead);
  }

  // Set once this thread's caches are gone (a node freed by a thread_local or static destroyed
  // after them): such a thread then trades single cells with the depots.
  static thread_local bool destroyed_;

 private:
  ThreadCache by_size_[kSizes];
  Cell* recent_[kAhead] = {};  // the cells this thread freed last, a ring
  std::size_t recent_at_ = 0;
};

thread_local bool ThreadCaches::destroyed_ = false;
thread_local ThreadCaches caches;

}  // namespace

void* allocate(std::size_t bytes) {
  const std::size_t index = size_index(bytes);
  if (!ThreadCaches::destroyed_) return caches.allocate(index);
  Depot& pool = depot(index);
  std::size_t count = 0;
  Cell* batch = pool.take(count);
  if (count > 1) pool.give(batch->next, count - 1);
  return batch;
}

void free(void* memory) noexcept {
  auto* cell = static_cast<Cell*>(memory);
  const std::size_t index = chunk_of(cell).size_index;
  if (!ThreadCaches::destroyed_) return caches.free(cell, index);
  cell->next = nullptr;
  cell->ahead = nullptr;
  depot(index).give(cell, 1);
}

std::size_t cell_size(const void* cell) noexcept {
  return size_of_index(chunk_of(cell).size_index);
}
std::size_t cells_carved(std::size_t cell_size) noexcept {
  return depot(size_index(cell_size)).carved();
}
std::size_t cells_in_depot(std::size_t cell_size) noexcept {
  return depot(size_index(cell_size)).held();
}

}  // namespace wheeltimer::detail::node_pool
