#include "stats.hpp"

#include <algorithm>
#include <cmath>

namespace wheeltimer_bench {

std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  const auto rank =
      static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

LatenessSummary summarize_lateness(std::vector<std::int64_t> lateness_ns) {
  std::sort(lateness_ns.begin(), lateness_ns.end());
  const auto ms = [](std::int64_t ns) { return static_cast<double>(ns) / 1e6; };
  LatenessSummary summary;
  summary.count = lateness_ns.size();
  summary.early = static_cast<std::size_t>(
      std::lower_bound(lateness_ns.begin(), lateness_ns.end(), 0) - lateness_ns.begin());
  summary.p50_ms = ms(percentile(lateness_ns, 50));
  summary.p90_ms = ms(percentile(lateness_ns, 90));
  summary.p99_ms = ms(percentile(lateness_ns, 99));
  summary.p999_ms = ms(percentile(lateness_ns, 99.9));
  summary.max_ms = lateness_ns.empty() ? 0 : ms(lateness_ns.back());
  return summary;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace wheeltimer_bench
