// ZeroedArray<T>: a fixed-size array of zero-filled words whose pages cost memory only once
// written, for the wheel's list heads and slot bitmaps (8 GiB of address space for a wheel of
// 2^30 slots, of which a timer touches what it uses).
//
// Why not calloc, as before: glibc's calloc leaves a large block to mmap's zeroed pages only when
// MALLOC_PERTURB_ is unset. `meson test` sets it by default, and then calloc writes every byte:
// a timer with wheel_size 2^30 took about a minute and 8 GiB to construct. Large arrays are mapped
// here directly (under AddressSanitizer with what follows them poisoned, so that an index past
// the end is reported); small ones still come from calloc, which wastes no page on them.
//
// Threads: one owner at a time, like a std::vector; no synchronisation.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace wheeltimer::detail {

// `bytes` of zeroes (throws std::bad_alloc), and their release; `bytes` picks how, so both calls
// must be given the same count.
void* allocate_zeroed(std::size_t bytes);
void free_zeroed(void* memory, std::size_t bytes) noexcept;

template <class T>
class ZeroedArray {
  static_assert(std::is_trivial_v<T>, "all-zero bytes must be a valid T");

 public:
  explicit ZeroedArray(std::size_t count)
      : count_(count), data_(static_cast<T*>(allocate_zeroed(count * sizeof(T)))) {}
  ZeroedArray(ZeroedArray&& other) noexcept
      : count_(std::exchange(other.count_, 0)), data_(std::exchange(other.data_, nullptr)) {}
  ZeroedArray& operator=(ZeroedArray&&) = delete;
  ~ZeroedArray() {
    if (data_ != nullptr) free_zeroed(data_, count_ * sizeof(T));
  }

  std::size_t size() const noexcept { return count_; }
  T* data() noexcept { return data_; }
  T& operator[](std::size_t index) noexcept { return data_[index]; }
  const T& operator[](std::size_t index) const noexcept { return data_[index]; }

 private:
  std::size_t count_;
  T* data_;
};

}  // namespace wheeltimer::detail
