// Replays every input in tests/fuzz/corpus (the seed corpus) and tests/fuzz/regressions (inputs
// that once made the fuzzer fail: drop a crash-* or timeout-* file there) through the model
// checker, so they run in every build.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "timer_model.hpp"

namespace {

std::vector<std::filesystem::path> inputs() {
  std::vector<std::filesystem::path> files;
  for (const char* folder : {"corpus", "regressions"}) {
    const auto path = std::filesystem::path(FUZZ_INPUTS_DIR) / folder;
    if (!std::filesystem::is_directory(path)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      const bool hidden = entry.path().filename().string().starts_with('.');  // .keep
      if (entry.is_regular_file() && !hidden) files.push_back(entry.path());
    }
  }
  return files;
}

TEST(FuzzReplayTest, CorpusIsNotEmpty) { EXPECT_GE(inputs().size(), 10u); }

TEST(FuzzReplayTest, EveryStoredInputAgreesWithTheModel) {
  for (const auto& file : inputs()) {
    std::ifstream stream(file, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(stream)),
                                          std::istreambuf_iterator<char>());
    EXPECT_EQ(wheeltimer::fuzz::check_against_model(bytes.data(), bytes.size()), "")
        << file.filename();
  }
}

}  // namespace
