#include "zeroed_array.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "sanitizers.hpp"

#if defined(WHEELTIMER_ASAN)
#include <sanitizer/asan_interface.h>
#include <unistd.h>
#endif

namespace wheeltimer::detail {
namespace {

// From here on a block is mapped: rounding it up to whole pages wastes little.
constexpr std::size_t kMapFrom = std::size_t{64} << 10;

// Under AddressSanitizer a mapped block gets one more page, and everything after its last byte is
// poisoned, so an index past its end is reported as calloc'ed blocks' are. (Not in other builds:
// a separate guard page would keep the kernel from merging neighbouring mappings, and a process
// has a limited number of them.)
std::size_t mapped_bytes(std::size_t bytes) noexcept {
#if defined(WHEELTIMER_ASAN)
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page + page;
#else
  return bytes;
#endif
}

}  // namespace

void* allocate_zeroed(std::size_t bytes) {
  if (bytes < kMapFrom) {
    void* memory = std::calloc(1, bytes != 0 ? bytes : 1);
    if (memory == nullptr) throw std::bad_alloc();
    return memory;
  }
  const std::size_t mapped = mapped_bytes(bytes);
  // MAP_NORESERVE: the pages are counted against memory only when written.
  void* memory = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
#if defined(WHEELTIMER_ASAN)
  ASAN_POISON_MEMORY_REGION(static_cast<char*>(memory) + bytes, mapped - bytes);
#endif
  return memory;
}

void free_zeroed(void* memory, std::size_t bytes) noexcept {
  if (bytes < kMapFrom) {
    std::free(memory);
    return;
  }
  const std::size_t mapped = mapped_bytes(bytes);
#if defined(WHEELTIMER_ASAN)
  // A later mapping here must not inherit the poison. Only the tail has any: unpoisoning all of a
  // large array would write its whole shadow (an eighth of its size).
  ASAN_UNPOISON_MEMORY_REGION(static_cast<char*>(memory) + bytes, mapped - bytes);
#endif
  ::munmap(memory, mapped);
}

}  // namespace wheeltimer::detail
