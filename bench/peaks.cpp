// The machine's own peaks, measured with the thread count of the run:
// an f32 FMA-throughput loop (Highway, runtime dispatch: the same best
// target the kernels use) and streaming read and copy loops over buffers far
// larger than the last-level cache.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/peaks.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <omp.h>

#include <chrono>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace moacert::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kChains independent FMA chains hide the FMA latency (4 cycles x 2 pipes
// needs 8); returns the FMAs issued per thread. The result feeds `sink` so
// the loop cannot be removed.
constexpr int kChains = 12;

double FmaLoop(std::int64_t iters, int threads, float* sink) {
  const hn::ScalableTag<float> df;
  const auto a = hn::Set(df, 0.999999f), b = hn::Set(df, 1e-7f);
  double lanes = double(hn::Lanes(df));
#pragma omp parallel num_threads(threads)
  {
    hn::Vec<decltype(df)> acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = hn::Set(df, float(c + omp_get_thread_num()));
    for (std::int64_t i = 0; i < iters; ++i) {
      for (int c = 0; c < kChains; ++c) acc[c] = hn::MulAdd(acc[c], a, b);
    }
    auto total = acc[0];
    for (int c = 1; c < kChains; ++c) total = hn::Add(total, acc[c]);
    sink[omp_get_thread_num()] = hn::GetLane(hn::SumOfLanes(df, total));
  }
  return double(iters) * kChains * lanes;
}

// Sums n floats, each thread its contiguous share read as two interleaved
// streams with software prefetch 1 KiB ahead: on the 2-vCPU EPYC VM this
// reads 10-25% faster than one plain stream (4 accumulators: 40-44 GB/s;
// this form: 50 GB/s, same minute), so that a kernel reading two streams
// (decode's K and V) is measured against what the machine can do, not
// against a naive loop. Returns the sum.
float ReadLoop(const float* data, std::size_t n, int threads) {
  const hn::ScalableTag<float> df;
  const std::size_t L = hn::Lanes(df);
  constexpr std::size_t kAhead = 1024 / sizeof(float);
  float result = 0;
#pragma omp parallel num_threads(threads) reduction(+ : result)
  {
    const std::size_t t = std::size_t(omp_get_thread_num()), T = std::size_t(omp_get_num_threads());
    const std::size_t half = n / T / (8 * L) * (4 * L);  // each stream's length
    const float* p0 = data + t * 2 * half;
    const float* p1 = p0 + half;
    auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
    auto b0 = hn::Zero(df), b1 = hn::Zero(df), b2 = hn::Zero(df), b3 = hn::Zero(df);
    for (std::size_t i = 0; i < half; i += 4 * L) {
      hwy::Prefetch(p0 + i + kAhead);  // a hint: past the end it never faults
      hwy::Prefetch(p1 + i + kAhead);
      a0 = hn::Add(a0, hn::Load(df, p0 + i));
      a1 = hn::Add(a1, hn::Load(df, p0 + i + L));
      a2 = hn::Add(a2, hn::Load(df, p0 + i + 2 * L));
      a3 = hn::Add(a3, hn::Load(df, p0 + i + 3 * L));
      b0 = hn::Add(b0, hn::Load(df, p1 + i));
      b1 = hn::Add(b1, hn::Load(df, p1 + i + L));
      b2 = hn::Add(b2, hn::Load(df, p1 + i + 2 * L));
      b3 = hn::Add(b3, hn::Load(df, p1 + i + 3 * L));
    }
    const auto a = hn::Add(hn::Add(a0, a1), hn::Add(a2, a3));
    const auto b = hn::Add(hn::Add(b0, b1), hn::Add(b2, b3));
    result += hn::GetLane(hn::SumOfLanes(df, hn::Add(a, b)));
  }
  return result;
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace moacert::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "bench/harness.hpp"

namespace moacert::bench {

HWY_EXPORT(FmaLoop);
HWY_EXPORT(ReadLoop);
HWY_EXPORT(TargetName);

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Peaks measure_peaks(int threads) {
  Peaks peaks;
  peaks.target = HWY_DYNAMIC_DISPATCH(TargetName)();
  std::vector<float> sink(std::size_t(threads) + 64);
  // FMA: about 0.2 s per run, best of 5.
  const std::int64_t iters = 20'000'000;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = now();
    const double fmas = HWY_DYNAMIC_DISPATCH(FmaLoop)(iters, threads, sink.data());
    const double dt = now() - t0;
    peaks.gflops = std::max(peaks.gflops, 2.0 * fmas * threads / dt / 1e9);
  }
  // Streams: 512 MiB, far past any last-level cache; best of 5.
  const std::size_t n = std::size_t(128) << 20;  // floats
  auto src = hwy::AllocateAligned<float>(n), dst = hwy::AllocateAligned<float>(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < std::int64_t(n); ++i) {  // first touch by the threads that read
    src[std::size_t(i)] = 1.0f;
    dst[std::size_t(i)] = 0.0f;
  }
  float keep = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = now();
    keep += HWY_DYNAMIC_DISPATCH(ReadLoop)(src.get(), n, threads);
    const double dt = now() - t0;
    peaks.gbps_read = std::max(peaks.gbps_read, double(n) * sizeof(float) / dt / 1e9);
  }
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      const std::size_t t = std::size_t(omp_get_thread_num()),
                        T = std::size_t(omp_get_num_threads());
      const std::size_t per = n / T;
      std::memcpy(dst.get() + t * per, src.get() + t * per, per * sizeof(float));
    }
    const double dt = now() - t0;
    peaks.gbps_copy = std::max(peaks.gbps_copy, 2.0 * double(n) * sizeof(float) / dt / 1e9);
  }
  sink[0] += keep + dst[n / 2];
  volatile float guard = sink[0];
  (void)guard;
  return peaks;
}

}  // namespace moacert::bench
#endif  // HWY_ONCE
