// A process that loads the library late, with dlopen() (a plugin, a language binding), can do so.
// The library's thread_locals use the initial-exec TLS model (see meson.build), which takes room
// in the static TLS block; glibc keeps a small reserve of it for libraries loaded later. A
// thread_local that outgrew that reserve would make dlopen() fail with "cannot allocate memory in
// static TLS block", and this test with it.
#include <dlfcn.h>

#include <cstdlib>

#include <gtest/gtest.h>

TEST(LateLoad, DlopenOfTheLibrarySucceeds) {
  // Set by meson; this test is not linked with the library, so nothing has loaded it yet.
  const char* path = std::getenv("WHEELTIMER_LIBRARY");
  ASSERT_NE(path, nullptr) << "WHEELTIMER_LIBRARY names the built library";
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  EXPECT_EQ(dlclose(library), 0) << dlerror();
}
