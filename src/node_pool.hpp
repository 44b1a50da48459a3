// NodePool: fixed-size cells for task nodes, of which a service has millions: a 48-byte header and
// a capture of up to Task::inline_capacity (32) bytes, or the pointer to a larger one.
//
// Why not the general allocator: a node with an 8-byte capture is 56 bytes, which oneTBB's
// scalable allocator (and glibc's malloc) serve from a 64-byte class, and nodes are usually
// allocated by a producer and freed by the indicator, a cross-thread free that costs those
// allocators a synchronised hand-back per node. Here cells come in every whole-word size from
// kMinCellSize to kMaxCellSize, and a thread hands freed cells on in batches.
//
// Shape (Bonwick's magazines), for each cell size: each thread keeps two lists of at most kBatch
// cells, one it takes from and frees to, and one full spare; a thread whose lists are full or
// empty swaps a whole batch with a process-wide depot under a mutex, once per kBatch operations at
// most. The depot carves new batches from chunks of memory it never returns: cells are reused,
// not given back to the system (oneTBB's allocator also keeps what it has grown to). A chunk is
// aligned to its size and says at its start what size its cells are, so free() needs no size.
// Each free cell also points a few places down its list, so allocation can prefetch ahead.
#pragma once

#include <cstddef>

namespace wheeltimer::detail {

namespace node_pool {

inline constexpr std::size_t kMinCellSize = 56;  // a node's 48-byte header and one word
inline constexpr std::size_t kMaxCellSize = 80;  // the header and a 32-byte capture
inline constexpr std::size_t kBatch = 256;

// A cell of `bytes` (at most kMaxCellSize) rounded up to a whole word and at least kMinCellSize,
// aligned for any pointer-sized scalar, and for any scalar (std::max_align_t) if `bytes` is a
// multiple of that alignment (then a smaller request gets a cell of 64 bytes, not 56); throws
// std::bad_alloc.
void* allocate(std::size_t bytes);
// Returns a cell from allocate(), on any thread.
void free(void* cell) noexcept;

// For tests: the size of a cell, and for the cells of one size, how many were carved from chunks
// so far (in use or free) and how many free ones the depot holds.
std::size_t cell_size(const void* cell) noexcept;
std::size_t cells_carved(std::size_t cell_size) noexcept;
std::size_t cells_in_depot(std::size_t cell_size) noexcept;

}  // namespace node_pool

}  // namespace wheeltimer::detail
