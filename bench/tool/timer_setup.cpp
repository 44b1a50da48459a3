#include "timer_setup.hpp"

#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>

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
    return {std::make_shared<wheeltimer::TbbArenaExecutor>(static_cast<int>(common.threads)),
            "TbbArenaExecutor(" + std::to_string(common.threads) + ")"};
  }
#endif
  throw std::invalid_argument("unknown executor '" + common.executor + "'");
}

wheeltimer::Clock::duration tick_of(const CommonSettings& common) {
  return std::chrono::ceil<wheeltimer::Clock::duration>(
      std::chrono::duration<double, std::micro>(common.tick_us));
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
