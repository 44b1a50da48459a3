#include "slot_bitmap.hpp"

#include <bit>

namespace wheeltimer::detail {
namespace {

constexpr std::size_t kWordBits = 64;

// Bits at or above `bit` within its word.
constexpr std::uint64_t from_bit(std::size_t bit) noexcept {
  return ~std::uint64_t{0} << (bit % kWordBits);
}

}  // namespace

SlotBitmap::SlotBitmap(std::size_t bits) {
  std::size_t count = (bits + kWordBits - 1) / kWordBits;
  for (;;) {
    layers_.emplace_back(count);
    if (count == 1) break;
    count = (count + kWordBits - 1) / kWordBits;
  }
}

void SlotBitmap::set(std::size_t bit) noexcept {
  for (ZeroedArray<std::uint64_t>& layer : layers_) {
    std::uint64_t& word = layer[bit / kWordBits];
    const bool was_empty = word == 0;
    word |= std::uint64_t{1} << (bit % kWordBits);
    if (!was_empty) return;  // the layers above already say this word is non-empty
    bit /= kWordBits;
  }
}

void SlotBitmap::clear(std::size_t bit) noexcept {
  for (ZeroedArray<std::uint64_t>& layer : layers_) {
    std::uint64_t& word = layer[bit / kWordBits];
    word &= ~(std::uint64_t{1} << (bit % kWordBits));
    if (word != 0) return;  // still non-empty: the layers above stay as they are
    bit /= kWordBits;
  }
}

std::size_t SlotBitmap::find_next(std::size_t from) const noexcept {
  // Climb while the rest of the current word is empty, then descend along first set bits.
  std::size_t layer = 0;
  std::size_t bit = from;
  for (;;) {
    if (bit / kWordBits >= layers_[layer].size()) return npos;
    const std::uint64_t rest = layers_[layer][bit / kWordBits] & from_bit(bit);
    if (rest != 0) {
      bit = bit / kWordBits * kWordBits + static_cast<std::size_t>(std::countr_zero(rest));
      break;
    }
    if (layer + 1 == layers_.size()) return npos;
    bit = bit / kWordBits + 1;  // the next word of this layer, as a bit of the layer above
    ++layer;
  }
  while (layer > 0) {
    --layer;
    const std::uint64_t word = layers_[layer][bit];
    bit = bit * kWordBits + static_cast<std::size_t>(std::countr_zero(word));
  }
  return bit;
}

}  // namespace wheeltimer::detail
