#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wheeltimer_bench {

std::int64_t percentile(const std::vector<std::int64_t>& sorted, std::size_t per_mille) {
  if (sorted.empty()) return 0;
  // Nearest rank: the smallest sample with at least per_mille/1000 of the samples at or below it.
  // In integers: ceil(99.9 / 100 * n) in floating point is one rank too high for n = 1000.
  const std::size_t rank = (per_mille * sorted.size() + 999) / 1000;
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

LatenessSummary summarize_lateness(std::vector<std::int64_t> lateness_ns) {
  LatenessSummary summary;
  summary.count = lateness_ns.size();
  if (lateness_ns.empty()) return summary;  // no samples: every order statistic stays NaN
  std::sort(lateness_ns.begin(), lateness_ns.end());
  const auto ms = [&](std::size_t per_mille) {
    return static_cast<double>(percentile(lateness_ns, per_mille)) / 1e6;
  };
  summary.early = static_cast<std::size_t>(
      std::lower_bound(lateness_ns.begin(), lateness_ns.end(), 0) - lateness_ns.begin());
  summary.p50_ms = ms(500);
  summary.p90_ms = ms(900);
  summary.p99_ms = ms(990);
  summary.p999_ms = ms(999);
  summary.max_ms = ms(1000);
  return summary;
}

double median(std::vector<double> values) {
  std::erase_if(values, [](double value) { return std::isnan(value); });
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace wheeltimer_bench
