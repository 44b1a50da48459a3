// ZeroedArray: zero-filled and writable to its last element; under AddressSanitizer, bounded like
// a malloc'ed block even where it is mapped: an index past its end is reported.
#include <cstddef>
#include <cstdint>
#include <utility>

#include <gtest/gtest.h>

#include "sanitizers.hpp"
#include "zeroed_array.hpp"

#if defined(WHEELTIMER_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace wheeltimer::detail {
namespace {

// Sizes on both sides of where arrays are mapped instead of calloc'ed (64 KiB), one of them not
// a whole number of pages.
constexpr std::size_t kCounts[] = {1, 1000, 8192, 20'000, std::size_t{1} << 20};

TEST(ZeroedArrayTest, EveryElementStartsZeroAndTakesAWrite) {
  for (const std::size_t count : kCounts) {
    ZeroedArray<std::uint64_t> array(count);
    ASSERT_EQ(array.size(), count);
    const std::size_t indices[] = {0, count / 2, count - 1};
    for (const std::size_t index : indices) EXPECT_EQ(array[index], 0u) << count;
    for (const std::size_t index : indices) array[index] = index + 1;
    for (const std::size_t index : indices) EXPECT_EQ(array[index], index + 1) << count;
  }
}

TEST(ZeroedArrayTest, AMovedArrayKeepsItsElements) {
  ZeroedArray<std::uint64_t> array(20'000);
  array[19'999] = 7;
  ZeroedArray<std::uint64_t> moved(std::move(array));
  EXPECT_EQ(moved.size(), 20'000u);
  EXPECT_EQ(moved[19'999], 7u);
}

#if defined(WHEELTIMER_ASAN)
TEST(ZeroedArrayTest, UnderAddressSanitizerWhatFollowsAMappedArrayIsPoisoned) {
  for (const std::size_t count : {std::size_t{20'000}, std::size_t{16'384}}) {  // 16,384: 128 KiB
    ZeroedArray<std::uint64_t> array(count);
    EXPECT_FALSE(__asan_address_is_poisoned(array.data() + count - 1)) << count;
    EXPECT_TRUE(__asan_address_is_poisoned(array.data() + count)) << count;
  }
}

TEST(ZeroedArrayDeathTest, UnderAddressSanitizerWritingPastAMappedArrayIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ZeroedArray<std::uint64_t> array(16'384);
  volatile std::uint64_t* const data = array.data();
  EXPECT_DEATH(data[array.size()] = 1, "AddressSanitizer");
}
#endif

}  // namespace
}  // namespace wheeltimer::detail
