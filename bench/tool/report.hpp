// Report: what one run of a workload measured, and the two ways the tool prints it: a table for
// people (several runs side by side, with their median) and one JSON line per run for scripts.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "settings.hpp"
#include "stats.hpp"

namespace wheeltimer_bench {

struct Metric {
  std::string key;    // JSON key, with its unit: "lateness_p99_ms"
  std::string label;  // table row, with its unit: "lateness p99 (ms)"
  double value = 0;
  int decimals = 0;  // shown in the table; JSON gets the full value
};

struct Report {
  std::string workload;             // "fire", "slow", ...
  std::string title;                // one line saying what was run
  nlohmann::ordered_json settings;  // every setting the run used
  std::vector<Metric> metrics;
  std::size_t early = 0;     // tasks that started before their deadline (the timer promises 0)
  std::size_t lost = 0;      // tasks that never ran before the tool gave up waiting (should be 0)
  std::size_t repeated = 0;  // extra starts: tasks that ran more than once (should be 0)

  void add(std::string key, std::string label, double value, int decimals = 0);
  // p50/p90/p99/p99.9/max and the early count, keys and labels starting with the prefixes.
  void add_lateness(const std::string& key_prefix, const std::string& label_prefix,
                    const LatenessSummary& summary);
};

// The common flags as JSON, with the executor as it was built.
nlohmann::ordered_json common_settings(const CommonSettings& common, const std::string& executor);

// The runs of one workload, one column each, and a median column when there are several.
void print_table(std::FILE* out, const std::vector<Report>& runs);

// {"workload":..., "run":n, "settings":{...}, "results":{...}, "early":..., "lost":...,
//  "repeated":...}
void print_json_line(std::FILE* out, const Report& report, std::size_t run);

// "1234567" -> "1,234,567", for counts in prose.
std::string with_commas(std::size_t value);

// A flag's value as a user would type it: 0.01, 2147483647, 1e+15 (printf's %.15g).
std::string shortest(double value);
// A number for a sentence: with commas if whole (1,000), else as shortest() gives it (0.5).
std::string readable(double value);

}  // namespace wheeltimer_bench
