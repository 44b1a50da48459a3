// The indicator's arithmetic over the wheel and the due queue, apart from WheelCore, so that a test
// can drive the two structures exactly as the indicator does (tests/wheel_range_test.cpp).
//
// Threads: whoever owns the wheel and the due queue (the indicator, or a test); no synchronisation.
#pragma once

#include <algorithm>
#include <cstdint>

#include <wheeltimer/clock.hpp>

#include "due_queue.hpp"
#include "wheel.hpp"

namespace wheeltimer::detail {

// tick + ticks, or the last tick before Wheel::kNever.
inline std::uint64_t saturating_tick_add(std::uint64_t tick, std::uint64_t ticks) noexcept {
  return tick > Wheel::kNever - 1 - ticks ? Wheel::kNever - 1 : tick + ticks;
}

// When the indicator has work next: `lookahead` ticks before the wheel's next event (the wheel
// runs that far ahead of now), or the earliest deadline in the due queue, whichever comes first.
inline Clock::time_point next_wake(const Wheel& wheel, DueQueue& due, std::uint64_t lookahead) {
  const std::uint64_t event = wheel.next_event();
  const Clock::time_point event_time =
      wheel.tick_time(event == Wheel::kNever ? event : event - std::min(event, lookahead));
  return std::min(event_time, due.earliest());
}

}  // namespace wheeltimer::detail
