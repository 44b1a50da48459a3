// moodycamel's ConcurrentQueue, from where meson.build found it: the top of a dependency's include
// folder (as WrapDB's wrap provides it), or Debian's <concurrentqueue/concurrentqueue.h>.
#pragma once

#if __has_include(<concurrentqueue.h>)
#include <concurrentqueue.h>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif
