#include "rss.hpp"

#include <malloc.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

namespace micro {

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0;
  std::size_t resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) {
    throw std::runtime_error("cannot read /proc/self/statm");
  }
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

void release_free_memory() { malloc_trim(0); }

}  // namespace micro
