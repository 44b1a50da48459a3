// Order statistics for the tool's measurements: percentiles of per-task lateness and the median of
// repeated runs. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace wheeltimer_bench {

// Lateness (start minus deadline) of a set of tasks, in milliseconds. With no samples the order
// statistics are NaN, which reports show as "n/a" (JSON null), never as a perfect 0.
struct LatenessSummary {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::size_t count = 0;
  std::size_t early = 0;  // started before their deadline: the timer promises none
  double p50_ms = kNone, p90_ms = kNone, p99_ms = kNone, p999_ms = kNone, max_ms = kNone;
};

// Summarizes lateness samples in nanoseconds (taken by value: it sorts them).
LatenessSummary summarize_lateness(std::vector<std::int64_t> lateness_ns);

// Nearest-rank percentile, in thousandths (990: p99; 1000: the maximum), of ascending `sorted`;
// 0 when empty.
std::int64_t percentile(const std::vector<std::int64_t>& sorted, std::size_t per_mille);

// Median of the values that are not NaN (the mean of the middle two for an even count); NaN when
// there are none.
double median(std::vector<double> values);

}  // namespace wheeltimer_bench
