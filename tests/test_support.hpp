// Helpers shared by the test files: the one place timing tolerances live.
//
// This suite runs on a shared, noisy 2-core machine (and under sanitizers that slow everything
// 5-20x). "Never early" is asserted exactly; "not too late" only against kLateBound, which is
// generous on purpose. Nothing here sleeps to wait for an event that can be waited on.
#pragma once

#include <chrono>

#include <wheeltimer/wheeltimer.hpp>

namespace wheeltimer::testing {

using namespace std::chrono_literals;

// How late a task may start before a test calls it a failure: far beyond any tick, so only a hang
// or a lost wake-up trips it.
inline constexpr auto kLateBound = std::chrono::seconds(10);

// A wait limit for events that must happen (a hung test fails instead of blocking CI).
inline constexpr auto kMustHappen = std::chrono::seconds(30);

}  // namespace wheeltimer::testing
