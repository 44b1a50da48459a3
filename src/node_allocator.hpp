// Where task nodes live. A node is allocated on the thread that schedules it and usually freed on
// the indicator thread; with oneTBB, its scalable allocator handles that cross-thread pattern
// without the consolidation glibc's malloc does (perf: ~21% of firing CPU in malloc_consolidate,
// unlink_chunk and free). Without oneTBB, and under sanitizers (which cannot see inside tbbmalloc
// and would miss a node's use after free or report its reuse as a race), plain malloc.
#pragma once

#include <cstddef>

namespace wheeltimer::detail {

// At least `bytes` of storage aligned for any scalar; throws std::bad_alloc on failure.
void* allocate_node(std::size_t bytes);
// Frees what allocate_node returned, on any thread.
void free_node(void* memory) noexcept;

// For fault-injection tests: after `successes` more node allocations on the calling thread, the
// next one throws std::bad_alloc (once). -1 disarms it.
void fail_node_allocation_after(int successes) noexcept;

}  // namespace wheeltimer::detail
