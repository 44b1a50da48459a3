// Resident memory of this process, for "bytes per pending timer" (Linux, glibc).
#pragma once

#include <cstddef>

namespace micro {

// Resident set size in bytes, from /proc/self/statm.
std::size_t resident_bytes();

// Hands freed heap memory back to the kernel (malloc_trim), so that what earlier benchmarks freed
// is not silently reused: after this, new allocations show up as RSS growth.
void release_free_memory();

}  // namespace micro
