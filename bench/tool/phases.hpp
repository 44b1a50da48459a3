// run_phase: a timed burst of calls from several threads at once, as the schedule workload times
// schedule() and then cancel().
#pragma once

#include <cstddef>
#include <functional>

namespace wheeltimer_bench {

struct PhaseTiming {
  double ns_per_call = 0;  // mean over the threads of (a thread's time / its calls)
  double calls_per_s = 0;  // all threads together: calls / (first start to last end)
};

// Runs body(begin, end) on `threads` threads (1 .. count) over [0, count) split in contiguous
// shares, all released at once, and times each thread. What a body throws is rethrown here once
// every thread has been joined. If a thread cannot be started, the ones already started are let go
// without running the body and joined, and the failure is rethrown (std::system_error becomes a
// std::runtime_error naming --producers).
PhaseTiming run_phase(std::size_t threads, std::size_t count,
                      const std::function<void(std::size_t, std::size_t)>& body);

}  // namespace wheeltimer_bench
