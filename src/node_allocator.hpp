// Where task nodes live. A node is allocated on the thread that schedules it and usually freed on
// the indicator thread. Every node (a header and at most Task::inline_capacity bytes of capture,
// or a pointer to a larger one) comes from the node pool (node_pool.hpp), which serves exactly its
// size and hands freed cells between threads in batches.
// Under AddressSanitizer every node is its own malloc block instead, so a node's use after free is
// caught (a pooled cell would be reused unseen); under ThreadSanitizer the pool stays in, to be
// checked.
#pragma once

#include <cstddef>

namespace wheeltimer::detail {

// At least `bytes` (at most node_pool::kMaxCellSize) of storage aligned for any pointer-sized
// scalar, and for any scalar (std::max_align_t) if `bytes` is a multiple of that alignment (or
// under AddressSanitizer); throws std::bad_alloc on failure.
void* allocate_node(std::size_t bytes);
// Frees what allocate_node returned, on any thread.
void free_node(void* node) noexcept;

// For fault-injection tests: after `successes` more node allocations on the calling thread, the
// next one throws std::bad_alloc (once). -1 disarms it.
void fail_node_allocation_after(int successes) noexcept;

}  // namespace wheeltimer::detail
