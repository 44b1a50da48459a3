// Reading a CPU-time clock, for rows whose time is CPU time measured by hand (manual time): a
// thread's (pthread_getcpuclockid) or the whole process's (CLOCK_PROCESS_CPUTIME_ID).
#pragma once

#include <time.h>

#include <cstdint>

namespace micro {

inline std::int64_t cpu_ns(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

}  // namespace micro
