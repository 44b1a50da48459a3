// SlotBitmap: one bit per wheel slot ("something is linked here"), with summary words above it so
// "the first occupied slot at or after i" costs a few word scans even for a 2^30-slot wheel.
//
// Layer 0 has one bit per slot; each bit of layer k+1 says "word i of layer k is non-zero". The
// top layer is a single word. Every layer is a ZeroedArray, so a huge wheel costs address space
// until slots are used.
//
// Threads: owned by the wheel's owner; no synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "zeroed_array.hpp"

namespace wheeltimer::detail {

class SlotBitmap {
 public:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  explicit SlotBitmap(std::size_t bits);

  void set(std::size_t bit) noexcept;
  void clear(std::size_t bit) noexcept;
  // The first set bit at or after `from`, or npos.
  std::size_t find_next(std::size_t from) const noexcept;

 private:
  // layers_[0]: one bit per slot; back(): one word.
  std::vector<ZeroedArray<std::uint64_t>> layers_;
};

}  // namespace wheeltimer::detail
