// Task construction (and destruction) for captures of 8, 32 and 128 bytes, with std::function
// holding the same lambdas as the relative row. wheeltimer::Task keeps up to 32 bytes inline;
// libstdc++'s std::function keeps 16, so the 32-byte capture is where they differ most.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <benchmark/benchmark.h>
#include <wheeltimer/task.hpp>

#include "registry.hpp"

namespace micro {
namespace {

template <std::size_t Bytes>
struct Payload {
  std::array<std::uint64_t, Bytes / 8> words{};
};

template <class Wrapper, std::size_t Bytes>
void bm_construct(benchmark::State& state) {
  Payload<Bytes> payload;
  for (auto _ : state) {
    benchmark::DoNotOptimize(payload);  // the capture is not a compile-time constant
    auto callable = [payload] { benchmark::DoNotOptimize(payload.words[0]); };
    static_assert(sizeof(callable) == Bytes);
    Wrapper task(std::move(callable));
    benchmark::DoNotOptimize(task);  // built for real; destroyed at the end of the iteration
  }
  state.SetItemsProcessed(state.iterations());
}

template <std::size_t Bytes>
void register_size() {
  const std::string prefix = "BM_TaskConstruct/capture_" + std::to_string(Bytes) + "B/";
  benchmark::RegisterBenchmark((prefix + "wheeltimer").c_str(),
                               bm_construct<wheeltimer::Task, Bytes>);
  benchmark::RegisterBenchmark((prefix + "std_function").c_str(),
                               bm_construct<std::function<void()>, Bytes>);
}

}  // namespace

void register_task_benchmarks() {
  register_size<8>();
  register_size<32>();
  register_size<128>();
}

}  // namespace micro
