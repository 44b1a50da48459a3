#include "node_allocator.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#include <wheeltimer/task.hpp>

#include "node_pool.hpp"
#include "sanitizers.hpp"
#include "task_node.hpp"

namespace wheeltimer::detail {
namespace {

// The hot path reads only the global flag; the per-thread count is consulted once a test armed it.
std::atomic<bool> injection_armed{false};
thread_local int allocations_until_failure = -1;

bool injected_failure() noexcept {
  if (allocations_until_failure < 0) return false;
  return allocations_until_failure-- == 0;
}

}  // namespace

void fail_node_allocation_after(int successes) noexcept {
  allocations_until_failure = successes;
  if (successes >= 0) injection_armed.store(true, std::memory_order_relaxed);
}

// A node's storage holds a capture stored inline in its Task, or the pointer to one that is not.
static_assert(sizeof(TaskNode) + Task::inline_capacity <= node_pool::kMaxCellSize,
              "every task node fits a node pool cell");

void* allocate_node(std::size_t bytes) {
  if (injection_armed.load(std::memory_order_relaxed) && injected_failure()) {
    throw std::bad_alloc();
  }
#ifdef WHEELTIMER_ASAN
  void* memory = std::malloc(bytes);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
#else
  return node_pool::allocate(bytes);
#endif
}

void free_node(void* node) noexcept {
#ifdef WHEELTIMER_ASAN
  std::free(node);
#else
  node_pool::free(node);
#endif
}

}  // namespace wheeltimer::detail
