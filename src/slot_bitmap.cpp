#include "slot_bitmap.hpp"

#include <bit>
#include <cstdlib>
#include <new>

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
    auto* words = static_cast<std::uint64_t*>(std::calloc(count, sizeof(std::uint64_t)));
    if (words == nullptr) throw std::bad_alloc();
    layers_.push_back(Layer{std::unique_ptr<std::uint64_t[], FreeDeleter>(words), count});
    if (count == 1) break;
    count = (count + kWordBits - 1) / kWordBits;
  }
}

void SlotBitmap::FreeDeleter::operator()(std::uint64_t* words) const noexcept { std::free(words); }

void SlotBitmap::set(std::size_t bit) noexcept {
  for (Layer& layer : layers_) {
    std::uint64_t& word = layer.words[bit / kWordBits];
    const bool was_empty = word == 0;
    word |= std::uint64_t{1} << (bit % kWordBits);
    if (!was_empty) return;  // the layers above already say this word is non-empty
    bit /= kWordBits;
  }
}

void SlotBitmap::clear(std::size_t bit) noexcept {
  for (Layer& layer : layers_) {
    std::uint64_t& word = layer.words[bit / kWordBits];
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
    if (bit / kWordBits >= layers_[layer].count) return npos;
    const std::uint64_t rest = layers_[layer].words[bit / kWordBits] & from_bit(bit);
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
    const std::uint64_t word = layers_[layer].words[bit];
    bit = bit * kWordBits + static_cast<std::size_t>(std::countr_zero(word));
  }
  return bit;
}

}  // namespace wheeltimer::detail
