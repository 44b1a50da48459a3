// prefetch_lines: asks for every cache line of a small object that is not aligned to a line (a
// task node or pool cell: 48-128 bytes, two or three lines), to be written soon. Fetching only
// the first line leaves the writes to the next one waiting out a whole miss.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wheeltimer::detail {

inline constexpr std::size_t kCacheLine = 64;

// Integer arithmetic, so `object` may be null or stale: a prefetch never faults.
inline void prefetch_lines(const void* object, std::size_t bytes) noexcept {
  const auto first = reinterpret_cast<std::uintptr_t>(object) & ~std::uintptr_t{kCacheLine - 1};
  const auto last = reinterpret_cast<std::uintptr_t>(object) + bytes - 1;
  for (std::uintptr_t line = first; line <= last; line += kCacheLine) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
  }
}

}  // namespace wheeltimer::detail
