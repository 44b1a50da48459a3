// A live progress line for long workloads. On a terminal it rewrites one line in place ('\r');
// written to a file or a pipe it prints a plain line about once a second instead, so logs stay
// readable. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>

#include <wheeltimer/clock.hpp>

namespace wheeltimer_bench {

// How a workload reports progress while it waits: tasks done so far, out of `total`.
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

class ProgressLine {
 public:
  ProgressLine(std::FILE* out, std::string label);

  void update(std::size_t done, std::size_t total);
  // Ends the line (on a terminal) with `summary`.
  void finish(const std::string& summary);

  // A ProgressFn bound to this line.
  ProgressFn callback() {
    return [this](std::size_t done, std::size_t total) { update(done, total); };
  }

 private:
  std::FILE* out_;
  std::string label_;
  bool terminal_;
  wheeltimer::Clock::time_point begin_;
  wheeltimer::Clock::time_point last_plain_;
};

}  // namespace wheeltimer_bench
