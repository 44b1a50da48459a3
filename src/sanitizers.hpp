// Which sanitizer this translation unit is built with: WHEELTIMER_ASAN (AddressSanitizer) or
// WHEELTIMER_TSAN (ThreadSanitizer), defined to 1 or not at all. GCC announces sanitizers through
// __SANITIZE_*__, Clang through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define WHEELTIMER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WHEELTIMER_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define WHEELTIMER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WHEELTIMER_TSAN 1
#endif
#endif
