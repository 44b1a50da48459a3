// The shared library as a program that loads it sees it. This test is not linked with the library:
// it loads it with dlopen(), as a plugin or a language binding would.
#include <dlfcn.h>

#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>
#include <wheeltimer/timer_future.hpp>

namespace {

class SharedLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Set by meson; nothing in this process has loaded the library yet.
    const char* path = std::getenv("WHEELTIMER_LIBRARY");
    ASSERT_NE(path, nullptr) << "WHEELTIMER_LIBRARY names the built library";
    library_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (library_ != nullptr) {
      EXPECT_EQ(dlclose(library_), 0) << dlerror();
    }
  }

  bool exports(const char* mangled_name) const { return dlsym(library_, mangled_name) != nullptr; }

  void* library_ = nullptr;
};

// The library's thread_locals use the initial-exec TLS model (see meson.build), which takes room
// in the static TLS block; glibc keeps a small reserve of it for libraries loaded later. A
// thread_local that outgrew that reserve would make dlopen() fail with "cannot allocate memory in
// static TLS block", and SetUp() with it.
TEST_F(SharedLibraryTest, LoadsLateWithDlopen) { SUCCEED(); }

// What the public headers declare is exported, and it is the real thing.
TEST_F(SharedLibraryTest, ExportsThePublicApi) {
  using ToString = std::string_view (*)(wheeltimer::TaskState) noexcept;
  const auto to_string =
      reinterpret_cast<ToString>(dlsym(library_, "_ZN10wheeltimer9to_stringENS_9TaskStateE"));
  ASSERT_NE(to_string, nullptr) << "wheeltimer::to_string(TaskState)";
  EXPECT_EQ(to_string(wheeltimer::TaskState::finished), "FINISHED");

  // The constructor carries libstdc++'s tag of the std::string ABI it was built with (config.hpp).
#if defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
  EXPECT_TRUE(exports("_ZN10wheeltimer16HashedWheelTimerC1B5cxx11ENS_12TimerOptionsE"))
      << "HashedWheelTimer::HashedWheelTimer[abi:cxx11](TimerOptions)";
#else
  EXPECT_TRUE(exports("_ZN10wheeltimer16HashedWheelTimerC1ENS_12TimerOptionsE"))
      << "HashedWheelTimer::HashedWheelTimer(TimerOptions)";
#endif
  // The exceptions' and the executors' type_info, so that a program catches Rejected and Stopped
  // and recognizes the library's executors as the library does.
  EXPECT_TRUE(exports("_ZTIN10wheeltimer8RejectedE")) << "typeinfo for Rejected";
  EXPECT_TRUE(exports("_ZTIN10wheeltimer7StoppedE")) << "typeinfo for Stopped";
  EXPECT_TRUE(exports("_ZTIN10wheeltimer8ExecutorE")) << "typeinfo for Executor";
  EXPECT_TRUE(exports("_ZTIN10wheeltimer14InlineExecutorE")) << "typeinfo for InlineExecutor";
}

// Everything else is hidden: the internals, the test hooks, and moodycamel's queue, whose
// template code must not stand in for a program's own copy of another version.
TEST_F(SharedLibraryTest, HidesTheInternals) {
  EXPECT_FALSE(exports("_ZN10wheeltimer6detail26fail_node_allocation_afterEi"))
      << "detail::fail_node_allocation_after(int), a fault-injection hook for tests";
  EXPECT_FALSE(exports("_ZN10wheeltimer6detail9WheelCore11schedule_atENS_4TaskENSt6chrono10time_"
                       "pointINS3_3_V212steady_clockENS3_8durationIlSt5ratioILl1ELl1000000000EEEE"
                       "EE"))
      << "detail::WheelCore::schedule_at";
  EXPECT_FALSE(exports("_ZN10wheeltimer6detail11ManualClock6createENSt6chrono10time_pointINS2_3_"
                       "V212steady_clockENS2_8durationIlSt5ratioILl1ELl1000000000EEEEEE"))
      << "detail::ManualClock::create, the tests' clock, is not in the library at all";
  EXPECT_FALSE(exports("_ZN10moodycamel15ConcurrentQueueIPN10wheeltimer6detail8TaskNodeENS_28Conc"
                       "urrentQueueDefaultTraitsEE28get_or_add_implicit_producerEv"))
      << "moodycamel::ConcurrentQueue<TaskNode*>::get_or_add_implicit_producer";
}

}  // namespace
