#include "timer_setup.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

#include "report.hpp"

#if WHEELTIMER_HAS_TBB
#include <oneapi/tbb/global_control.h>
#endif

namespace wheeltimer_bench {

std::vector<std::string> executor_names() {
#if WHEELTIMER_HAS_TBB
  return {"inline", "pool", "tbb"};
#else
  return {"inline", "pool"};
#endif
}

std::size_t pool_threads(const CommonSettings& common) {
  return common.threads == 0 ? 8 : common.threads;
}

ExecutorChoice make_executor(const CommonSettings& common) {
  if (common.executor == "inline") return {nullptr, "inline (indicator thread)"};
  if (common.executor == "pool") {
    const std::size_t threads = pool_threads(common);
    try {
      return {std::make_shared<wheeltimer::CallerRunsPool>(threads, common.queue),
              "CallerRunsPool(" + std::to_string(threads) + ", queue " +
                  std::to_string(common.queue) + ")"};
    } catch (const std::system_error& error) {
      throw std::runtime_error("--threads " + std::to_string(threads) +
                               ": could not start the pool's threads: " + error.what());
    }
  }
#if WHEELTIMER_HAS_TBB
  if (common.executor == "tbb") {
    if (common.threads == 0) {
      return {std::make_shared<wheeltimer::TbbArenaExecutor>(), "TbbArenaExecutor(automatic)"};
    }
    // oneTBB starts at most one worker fewer than its parallelism limit (the cores) for all
    // arenas together, and at least one, whatever an arena asks for: the label says so rather
    // than promise more.
    const auto parallelism =
        tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
    const auto workers = std::max<std::size_t>(1, parallelism - 1);
    std::string label = "TbbArenaExecutor(" + std::to_string(common.threads) + ")";
    if (common.threads > workers) {
      label += ", at most " + std::to_string(workers) + " worker" + (workers == 1 ? "" : "s");
    }
    return {std::make_shared<wheeltimer::TbbArenaExecutor>(static_cast<int>(common.threads)),
            label};
  }
#endif
  throw std::invalid_argument("unknown executor '" + common.executor + "'");
}

wheeltimer::Clock::duration tick_of(const CommonSettings& common) {
  return std::chrono::ceil<wheeltimer::Clock::duration>(
      std::chrono::duration<double, std::micro>(common.tick_us));
}

std::chrono::duration<double> intake_time(const CommonSettings& common, std::size_t timers) {
  const std::chrono::duration<double> tick = tick_of(common);
  const auto blocks = static_cast<double>(timers / 4'096 + 1);
  return std::min(std::chrono::duration<double>(0.3) + 2.0 * tick * blocks,
                  std::chrono::duration<double>(10));
}

wheeltimer::Clock::duration rotation_of(const CommonSettings& common,
                                        wheeltimer::Clock::duration base,
                                        const std::string& base_flag) {
  using wheeltimer::Clock;
  const auto tick = tick_of(common);
  const auto slots = static_cast<Clock::rep>(std::bit_ceil(common.wheel));
  const std::string flags =
      "--tick-us " + shortest(common.tick_us) + " and --wheel " + std::to_string(common.wheel);
  if (tick.count() > Clock::duration::max().count() / slots) {
    throw std::invalid_argument(flags + ": a rotation of the wheel would not fit in 64-bit "
                                        "nanoseconds");
  }
  if (tick * slots > Clock::duration::max() - base) {
    throw std::invalid_argument(base_flag + " with " + flags +
                                ": the delays would not fit in 64-bit nanoseconds");
  }
  return tick * slots;
}

wheeltimer::TimerOptions timer_options(const CommonSettings& common,
                                       std::shared_ptr<wheeltimer::Executor> executor) {
  wheeltimer::TimerOptions options;
  options.tick = tick_of(common);
  options.wheel_size = common.wheel;
  options.executor = std::move(executor);
  options.thread_name = "wt-bench";
  return options;
}

}  // namespace wheeltimer_bench
