// Order statistics for the tool's measurements: percentiles of per-task lateness and the median of
// repeated runs. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wheeltimer_bench {

// Lateness (start minus deadline) of a set of tasks, in milliseconds.
struct LatenessSummary {
  std::size_t count = 0;
  std::size_t early = 0;  // started before their deadline: the timer promises none
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0;
};

// Summarizes lateness samples in nanoseconds (taken by value: it sorts them).
LatenessSummary summarize_lateness(std::vector<std::int64_t> lateness_ns);

// Nearest-rank percentile (p in [0, 100]) of ascending `sorted`; 0 when empty.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p);

// Median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

}  // namespace wheeltimer_bench
