// wheeltimer-bench: run with no arguments for a short demo that fires timers through each of the
// three executors and hands unstarted timers from one timer to another with stop() and adopt().
// It prints how late the timers ran (start minus deadline) and checks that none ran early.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

namespace {

using namespace std::chrono_literals;
using wheeltimer::Clock;

struct DemoResult {
  std::size_t fired = 0;
  std::size_t early = 0;
  std::vector<double> lateness_ms;  // sorted
  double wall_seconds = 0;
};

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto index = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1));
  return sorted[index];
}

// Schedules `count` timers due uniformly over `spread`, waits for all of them, and measures.
DemoResult fire_timers(std::shared_ptr<wheeltimer::Executor> executor, std::size_t count,
                       Clock::duration spread) {
  wheeltimer::TimerOptions options;  // defaults: 1 ms tick, 512 slots
  options.executor = std::move(executor);
  wheeltimer::HashedWheelTimer timer(options);
  std::vector<Clock::duration> lateness(count);
  std::vector<wheeltimer::TimerFuture> futures;
  futures.reserve(count);
  std::mt19937_64 random(42);
  std::uniform_int_distribution<Clock::rep> offset(0, spread.count());

  const auto begin = Clock::now();
  for (std::size_t i = 0; i < count; ++i) {
    const auto deadline = begin + Clock::duration(offset(random));
    futures.push_back(timer.schedule_at(
        [&lateness, i, deadline] { lateness[i] = Clock::now() - deadline; }, deadline));
  }
  for (const auto& future : futures) future.wait();
  DemoResult result;
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  for (const auto& late : lateness) {
    ++result.fired;
    if (late < Clock::duration::zero()) ++result.early;
    result.lateness_ms.push_back(std::chrono::duration<double, std::milli>(late).count());
  }
  std::sort(result.lateness_ms.begin(), result.lateness_ms.end());
  return result;
}

void print_row(const char* name, const DemoResult& r) {
  std::printf("  %-22s %8zu %6zu %10.3f %10.3f %10.3f %8.2f\n", name, r.fired, r.early,
              percentile(r.lateness_ms, 50), percentile(r.lateness_ms, 99),
              r.lateness_ms.empty() ? 0.0 : r.lateness_ms.back(), r.wall_seconds);
}

// stop() hands back every timer that has not started; adopt() keeps deadline and future.
void handoff_demo() {
  constexpr int kTimers = 1000;
  std::atomic<int> ran{0};
  std::vector<wheeltimer::TimerFuture> futures;
  auto old_timer = std::make_unique<wheeltimer::HashedWheelTimer>();
  for (int i = 0; i < kTimers; ++i) {
    futures.push_back(old_timer->schedule([&ran] { ran.fetch_add(1); }, 200ms + i * 100us));
  }
  const auto handed_back = old_timer->stop();
  old_timer.reset();

  wheeltimer::HashedWheelTimer new_timer;
  std::size_t same_future = 0;
  for (auto& task : const_cast<std::vector<wheeltimer::PendingTask>&>(handed_back)) {
    const auto before = task.future();
    if (new_timer.adopt(std::move(task)) == before) ++same_future;
  }
  for (const auto& future : futures) future.wait();
  std::printf("\nstop() handed back %zu of %d unstarted timers; adopt() kept %zu futures; "
              "%d ran on the new timer, 0 lost.\n",
              handed_back.size(), kTimers, same_future, ran.load());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s\n  (no arguments: a short demo of the three executors)\n",
                 argv[0]);
    return 2;
  }
  constexpr std::size_t kTimers = 20000;
  constexpr auto kSpread = 1s;
  std::printf("wheeltimer demo: %zu timers due uniformly over %lld ms, tick 1 ms, wheel 512\n\n",
              kTimers, static_cast<long long>(std::chrono::milliseconds(kSpread).count()));
  std::printf("  %-22s %8s %6s %10s %10s %10s %8s\n", "executor", "fired", "early", "p50 ms",
              "p99 ms", "max ms", "wall s");

  struct Choice {
    const char* name;
    std::shared_ptr<wheeltimer::Executor> executor;
  };
  std::vector<Choice> choices = {
      {"inline (indicator)", nullptr},
      {"CallerRunsPool(4)", std::make_shared<wheeltimer::CallerRunsPool>(4, 4096)},
  };
#if WHEELTIMER_HAS_TBB
  choices.push_back({"TbbArenaExecutor", std::make_shared<wheeltimer::TbbArenaExecutor>()});
#endif
  std::size_t early = 0;
  for (auto& choice : choices) {
    const DemoResult result = fire_timers(choice.executor, kTimers, kSpread);
    print_row(choice.name, result);
    early += result.early;
  }
  handoff_demo();
  std::printf("\nLateness is start minus deadline; a timer fires on the first 1 ms tick at or "
              "after its deadline.\n");
  return early == 0 ? 0 : 1;
}
