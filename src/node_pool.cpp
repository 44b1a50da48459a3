#include "node_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>

namespace wheeltimer::detail::node_pool {
namespace {

// A free cell. The first cell of a batch also links the batch into the depot and knows its size.
struct Cell {
  Cell* next;
  Cell* next_batch;
  std::size_t batch_size;
};
static_assert(sizeof(Cell) <= kCellSize && kCellSize % alignof(void*) == 0);

constexpr std::size_t kCellsPerChunk = 4681;  // 256 KiB of cells

class Depot {
 public:
  // A list of cells, up to kBatch of them, and how many it holds.
  Cell* take(std::size_t& count) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (full_ != nullptr) {
      Cell* batch = std::exchange(full_, full_->next_batch);
      count = batch->batch_size;
      held_ -= count;
      return batch;
    }
    if (carved_in_chunk_ == kCellsPerChunk) {
      // Never freed: cells of a chunk are handed around for the life of the process.
      chunk_ = static_cast<char*>(std::malloc(kCellsPerChunk * kCellSize));
      if (chunk_ == nullptr) throw std::bad_alloc();
      carved_in_chunk_ = 0;
    }
    count = std::min(kBatch, kCellsPerChunk - carved_in_chunk_);
    Cell* head = nullptr;
    for (std::size_t i = count; i-- > 0;) {
      auto* cell = reinterpret_cast<Cell*>(chunk_ + (carved_in_chunk_ + i) * kCellSize);
      cell->next = head;
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
  std::mutex mutex_;
  Cell* full_ = nullptr;  // batches given back
  std::size_t held_ = 0;  // cells in them
  char* chunk_ = nullptr;
  std::size_t carved_in_chunk_ = kCellsPerChunk;
  std::size_t carved_total_ = 0;
};

// Never destroyed: threads may free nodes into it until the very end of the process.
Depot& depot() {
  static Depot* const instance = new Depot;
  return *instance;
}

// One thread's cells: `active` to allocate from and free to, and a full `spare`.
class ThreadCache {
 public:
  ~ThreadCache() {
    if (active_ != nullptr) depot().give(active_, active_count_);
    if (spare_ != nullptr) depot().give(spare_, kBatch);
    destroyed_ = true;
  }

  void* allocate() {
    if (active_count_ == 0) {
      if (spare_ != nullptr) {
        active_ = std::exchange(spare_, nullptr);
        active_count_ = kBatch;
      } else {
        active_ = depot().take(active_count_);
      }
    }
    --active_count_;
    return std::exchange(active_, active_->next);
  }

  void free(Cell* cell) noexcept {
    if (active_count_ == kBatch) {
      if (spare_ != nullptr) depot().give(spare_, kBatch);
      spare_ = std::exchange(active_, nullptr);
      active_count_ = 0;
    }
    cell->next = active_;
    active_ = cell;
    ++active_count_;
  }

  // Set once this thread's cache is gone (a node freed by a thread_local or static destroyed
  // after it): such a thread then trades single cells with the depot.
  static thread_local bool destroyed_;

 private:
  Cell* active_ = nullptr;
  std::size_t active_count_ = 0;
  Cell* spare_ = nullptr;
};

thread_local bool ThreadCache::destroyed_ = false;
thread_local ThreadCache cache;

}  // namespace

void* allocate() {
  if (!ThreadCache::destroyed_) return cache.allocate();
  std::size_t count = 0;
  Cell* batch = depot().take(count);
  if (count > 1) depot().give(batch->next, count - 1);
  return batch;
}

void free(void* memory) noexcept {
  auto* cell = static_cast<Cell*>(memory);
  if (!ThreadCache::destroyed_) return cache.free(cell);
  cell->next = nullptr;
  depot().give(cell, 1);
}

std::size_t cells_carved() noexcept { return depot().carved(); }
std::size_t cells_in_depot() noexcept { return depot().held(); }

}  // namespace wheeltimer::detail::node_pool
