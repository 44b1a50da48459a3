// NodePool: fixed-size cells for the task nodes of small captures (a pointer or two), the nodes a
// service has millions of.
//
// Why not the general allocator: a node with an 8-byte capture is 56 bytes, which oneTBB's
// scalable allocator (and glibc's malloc) serve from a 64-byte class, and nodes are usually
// allocated by a producer and freed by the indicator, a cross-thread free that costs those
// allocators a synchronised hand-back per node. Here cells are exactly kCellSize bytes, and a
// thread hands freed cells on in batches.
//
// Shape (Bonwick's magazines): each thread keeps two lists of at most kBatch cells, one it takes
// from and frees to, and one full spare; a thread whose lists are full or empty swaps a whole
// batch with a process-wide depot under a mutex, once per kBatch operations at most. The depot
// carves new batches from chunks of memory it never returns: cells are reused, not given back
// to the system (oneTBB's allocator also keeps what it has grown to).
#pragma once

#include <cstddef>

namespace wheeltimer::detail {

namespace node_pool {

inline constexpr std::size_t kCellSize = 56;
inline constexpr std::size_t kBatch = 256;

// A kCellSize-byte cell aligned for any pointer-sized scalar; throws std::bad_alloc.
void* allocate();
// Returns a cell from allocate(), on any thread.
void free(void* cell) noexcept;

// For tests: cells carved from chunks so far (in use or free), and free cells the depot holds.
std::size_t cells_carved() noexcept;
std::size_t cells_in_depot() noexcept;

}  // namespace node_pool

}  // namespace wheeltimer::detail
