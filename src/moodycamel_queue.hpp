// moodycamel's ConcurrentQueue, from where meson.build found it: the top of a dependency's include
// folder (WHEELTIMER_CONCURRENTQUEUE_AT_TOP, as WrapDB's wrap provides it), or Debian's folder.
#pragma once

#if defined(WHEELTIMER_CONCURRENTQUEUE_AT_TOP)
#include <concurrentqueue.h>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif
