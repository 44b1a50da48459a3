#include "executor_reference.hpp"

#include <new>
#include <thread>
#include <utility>

#include "executor_thread.hpp"

namespace wheeltimer::detail {
namespace {

// Keeps `reference` for good: it is never destroyed, so what it points at never is either.
void keep_forever(std::shared_ptr<Executor> reference) noexcept {
  union Forever {
    std::shared_ptr<Executor> kept;
    ~Forever() {}  // leaves `kept` alone
  };
  Forever forever{std::move(reference)};
}

}  // namespace

void ExecutorReference::release() noexcept {
  std::shared_ptr<Executor> executor = std::move(executor_);
  // Any of the library's executors' threads, not only this one's: oneTBB workers serve several
  // arenas, and a worker running arena B's job must not wait there for arena A's queued work.
  if (!executor || ExecutorThreadMark::current() == nullptr) return;
  // The thread's closure holds the reference through a pointer: a closure holding it by value
  // would drop it right here if the thread failed to start.
  auto* boxed = new (std::nothrow) std::shared_ptr<Executor>(std::move(executor));
  if (boxed != nullptr) {
    try {
      std::thread([boxed] { delete boxed; }).detach();
      return;
    } catch (...) {
      executor = std::move(*boxed);
      delete boxed;
    }
  }
  keep_forever(std::move(executor));
}

}  // namespace wheeltimer::detail
