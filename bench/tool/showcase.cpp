// The showcase wheeltimer-bench runs with no arguments: the slow workload through each executor,
// with a live progress line, then one side-by-side table and a sentence on what it shows.
#include <bit>
#include <cstdio>
#include <string>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

#include "progress.hpp"
#include "timer_setup.hpp"
#include "workloads.hpp"

namespace wheeltimer_bench {
namespace {

std::string ms(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// Prints `text` as a paragraph, breaking lines at spaces to fit `width` columns.
void print_wrapped(const std::string& text, std::size_t width = 96) {
  std::size_t column = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (column > 0 && column + 1 + word.size() > width) {
      std::printf("\n");
      column = 0;
    }
    std::printf("%s%s", column > 0 ? " " : "", word.c_str());
    column += (column > 0 ? 1 : 0) + word.size();
    start = end + 1;
  }
  std::printf("\n");
}

std::string format(const char* pattern, auto... values) {
  char text[512];
  std::snprintf(text, sizeof text, pattern, values...);
  return text;
}

}  // namespace

int run_showcase(const CommonSettings& common, const SlowSettings& slow) {
  std::vector<std::string> executors = executor_names();
  const bool table = !common.json;
  refuse_all_slow(slow);  // before the banner, which would promise a run
  if (table) {
    print_wrapped(format(
        "wheeltimer-bench showcase: %s timers due over %s s, once per executor. %s%% of the "
        "callbacks block for %s ms, like a callback waiting on IO; the table shows how late the "
        "OTHER timers start (start minus deadline). Tick %s us, wheel %zu. "
        "`wheeltimer-bench --help` lists the other workloads.",
        with_commas(slow.timers).c_str(), readable(slow.spread_ms / 1000).c_str(),
        readable(slow.slow_fraction * 100).c_str(), readable(slow.slow_ms).c_str(),
        readable(common.tick_us).c_str(), std::bit_ceil(common.wheel)));
    std::printf("\n");
  }

  std::vector<SlowResult> results;
  std::size_t bad = 0;
  for (std::size_t k = 0; k < executors.size(); ++k) {
    CommonSettings settings = common;
    settings.executor = executors[k];
    ProgressLine progress(stdout, std::to_string(k + 1) + "/" + std::to_string(executors.size()) +
                                      " " + executors[k]);
    const SlowResult result =
        measure_slow(settings, slow, table ? progress.callback() : ProgressFn{});
    if (table) {
      progress.finish("done in " + ms(result.wall_s) + " s");
    } else {
      print_json_line(stdout, slow_report(settings, slow, result), 1);
    }
    bad += result.early + result.lost + result.repeated;
    results.push_back(result);
  }
  if (!table) return bad == 0 ? 0 : 1;

  std::printf("\n  %-36s %8s %8s %8s %6s %7s %8s\n", "executor", "p50 ms", "p99 ms", "max ms",
              "early", "wall s", "threads");
  for (const SlowResult& r : results) {
    std::printf("  %-36s %8.2f %8.2f %8.2f %6zu %7.2f %8zu\n", r.executor.c_str(), r.others.p50_ms,
                r.others.p99_ms, r.others.max_ms, r.early, r.wall_s, r.threads_seen);
  }
  std::printf(
      "  (lateness of the %s timers that do not block; early counts all; threads = threads\n"
      "   that ran callbacks)\n\n",
      with_commas(results.front().others.count).c_str());

  // The sentence quotes what was just measured, not what we hope.
  const double tick_ms = std::chrono::duration<double, std::milli>(tick_of(common)).count();
  const SlowResult& inline_run = results[0];
  const SlowResult& pool_run = results[1];
  std::string sentence = format(
      "Run inline, each %s ms callback holds up the ticking thread, so the other timers' p99 "
      "lateness was %s ms; CallerRunsPool runs callbacks on its own %zu threads and kept it at "
      "%s ms (%.1f ticks).",
      readable(slow.slow_ms).c_str(), ms(inline_run.others.p99_ms).c_str(), pool_threads(common),
      ms(pool_run.others.p99_ms).c_str(), pool_run.others.p99_ms / tick_ms);
  if (results.size() > 2) {
    const SlowResult& tbb_run = results[2];
    sentence += format(
        " TbbArenaExecutor ran callbacks on %zu thread%s here (oneTBB starts at most one worker "
        "per core, minus one, for all arenas together), so blocking callbacks %s: p99 %s ms.",
        tbb_run.threads_seen, tbb_run.threads_seen == 1 ? "" : "s",
        tbb_run.others.p99_ms > 2 * pool_run.others.p99_ms + tick_ms ? "queue up behind each other"
                                                                     : "fit in its threads",
        ms(tbb_run.others.p99_ms).c_str());
  }
  print_wrapped(sentence);
  if (bad != 0) std::printf("\nERROR: %zu tasks started early, never ran or ran twice.\n", bad);
  return bad == 0 ? 0 : 1;
}

}  // namespace wheeltimer_bench
