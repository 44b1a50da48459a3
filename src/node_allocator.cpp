#include "node_allocator.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#include <wheeltimer/config.hpp>

#include "sanitizers.hpp"

#if defined(WHEELTIMER_HAS_TBB) && !defined(WHEELTIMER_ASAN) && !defined(WHEELTIMER_TSAN)
#define WHEELTIMER_NODE_TBBMALLOC 1
#include <oneapi/tbb/scalable_allocator.h>
#endif

#include "node_pool.hpp"

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

NodeMemory allocate_node(std::size_t bytes) {
  if (injection_armed.load(std::memory_order_relaxed) && injected_failure()) {
    throw std::bad_alloc();
  }
#ifndef WHEELTIMER_ASAN
  if (bytes <= node_pool::kMaxCellSize) return {node_pool::allocate(bytes), true};
#endif
#ifdef WHEELTIMER_NODE_TBBMALLOC
  void* memory = scalable_malloc(bytes);
#else
  void* memory = std::malloc(bytes);
#endif
  if (memory == nullptr) throw std::bad_alloc();
  return {memory, false};
}

void free_node(NodeMemory node) noexcept {
  if (node.pooled) return node_pool::free(node.memory);
#ifdef WHEELTIMER_NODE_TBBMALLOC
  scalable_free(node.memory);
#else
  std::free(node.memory);
#endif
}

}  // namespace wheeltimer::detail
