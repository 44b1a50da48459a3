// Where task nodes live. A node is allocated on the thread that schedules it and usually freed on
// the indicator thread. Nodes of up to node_pool::kMaxCellSize bytes (captures of up to 80 bytes)
// come from the node pool (node_pool.hpp), which serves exactly their size and hands freed cells
// between threads in batches. Larger ones come from oneTBB's scalable allocator, which handles the
// cross-thread pattern without the consolidation glibc's malloc does (perf: ~21% of firing CPU in
// malloc_consolidate, unlink_chunk and free); plain malloc without oneTBB.
// Under AddressSanitizer every node is its own malloc block, so a node's use after free is caught
// (a pooled cell would be reused unseen); under ThreadSanitizer the pool stays in, to be checked,
// but tbbmalloc, which it cannot see into, does not.
#pragma once

#include <cstddef>

namespace wheeltimer::detail {

struct NodeMemory {
  void* memory;
  bool pooled;  // to be handed back to free_node()
};

// At least `bytes` of storage aligned for any pointer-sized scalar, and for any scalar
// (std::max_align_t) if `bytes` is a multiple of that alignment or the node is not pooled; throws
// std::bad_alloc on failure.
NodeMemory allocate_node(std::size_t bytes);
// Frees what allocate_node returned, on any thread.
void free_node(NodeMemory node) noexcept;

// For fault-injection tests: after `successes` more node allocations on the calling thread, the
// next one throws std::bad_alloc (once). -1 disarms it.
void fail_node_allocation_after(int successes) noexcept;

}  // namespace wheeltimer::detail
