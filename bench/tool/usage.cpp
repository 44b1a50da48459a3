#include "usage.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>

namespace wheeltimer_bench {
namespace {

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
}

double cpu_seconds(clockid_t clock) {
  timespec cpu{};
  clock_gettime(clock, &cpu);
  return static_cast<double>(cpu.tv_sec) + cpu.tv_nsec / 1e9;
}

}  // namespace

Usage Usage::now() {
  Usage usage;
  usage.wall = wheeltimer::Clock::now();
  // The own thread's clock on both sides of the process's: a delta then takes the own thread's
  // time from inside the process's window only, so the other threads' share is never understated.
  usage.own_cpu_s = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  usage.cpu_s = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  usage.own_cpu_after_s = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  usage.user_s = seconds(ru.ru_utime);
  usage.sys_s = seconds(ru.ru_stime);
  usage.voluntary_switches = ru.ru_nvcsw;
  usage.involuntary_switches = ru.ru_nivcsw;
  rusage own{};
  getrusage(RUSAGE_THREAD, &own);
  usage.own_voluntary_switches = own.ru_nvcsw;
  return usage;
}

UsageDelta operator-(const Usage& end, const Usage& begin) {
  UsageDelta delta;
  delta.wall_s = std::chrono::duration<double>(end.wall - begin.wall).count();
  delta.cpu_s = end.cpu_s - begin.cpu_s;
  delta.own_cpu_s = end.own_cpu_s - begin.own_cpu_after_s;
  delta.user_s = end.user_s - begin.user_s;
  delta.sys_s = end.sys_s - begin.sys_s;
  delta.voluntary_switches = (end.voluntary_switches - begin.voluntary_switches) -
                             (end.own_voluntary_switches - begin.own_voluntary_switches);
  delta.involuntary_switches = end.involuntary_switches - begin.involuntary_switches;
  return delta;
}

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) {
    throw std::runtime_error("cannot read /proc/self/statm");
  }
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

double load_average() {
  std::ifstream loadavg("/proc/loadavg");
  double one_minute = 0;
  loadavg >> one_minute;
  return one_minute;
}

void trim_heap() {
  malloc_trim(0);
}

}  // namespace wheeltimer_bench
