// The timers the suite compares, behind one shape so every benchmark is written once:
//   Kind::Handle, kind.schedule(fn, delay), kind.schedule_at(fn, deadline), kind.cancel(handle),
//   handle_owns_timer<Kind>, and kind_name<Kind> for the row names ("BM_Schedule/wheeltimer",
//   "BM_Schedule/heap", "BM_Schedule/asio").
// for_each_kind() visits them in that order; asio only when <asio.hpp> was found at build time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <wheeltimer/wheeltimer.hpp>

#include "heap_timer.hpp"
#if WHEELTIMER_MICRO_ASIO
#include "asio_timer.hpp"
#endif

namespace micro {

// wheeltimer as the targets fix it: 1 ms tick, wheel of 512, tasks run inline on the
// indicator unless an executor is given.
class WheelKind {
 public:
  using Handle = wheeltimer::TimerFuture;

  explicit WheelKind(std::shared_ptr<wheeltimer::Executor> executor = nullptr)
      : timer_(options(std::move(executor))) {}

  template <class F>
  Handle schedule_at(F&& fn, Clock::time_point deadline) {
    return timer_.schedule_at(std::forward<F>(fn), deadline);
  }
  template <class F>
  Handle schedule(F&& fn, Clock::duration delay) {
    return timer_.schedule(std::forward<F>(fn), delay);
  }
  static bool cancel(Handle& handle) noexcept { return handle.cancel(); }
  std::vector<wheeltimer::PendingTask> stop() { return timer_.stop(); }

 private:
  static wheeltimer::TimerOptions options(std::shared_ptr<wheeltimer::Executor> executor) {
    wheeltimer::TimerOptions options;
    options.tick = std::chrono::milliseconds(1);
    options.wheel_size = 512;
    options.executor = std::move(executor);
    return options;
  }

  wheeltimer::HashedWheelTimer timer_;
};

template <class Kind>
inline constexpr const char* kind_name = nullptr;
template <>
inline constexpr const char* kind_name<WheelKind> = "wheeltimer";
template <>
inline constexpr const char* kind_name<HeapTimer> = "heap";
#if WHEELTIMER_MICRO_ASIO
template <>
inline constexpr const char* kind_name<AsioTimer> = "asio";
#endif

// Whether dropping a handle cancels its timer, so a benchmark must keep it: true for asio, where
// the handle is the steady_timer; wheeltimer's and the heap's timers own their tasks.
template <class Kind>
inline constexpr bool handle_owns_timer = false;
#if WHEELTIMER_MICRO_ASIO
template <>
inline constexpr bool handle_owns_timer<AsioTimer> = true;
#endif

// Calls visit.template operator()<Kind>() for every timer kind, wheeltimer first.
template <class Visit>
void for_each_kind(Visit&& visit) {
  visit.template operator()<WheelKind>();
  visit.template operator()<HeapTimer>();
#if WHEELTIMER_MICRO_ASIO
  visit.template operator()<AsioTimer>();
#endif
}

// "BM_Schedule" + "/wheeltimer"
template <class Kind>
std::string row_name(const char* operation) {
  return std::string(operation) + "/" + kind_name<Kind>;
}

}  // namespace micro
