#include "zeroed_array.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace wheeltimer::detail {
namespace {

// From here on a block is mapped: rounding it up to whole pages wastes little.
constexpr std::size_t kMapFrom = std::size_t{64} << 10;

}  // namespace

void* allocate_zeroed(std::size_t bytes) {
  if (bytes < kMapFrom) {
    void* memory = std::calloc(1, bytes != 0 ? bytes : 1);
    if (memory == nullptr) throw std::bad_alloc();
    return memory;
  }
  // MAP_NORESERVE: the pages are counted against memory only when written.
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  return memory;
}

void free_zeroed(void* memory, std::size_t bytes) noexcept {
  if (bytes < kMapFrom) {
    std::free(memory);
  } else {
    ::munmap(memory, bytes);
  }
}

}  // namespace wheeltimer::detail
