// The soak's output: the progress line while it runs, and the closing table and JSON line.
#include "soak.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace soak {

namespace {

std::string json_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void Soak::progress(Clock::time_point start, bool tty, bool final_line) {
  const Clock::time_point now = Clock::now();
  const double interval = std::chrono::duration<double>(now - last_progress_).count();
  const std::uint64_t accepted = ops_.accepted.load(), cancels = ops_.cancel_calls.load();
  const std::uint64_t in_flight = accepted - ops_.settled.load();
  std::fprintf(stderr,
               "%s[%6.1f s] schedule %8.0f/s  cancel %7.0f/s  stops %5llu  adopts %8llu  in flight "
               "%6llu  violations %llu%s",
               tty ? "\r" : "", std::chrono::duration<double>(now - start).count(),
               (accepted - last_progress_accepted_) / interval,
               (cancels - last_progress_cancels_) / interval,
               static_cast<unsigned long long>(ops_.stops.load()),
               static_cast<unsigned long long>(ops_.adopts.load()),
               static_cast<unsigned long long>(in_flight),
               static_cast<unsigned long long>(violations_.count()),
               tty && !final_line ? "" : "\n");
  std::fflush(stderr);
  last_progress_ = now;
  last_progress_accepted_ = accepted;
  last_progress_cancels_ = cancels;
}

void Soak::report(Clock::duration elapsed, std::uint64_t violations) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const Outcomes& o = outcomes_;
  struct Row {
    const char* key;
    const char* label;
    std::uint64_t value;
    bool rate;
  };
  const auto u = [](const std::atomic<std::uint64_t>& a) { return a.load(); };
  const std::vector<Row> rows = {
      {"schedule_accepted", "schedule() accepted", u(ops_.accepted), true},
      {"schedule_stopped", "schedule() refused: Stopped", u(ops_.refused_stopped), true},
      {"schedule_rejected", "schedule() refused: Rejected", u(ops_.refused_rejected), true},
      {"children", "  of them scheduled from inside a task", u(ops_.children), true},
      {"cancel_calls", "cancel() calls", u(ops_.cancel_calls), true},
      {"cancel_wins", "cancel() returned true", u(ops_.cancel_wins), true},
      {"caller_runs", "CallerRunsPool ran a task on the caller", u(ops_.caller_runs), true},
      {"stops", "stop() (timer rotations)", u(ops_.stops), true},
      {"handed_back", "tasks handed back by stop()", u(ops_.handed_back), true},
      {"adopts", "adopt() accepted", u(ops_.adopts), true},
      {"adopt_refused", "adopt() refused (Stopped/Rejected)", u(ops_.adopt_refused), true},
      {"pending_runs", "PendingTask::run()", u(ops_.pending_runs), true},
      {"drops", "PendingTask dropped", u(ops_.drops), true},
      {"finished", "finished on its first timer", o.finished, false},
      {"canceled", "canceled (a cancel() won)", o.canceled, false},
      {"handed_back_adopted", "handed back -> adopted, then ran", o.adopted_ran, false},
      {"handed_back_run", "handed back -> PendingTask::run()", o.pending_ran, false},
      {"handed_back_dropped", "handed back -> dropped", o.dropped, false},
      {"handed_back_refused", "handed back -> adopt() refused", o.refused, false},
      {"exceptions_thrown", "exceptions thrown by tasks", o.threw, false},
      {"exceptions_on_timer", "  of them by tasks a timer ran", o.threw_on_timer, false},
      {"on_error_calls", "on_error calls", u(ops_.on_error_calls), false},
      {"ran_twice", "ran twice", u(ops_.ran_twice), false},
      {"early", "started early", o.early, false},
      {"lost", "lost", o.lost, false},
      {"violations", "invariant violations", violations, false},
  };
  const double mean_late = o.late_count ? o.late_sum_ms / static_cast<double>(o.late_count) : 0.0;
  const std::vector<std::string> first = violations_.first();

  std::FILE* table = options_.json ? stderr : stdout;
  std::fprintf(table, "\nwheeltimer-soak: %.1f s, seed %llu, %u producers, %u cancellers\n",
               seconds, static_cast<unsigned long long>(options_.seed), options_.producers,
               options_.cancellers);
  std::fprintf(table, "timers: %s | %s | %s (one of each live, replaced every %lld ms)\n",
               "none/InlineExecutor", executor_names_[1].c_str(), executor_names_[2].c_str(),
               static_cast<long long>(std::chrono::milliseconds(kRotatePeriod).count()));
  std::fprintf(table, "%-40s %14s %12s\n", "", "total", "per second");
  for (const Row& row : rows) {
    if (row.rate) {
      std::fprintf(table, "%-40s %14llu %12.1f\n", row.label,
                   static_cast<unsigned long long>(row.value),
                   static_cast<double>(row.value) / seconds);
    } else {
      std::fprintf(table, "%-40s %14llu\n", row.label, static_cast<unsigned long long>(row.value));
    }
  }
  std::fprintf(table, "%-40s %14.3f ms\n", "max lateness (ran on a timer)", ms(o.max_late));
  std::fprintf(table, "%-40s %14.3f ms\n", "mean lateness", mean_late);
  for (const std::string& v : first) std::fprintf(table, "  violation: %s\n", v.c_str());
  std::fprintf(table, "result: %s\n", violations == 0 ? "PASS" : "FAIL");
  std::fflush(table);

  if (options_.json) {
    std::string line = "{\"ok\":" + std::string(violations == 0 ? "true" : "false") +
                       ",\"seed\":" + std::to_string(options_.seed) +
                       ",\"seconds\":" + std::to_string(seconds) +
                       ",\"producers\":" + std::to_string(options_.producers) +
                       ",\"cancellers\":" + std::to_string(options_.cancellers);
    for (const Row& row : rows)
      line += ",\"" + std::string(row.key) + "\":" + std::to_string(row.value);
    line += ",\"max_lateness_ms\":" + std::to_string(ms(o.max_late)) +
            ",\"mean_lateness_ms\":" + std::to_string(mean_late) + ",\"first_violations\":[";
    for (std::size_t i = 0; i < first.size(); ++i)
      line += (i ? ",\"" : "\"") + json_escape(first[i]) + "\"";
    line += "]}";
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
}

}  // namespace soak
