// moodycamel's ConcurrentQueue, from where meson.build found it: the top of a dependency's include
// folder (WrapDB's wrap), its moodycamel/ folder (moodycamel's own CMake package), or Debian's
// <concurrentqueue/concurrentqueue.h>.
#pragma once

#if __has_include(<concurrentqueue.h>)
#include <concurrentqueue.h>
#elif __has_include(<moodycamel/concurrentqueue.h>)
#include <moodycamel/concurrentqueue.h>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif
