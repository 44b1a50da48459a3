// Delays for workloads: flag values (ms or s as doubles) as Clock durations, and reproducible
// random delays drawn before a measurement starts, so drawing them is not part of what is timed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <wheeltimer/clock.hpp>

namespace wheeltimer_bench {

inline wheeltimer::Clock::duration from_ms(double ms) {
  return std::chrono::round<wheeltimer::Clock::duration>(
      std::chrono::duration<double, std::milli>(ms));
}

inline wheeltimer::Clock::duration from_s(double s) {
  return std::chrono::round<wheeltimer::Clock::duration>(std::chrono::duration<double>(s));
}

// `count` delays uniform over [0, spread], the same for the same seed.
inline std::vector<wheeltimer::Clock::duration> uniform_delays(std::size_t count,
                                                               wheeltimer::Clock::duration spread,
                                                               std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<wheeltimer::Clock::rep> pick(0, spread.count());
  std::vector<wheeltimer::Clock::duration> delays(count);
  for (auto& delay : delays) delay = wheeltimer::Clock::duration(pick(random));
  return delays;
}

}  // namespace wheeltimer_bench
