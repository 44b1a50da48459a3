#include "phases.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <wheeltimer/clock.hpp>

namespace wheeltimer_bench {

using wheeltimer::Clock;

PhaseTiming run_phase(std::size_t threads, std::size_t count,
                      const std::function<void(std::size_t, std::size_t)>& body) {
  std::vector<Clock::time_point> started(threads), ended(threads);
  std::vector<std::exception_ptr> errors(threads);
  std::atomic<std::size_t> ready{0};
  std::atomic<bool> go{false}, abandon{false};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  try {
    for (std::size_t t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        const std::size_t begin = count * t / threads, end = count * (t + 1) / threads;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        if (abandon.load(std::memory_order_relaxed)) return;
        try {
          started[t] = Clock::now();
          body(begin, end);
          ended[t] = Clock::now();
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    }
  } catch (...) {  // std::system_error, or std::bad_alloc for the thread's own state
    abandon.store(true, std::memory_order_relaxed);
    go.store(true, std::memory_order_release);
    for (auto& worker : workers) worker.join();
    try {
      throw;
    } catch (const std::system_error& error) {
      throw std::runtime_error("--producers " + std::to_string(threads) +
                               ": could not start thread " + std::to_string(workers.size() + 1) +
                               ": " + error.what());
    }
  }
  while (ready.load() < threads) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (auto& worker : workers) worker.join();
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }

  PhaseTiming timing;
  for (std::size_t t = 0; t < threads; ++t) {
    const double calls = static_cast<double>(count * (t + 1) / threads - count * t / threads);
    const double ns = std::chrono::duration<double, std::nano>(ended[t] - started[t]).count();
    timing.ns_per_call += ns / calls / static_cast<double>(threads);
  }
  const auto wall = *std::max_element(ended.begin(), ended.end()) -
                    *std::min_element(started.begin(), started.end());
  timing.calls_per_s = static_cast<double>(count) / std::chrono::duration<double>(wall).count();
  return timing;
}

}  // namespace wheeltimer_bench
