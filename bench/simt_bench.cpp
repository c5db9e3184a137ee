// The SIMT emulator's speed (docs/performance.md#simt): fiber switches and
// barriers per second, emulated thread-instructions (instrumented loads and
// stores) per second for the tiled GEMM and the warp softmax, and their
// slowdown against the same algorithm as a plain host loop.
//   build/bench/simt_bench --benchmark_min_time=0.5
#define MOACERT_SIMT_UNINSTRUMENTED 1  // this driver is host code
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "bench/simt_kernels.hpp"
#include "tests/simt/kernels.hpp"
#include "moacert/simt.h"

namespace {

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float((i * 7919) % 101) - 50.0f * scale;
  return v;
}

// Loads and stores the emulator checked in its last launch.
double accesses(const moacert::simt::Counters& c) {
  return double(c.global_loads + c.global_stores + c.shared_loads + c.shared_stores);
}

void BM_SimtGemm64(benchmark::State& state) {
  const int n = 64;
  const std::vector<float> a = ramp(n * n, 0.01f), b = ramp(n * n, 0.02f);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    c = simt_test::run_gemm(a, b, n);
    benchmark::DoNotOptimize(c.data());
  }
  const moacert::simt::Counters k = moacert::simt::last_launch_counters();
  state.counters["accesses/s"] =
      benchmark::Counter(accesses(k), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["switches/s"] = benchmark::Counter(double(k.threads * (k.barriers / k.blocks + 1)),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimtGemm64)->Unit(benchmark::kMillisecond);

// The same 16x16-tiled loop nest, on the host.
void BM_HostGemm64(benchmark::State& state) {
  const int n = 64, t = 16;
  const std::vector<float> a = ramp(n * n, 0.01f), b = ramp(n * n, 0.02f);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    for (int i0 = 0; i0 < n; i0 += t)
      for (int j0 = 0; j0 < n; j0 += t)
        for (int i = i0; i < i0 + t; ++i)
          for (int j = j0; j < j0 + t; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
            c[i * n + j] = acc;
          }
    benchmark::DoNotOptimize(c.data());
  }
}
BENCHMARK(BM_HostGemm64)->Unit(benchmark::kMicrosecond);

void BM_SimtSoftmax(benchmark::State& state) {
  const int rows = 64, len = 256;
  const std::vector<float> x = ramp(rows * len, 0.1f);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    y = simt_test::run_softmax(x, rows, len);
    benchmark::DoNotOptimize(y.data());
  }
  const moacert::simt::Counters k = moacert::simt::last_launch_counters();
  state.counters["accesses/s"] =
      benchmark::Counter(accesses(k), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["warp_ops/s"] =
      benchmark::Counter(double(k.warp_ops), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimtSoftmax)->Unit(benchmark::kMillisecond);

void BM_HostSoftmax(benchmark::State& state) {
  const int rows = 64, len = 256;
  const std::vector<float> x = ramp(rows * len, 0.1f);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    for (int r = 0; r < rows; ++r) {
      float m = -INFINITY, s = 0.0f;
      for (int j = 0; j < len; ++j) m = std::fmax(m, x[r * len + j]);
      for (int j = 0; j < len; ++j) s += std::exp(x[r * len + j] - m);
      for (int j = 0; j < len; ++j) y[r * len + j] = std::exp(x[r * len + j] - m) / s;
    }
    benchmark::DoNotOptimize(y.data());
  }
}
BENCHMARK(BM_HostSoftmax)->Unit(benchmark::kMicrosecond);

// 256 threads, 100 barriers: each barrier switches every thread once.
void BM_SimtBarriers(benchmark::State& state) {
  const int threads = 256, rounds = 100;
  for (auto _ : state) simt_bench::barriers(threads, rounds);
  state.counters["barriers/s"] =
      benchmark::Counter(double(rounds), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["switches/s"] = benchmark::Counter(double(threads) * (rounds + 1),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SimtBarriers)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
