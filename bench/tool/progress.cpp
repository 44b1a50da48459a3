#include "progress.hpp"

#include <unistd.h>

#include <chrono>
#include <utility>

namespace wheeltimer_bench {

using wheeltimer::Clock;

ProgressLine::ProgressLine(std::FILE* out, std::string label)
    : out_(out),
      label_(std::move(label)),
      terminal_(isatty(fileno(out)) == 1),
      begin_(Clock::now()),
      last_plain_(begin_) {}

void ProgressLine::update(std::size_t done, std::size_t total) {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - begin_).count();
  const double percent =
      total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total);
  if (terminal_) {
    // "\033[K" erases what a longer previous line left behind.
    std::fprintf(out_, "\r\033[K  %-24s %9zu / %zu tasks done (%5.1f%%)  %5.1f s", label_.c_str(),
                 done, total, percent, elapsed);
  } else if (now - last_plain_ >= std::chrono::seconds(1)) {
    last_plain_ = now;
    std::fprintf(out_, "  %s: %zu / %zu tasks done (%.1f%%), %.1f s\n", label_.c_str(), done, total,
                 percent, elapsed);
  } else {
    return;
  }
  std::fflush(out_);
}

void ProgressLine::finish(const std::string& summary) {
  if (terminal_) {
    std::fprintf(out_, "\r\033[K  %-24s %s\n", label_.c_str(), summary.c_str());
  } else {
    std::fprintf(out_, "  %s: %s\n", label_.c_str(), summary.c_str());
  }
  std::fflush(out_);
}

}  // namespace wheeltimer_bench
