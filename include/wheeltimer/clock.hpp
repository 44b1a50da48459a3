// The clock every wheeltimer deadline is measured on, and the saturating arithmetic that turns a
// caller's delay (any std::chrono::duration, any representation) into a deadline on it.
//
// Saturation is part of the contract: a delay too large to add to now() becomes
// Clock::time_point::max() ("never before stop()"), and a zero or negative delay becomes now()
// ("due now"). Nothing here overflows or wraps into the past. Pure functions; any thread.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <ratio>
#include <stdexcept>
#include <type_traits>

namespace wheeltimer {

using Clock = std::chrono::steady_clock;

// `now + delay`, saturated to [now, Clock::time_point::max()]. A fractional delay is rounded up to
// the clock's resolution, so the result is never earlier than the delay asked for. A NaN delay is
// std::invalid_argument.
template <class Rep, class Period>
Clock::time_point saturating_deadline(std::chrono::duration<Rep, Period> delay,
                                      Clock::time_point now = Clock::now()) {
  if constexpr (std::is_floating_point_v<Rep>) {
    if (std::isnan(delay.count())) throw std::invalid_argument("wheeltimer: delay is NaN");
  }
  if (delay <= delay.zero()) return now;
  // Before the clock's epoch (a time point made up, never a reading), any duration fits.
  const auto headroom = now.time_since_epoch() < Clock::duration::zero()
                            ? Clock::duration::max()
                            : Clock::time_point::max() - now;
  if constexpr (std::is_integral_v<Rep> && sizeof(Rep) <= sizeof(std::intmax_t) &&
                std::ratio_divide<Period, Clock::period>::den == 1) {
    // Whole nanoseconds (ns, us, ms, s, min, h...): exact in integers, and a few ns cheaper than
    // long double on every schedule(). (Wider integers, such as __int128 in GNU mode, take the
    // long double path: uintmax_t would cut them down.)
    constexpr auto kUnit = std::ratio_divide<Period, Clock::period>::num;  // ns per unit
    const auto fitting_units = headroom.count() / kUnit;  // the most that can be added to now
    // Both are >= 0 here, so unsigned comparison is exact for any integral Rep (char included).
    if (static_cast<std::uintmax_t>(delay.count()) > static_cast<std::uintmax_t>(fitting_units)) {
      return Clock::time_point::max();
    }
    return now + Clock::duration(static_cast<Clock::rep>(delay.count()) * kUnit);
  } else {
    // Compare in long double: exact for every int64 tick count, and immune to the overflow that
    // converting hours::max() to nanoseconds would cause.
    const std::chrono::duration<long double, Clock::period> wanted = delay;
    if (wanted.count() >= static_cast<long double>(headroom.count())) {
      return Clock::time_point::max();
    }
    return now + std::chrono::ceil<Clock::duration>(wanted);
  }
}

// `now + limit` for the wait_for family: duration::max() (or anything past the end of time)
// means "no limit".
inline Clock::time_point saturating_add(Clock::time_point now, Clock::duration limit) noexcept {
  if (limit <= Clock::duration::zero()) return now;
  // No limit, or one past the end of time. (Before the clock's epoch, a time point made up, never
  // a reading, max() - now would overflow, and any other limit fits.)
  const bool before_epoch = now.time_since_epoch() < Clock::duration::zero();
  if (limit == Clock::duration::max() ||
      (!before_epoch && limit >= Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + limit;
}

}  // namespace wheeltimer
