// Waiting until a timer has taken in everything scheduled before: a marker task, whose running
// proves it, instead of a sleep that a loaded machine can outlast. Used by the cancel, memory,
// stop() and re-arm rows.
//
// With kMarkerDelay, the marker is due beyond wheeltimer's lookahead (64 ms), so it queues behind
// the calling thread's far-off timers in the same inbound lane, first-in-first-out for one
// producer, and runs only once all of them are in the wheel. That holds once the indicator has
// run its first round: until then every task counts as due soon. So a benchmark that relies on it
// first runs a marker due now on the fresh timer. The heap timer and Asio take a timer in within
// the schedule() call itself, so for them the marker only costs its wait.
#pragma once

#include <chrono>
#include <future>
#include <memory>

#include "timer_kinds.hpp"

namespace micro {

inline constexpr auto kMarkerDelay = std::chrono::milliseconds(100);

// Schedules a task `delay` out and waits for it to run; false if it has not within 10 s.
template <class Kind>
bool run_marker(Kind& timer, Clock::duration delay) {
  auto ran = std::make_shared<std::promise<void>>();
  std::future<void> done = ran->get_future();
  auto handle = timer.schedule([ran] { ran->set_value(); }, delay);
  if (done.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return true;
  timer.cancel(handle);  // not left to run later, into a later run's timed part
  return false;
}

}  // namespace micro
