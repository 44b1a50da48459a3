// libFuzzer entry point: any disagreement with the model is a crash, so libFuzzer keeps the input.
#include <cstdio>
#include <cstdlib>

#include "timer_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = wheeltimer::fuzz::check_against_model(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "model disagreement: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
