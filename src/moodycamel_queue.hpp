// moodycamel's ConcurrentQueue, from where meson.build found it: Debian's folder (no dependency
// was found; meson.build says so with WHEELTIMER_CONCURRENTQUEUE_IN_ITS_FOLDER), or a dependency's
// include folder, which holds it at the top (WrapDB's wrap) or in moodycamel/ (moodycamel's own
// CMake package).
#pragma once

#if defined(WHEELTIMER_CONCURRENTQUEUE_IN_ITS_FOLDER)
#include <concurrentqueue/concurrentqueue.h>
#elif __has_include(<concurrentqueue.h>)
#include <concurrentqueue.h>
#elif __has_include(<moodycamel/concurrentqueue.h>)
#include <moodycamel/concurrentqueue.h>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif
