#include "report.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <thread>

#include "timer_setup.hpp"
#include "usage.hpp"

namespace wheeltimer_bench {
namespace {

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "n/a";  // nothing was measured (JSON: null)
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// A setting as the table shows it: strings bare, whole numbers without a trailing ".0".
std::string setting_text(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (number == std::floor(number) && std::fabs(number) < 1e15) return fixed(number, 0);
  }
  return value.dump();
}

}  // namespace

void Report::add(std::string key, std::string label, double value, int decimals) {
  metrics.push_back({std::move(key), std::move(label), value, decimals});
}

void Report::add_lateness(const std::string& key_prefix, const std::string& label_prefix,
                          const LatenessSummary& s) {
  add(key_prefix + "p50_ms", label_prefix + "p50 (ms)", s.p50_ms, 3);
  add(key_prefix + "p90_ms", label_prefix + "p90 (ms)", s.p90_ms, 3);
  add(key_prefix + "p99_ms", label_prefix + "p99 (ms)", s.p99_ms, 3);
  add(key_prefix + "p999_ms", label_prefix + "p99.9 (ms)", s.p999_ms, 3);
  add(key_prefix + "max_ms", label_prefix + "max (ms)", s.max_ms, 3);
  add(key_prefix + "early", label_prefix + "early (count)", static_cast<double>(s.early));
}

nlohmann::ordered_json common_settings(const CommonSettings& common, const std::string& executor) {
  // The tick the timer was given: --tick-us rounded up to whole nanoseconds.
  const double tick_us = std::chrono::duration<double, std::micro>(tick_of(common)).count();
  return {{"tick_us", tick_us},
          {"wheel", std::bit_ceil(common.wheel)},  // the slots the timer has
          {"executor", executor},
          {"seed", common.seed},
          {"hardware_threads", std::thread::hardware_concurrency()},
          {"load_average", load_average()}};
}

void print_table(std::FILE* out, const std::vector<Report>& runs) {
  if (runs.empty()) return;
  const Report& first = runs.front();
  std::fprintf(out, "%s: %s\n", first.workload.c_str(), first.title.c_str());
  std::string settings;
  for (const auto& [key, value] : first.settings.items()) {
    if (!settings.empty()) settings += ", ";
    settings += key + " " + setting_text(value);
  }
  std::fprintf(out, "  settings: %s\n\n", settings.c_str());

  // Cells: one row per metric, one column per run, then the median.
  std::vector<std::string> header{"metric"};
  for (std::size_t r = 0; r < runs.size(); ++r) {
    header.push_back(runs.size() == 1 ? "value" : "run " + std::to_string(r + 1));
  }
  if (runs.size() > 1) header.push_back("median");
  std::vector<std::vector<std::string>> rows{header};
  for (std::size_t m = 0; m < first.metrics.size(); ++m) {
    const Metric& metric = first.metrics[m];
    std::vector<std::string> row{metric.label};
    std::vector<double> values;
    for (const Report& run : runs) {
      values.push_back(run.metrics.at(m).value);
      row.push_back(fixed(values.back(), metric.decimals));
    }
    if (runs.size() > 1) row.push_back(fixed(median(values), metric.decimals));
    rows.push_back(std::move(row));
  }

  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::fprintf(out, "  %-*s", static_cast<int>(width[0]), row[0].c_str());
    for (std::size_t c = 1; c < row.size(); ++c) {
      std::fprintf(out, "  %*s", static_cast<int>(width[c]), row[c].c_str());
    }
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "\n");
}

void print_json_line(std::FILE* out, const Report& report, std::size_t run) {
  nlohmann::ordered_json results = nlohmann::ordered_json::object();
  for (const Metric& metric : report.metrics) {
    // Counts go out as integers, everything else as measured.
    if (metric.decimals == 0 && metric.value == std::floor(metric.value) &&
        std::fabs(metric.value) < 1e15) {
      results[metric.key] = static_cast<std::int64_t>(metric.value);
    } else {
      results[metric.key] = metric.value;
    }
  }
  const nlohmann::ordered_json line = {{"workload", report.workload}, {"run", run},
                                       {"settings", report.settings}, {"results", results},
                                       {"early", report.early},       {"lost", report.lost},
                                       {"repeated", report.repeated}};
  std::fprintf(out, "%s\n", line.dump().c_str());
  std::fflush(out);
}

std::string with_commas(std::size_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string readable(double value) {
  const bool whole = value >= 0 && value < 1e15 && value == std::floor(value);
  return whole ? with_commas(static_cast<std::size_t>(value)) : shortest(value);
}

std::string shortest(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

}  // namespace wheeltimer_bench
