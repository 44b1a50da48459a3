// What the process has used: wall time, CPU time (all threads: the timer's indicator, executor
// threads and the tool's own), context switches, and resident memory. Take a Usage before and
// after the part to measure and subtract. Linux (getrusage, /proc/self/statm, malloc_trim).
#pragma once

#include <cstddef>

#include <wheeltimer/clock.hpp>

namespace wheeltimer_bench {

struct UsageDelta {
  double wall_s = 0;
  double cpu_s = 0;      // CLOCK_PROCESS_CPUTIME_ID: user + system, all threads
  double own_cpu_s = 0;  // CLOCK_THREAD_CPUTIME_ID of the thread that took the Usages, within
                         // the window of cpu_s (so cpu_s - own_cpu_s never understates the rest)
  double user_s = 0;     // getrusage
  double sys_s = 0;
  // A thread blocked (slept, waited): roughly, wake-ups. Every thread's but the one that took the
  // Usages (the tool's own, whose sleep through the window would count one).
  long voluntary_switches = 0;
  long involuntary_switches = 0;  // a thread was preempted (every thread's)
};

struct Usage {
  wheeltimer::Clock::time_point wall;
  double cpu_s = 0;
  double own_cpu_s = 0;        // the calling thread's, read just before cpu_s
  double own_cpu_after_s = 0;  // and just after
  double user_s = 0;
  double sys_s = 0;
  long voluntary_switches = 0;
  long own_voluntary_switches = 0;  // the calling thread's
  long involuntary_switches = 0;

  static Usage now();
};

UsageDelta operator-(const Usage& end, const Usage& begin);

// Resident set size of the process in bytes, from /proc/self/statm.
std::size_t resident_bytes();

// The 1-minute load average (/proc/loadavg): how busy the machine was, to judge the noise.
double load_average();

// Returns the allocator's free memory to the OS (malloc_trim(0)), so that resident_bytes()
// counts what is in use rather than what malloc happens to keep cached.
void trim_heap();

}  // namespace wheeltimer_bench
