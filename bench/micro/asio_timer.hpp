// AsioTimer: the Boost.Asio (standalone asio) baseline, what a C++ user would pick instead.
//
// Design, chosen to match wheeltimer's shape (a timer service on its own thread, producers on
// others):
//  - one io_context, run by one thread of its own (kept alive by a work guard);
//  - every scheduled timer is its own heap-allocated asio::steady_timer with one async_wait; the
//    handle is that timer (unique_ptr), since asio cancels the wait when the timer is destroyed;
//  - producers call expires_at/async_wait/cancel directly on their own timer objects. Asio allows
//    that for distinct objects: the shared timer queue is guarded by the reactor's mutex.
// A cancel() from a producer thread makes asio deliver operation_aborted to the handler on the io
// thread, waking it; that is asio's design (every wait completes exactly once), and it is part of
// what a canceled timeout costs there.
//
// Threads: schedule(), schedule_at() and cancel() from any thread; handlers run on the io thread.
// Every handle must be destroyed before the AsioTimer.
#pragma once

#include <memory>
#include <system_error>
#include <thread>
#include <utility>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include <wheeltimer/clock.hpp>

namespace micro {

class AsioTimer {
 public:
  using Clock = wheeltimer::Clock;
  using Handle = std::unique_ptr<asio::steady_timer>;

  AsioTimer();
  ~AsioTimer();  // stops the io thread; pending waits are dropped without running
  AsioTimer(const AsioTimer&) = delete;
  AsioTimer& operator=(const AsioTimer&) = delete;

  template <class F>
  Handle schedule_at(F&& fn, Clock::time_point deadline) {
    auto timer = std::make_unique<asio::steady_timer>(io_, deadline);
    arm(*timer, std::forward<F>(fn));
    return timer;
  }
  template <class F>
  Handle schedule(F&& fn, Clock::duration delay) {
    auto timer = std::make_unique<asio::steady_timer>(io_, delay);  // expires_after(delay)
    arm(*timer, std::forward<F>(fn));
    return timer;
  }
  // True when a wait was pending (it now completes with operation_aborted and `fn` never runs).
  static bool cancel(const Handle& timer) { return timer->cancel() > 0; }

 private:
  template <class F>
  static void arm(asio::steady_timer& timer, F&& fn) {
    timer.async_wait([fn = std::forward<F>(fn)](const std::error_code& error) mutable {
      if (!error) fn();
    });
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace micro
