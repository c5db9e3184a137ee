// The emulator's detectors, each shown catching its planted hazard, and its
// correct kernels shown clean and schedule-independent
// (tests/simt/kernels.cu; docs/simt.md).
#define MOACERT_SIMT_UNINSTRUMENTED 1  // this driver is host code
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <regex>
#include <string>

#include "moacert/simt.h"
#include "reference/format.hpp"
#include "tests/simt/kernels.hpp"

namespace {

using moacert::simt::Hazard;

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float((i * 7919) % 101) - 50.0f * scale;
  return v;
}

std::vector<std::uint32_t> bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}

constexpr std::uint64_t kSeeds[] = {0, 1, 2, 977, 0xdeadbeef};

// The per-buffer counters of a launch under `name` (zero if untouched).
moacert::simt::BufferCounters traffic_of(const moacert::simt::Counters& c,
                                         const std::string& name) {
  for (const auto& b : c.buffers)
    if (b.name == name) return b;
  return {name};
}

// The law of the per-buffer counters: each buffer at most once, and their
// sum is the launch's global totals (module data included).
void expect_buffers_sum_to_totals(const moacert::simt::Counters& c) {
  using C = moacert::simt::Counters;
  moacert::simt::BufferCounters sum;
  for (const auto& b : c.buffers) {
    sum += b;
    EXPECT_EQ(std::count_if(c.buffers.begin(), c.buffers.end(),
                            [&](const auto& o) { return o.name == b.name; }),
              1)
        << b.name;
  }
  std::uint64_t atomics = 0;
  for (int k = 0; k < C::n_atomic_kinds; ++k) atomics += c.atomics[C::global][k];
  EXPECT_EQ(sum.loads, c.global_loads);
  EXPECT_EQ(sum.load_bytes, c.global_load_bytes);
  EXPECT_EQ(sum.stores, c.global_stores);
  EXPECT_EQ(sum.store_bytes, c.global_store_bytes);
  EXPECT_EQ(sum.atomics, atomics);
}

// ---- correct kernels: clean, the same bits under every schedule seed, and
// equal to a plain host loop that adds in the kernel's order.
TEST(SimtCorrect, BlockSumMatchesTreeOrder) {
  const std::vector<float> x = ramp(1000, 0.37f);
  const int threads = 128;
  std::vector<float> expected;
  for (std::size_t b0 = 0; b0 < x.size(); b0 += threads) {
    std::vector<float> s(threads, 0.0f);
    for (int t = 0; t < threads; ++t) s[t] = b0 + t < x.size() ? x[b0 + t] : 0.0f;
    for (int half = threads / 2; half > 0; half /= 2)
      for (int t = 0; t < half; ++t) s[t] += s[t + half];
    expected.push_back(s[0]);
  }
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    EXPECT_EQ(bits(simt_test::run_block_sum(x, threads)), bits(expected)) << "seed " << seed;
  }
  const moacert::simt::Counters c = moacert::simt::last_launch_counters();
  EXPECT_EQ(c.blocks, 8u);
  EXPECT_EQ(c.threads, 8u * 128u);
  EXPECT_EQ(c.barriers, 8u * 8u);  // one before the tree, one per halving (7)
  EXPECT_EQ(c.global_loads, 1000u);
  EXPECT_EQ(c.global_stores, 8u);
}

TEST(SimtCorrect, TiledGemmMatchesHostLoop) {
  const int n = 64;
  const std::vector<float> a = ramp(n * n, 0.01f), b = ramp(n * n, 0.02f);
  std::vector<float> expected(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
      expected[i * n + j] = acc;
    }
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    EXPECT_EQ(bits(simt_test::run_gemm(a, b, n)), bits(expected)) << "seed " << seed;
  }
  const moacert::simt::Counters c = moacert::simt::last_launch_counters();
  expect_buffers_sum_to_totals(c);
  // a and b each give one element per tile per k-step, c takes every output once
  EXPECT_EQ(traffic_of(c, "a").loads, std::uint64_t(n) * n * (n / 16));
  EXPECT_EQ(traffic_of(c, "b").loads, std::uint64_t(n) * n * (n / 16));
  EXPECT_EQ(traffic_of(c, "b").load_bytes, sizeof(float) * n * n * (n / 16));
  EXPECT_EQ(traffic_of(c, "a").stores + traffic_of(c, "b").stores, 0u);
  EXPECT_EQ(traffic_of(c, "c").stores, std::uint64_t(n) * n);
  EXPECT_EQ(traffic_of(c, "c").loads, 0u);
  EXPECT_EQ(c.global_loads, 2u * n * n * (n / 16));  // one element of each tile per k-step
  EXPECT_EQ(c.global_stores, std::uint64_t(n) * n);
  EXPECT_EQ(c.shared_loads, 2u * n * n * n);
  EXPECT_EQ(c.barriers, 16u * 2u * (n / 16));
}

TEST(SimtCorrect, WarpSoftmaxMatchesButterflyOrder) {
  const int rows = 6, len = 70;
  const std::vector<float> x = ramp(rows * len, 0.1f);
  std::vector<float> expected(x.size());
  for (int r = 0; r < rows; ++r) {
    float m[32], s[32];
    for (int l = 0; l < 32; ++l) {
      m[l] = -INFINITY;
      for (int j = l; j < len; j += 32) m[l] = std::fmax(m[l], x[r * len + j]);
    }
    for (int off = 16; off > 0; off /= 2) {
      float next[32];
      for (int l = 0; l < 32; ++l) next[l] = std::fmax(m[l], m[l ^ off]);
      std::copy(next, next + 32, m);
    }
    for (int l = 0; l < 32; ++l) {
      s[l] = 0.0f;
      for (int j = l; j < len; j += 32) s[l] += std::exp(x[r * len + j] - m[l]);
    }
    for (int off = 16; off > 0; off /= 2) {
      float next[32];
      for (int l = 0; l < 32; ++l) next[l] = s[l] + s[l ^ off];
      std::copy(next, next + 32, s);
    }
    for (int j = 0; j < len; ++j)
      expected[r * len + j] = std::exp(x[r * len + j] - m[j % 32]) / s[j % 32];
  }
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    EXPECT_EQ(bits(simt_test::run_softmax(x, rows, len)), bits(expected)) << "seed " << seed;
  }
  const moacert::simt::Counters c = moacert::simt::last_launch_counters();
  EXPECT_EQ(c.warp_ops, std::uint64_t(rows) * 10u);  // 5 for the max, 5 for the sum
}

TEST(SimtCorrect, AtomicHistogramCountsEveryValue) {
  std::vector<int> values(1000);
  std::vector<unsigned> expected(16, 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = int((i * 2654435761u) % 1000);
    ++expected[values[i] % 16];
  }
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    EXPECT_EQ(simt_test::run_histogram(values), expected) << "seed " << seed;
  }
  const moacert::simt::Counters c = moacert::simt::last_launch_counters();
  using C = moacert::simt::Counters;
  EXPECT_EQ(c.atomics[C::shared][C::add], 1000u);
  EXPECT_EQ(c.atomics[C::global][C::add], 3u * 16u);
  expect_buffers_sum_to_totals(c);
  EXPECT_EQ(traffic_of(c, "values").loads, 1000u);
  EXPECT_EQ(traffic_of(c, "values").atomics, 0u);
  EXPECT_EQ(traffic_of(c, "bins").atomics, 3u * 16u);  // shared atomics belong to no buffer
  // the launch counter: a `__device__` variable, one load and one store
  const auto module = traffic_of(c, moacert::simt::kModuleData);
  EXPECT_EQ(module.loads, 1u);
  EXPECT_EQ(module.stores, 1u);
  EXPECT_EQ(module.store_bytes, sizeof(unsigned));
}

// Interleaving at every third access as well as at synchronisation points:
// the same bits (a race-free kernel's result does not depend on it).
TEST(SimtCorrect, GemmIsTheSameWithFinerInterleaving) {
  const int n = 32;
  const std::vector<float> a = ramp(n * n, 0.01f), b = ramp(n * n, 0.02f);
  moacert::simt::set_schedule_seed(5);
  const std::vector<float> coarse = simt_test::run_gemm(a, b, n);
  moacert::simt::Options o = moacert::simt::options();
  const moacert::simt::Options saved = o;
  o.yield_every_accesses = 3;
  moacert::simt::set_options(o);
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    EXPECT_EQ(bits(simt_test::run_gemm(a, b, n)), bits(coarse)) << "seed " << seed;
  }
  moacert::simt::set_options(saved);
}

// bf16 conversions round to nearest, ties to even, as cuda_bf16.h does.
TEST(SimtMath, Bfloat16RoundsToNearestEven) {
  auto bf16_bits = [](float f) { return __float2bfloat16(f).__x; };
  const float ulp = std::ldexp(1.0f, -7);  // of bf16 at 1
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(1.0f + ulp / 2), 0x3f80);             // a tie: to the even 1.0
  EXPECT_EQ(bf16_bits(1.0f + 3 * ulp / 2), 0x3f82);         // a tie: to the even 1 + 2 ulp
  EXPECT_EQ(bf16_bits(1.0f + ulp / 2 + ulp / 64), 0x3f81);  // above the tie: up
  EXPECT_EQ(bf16_bits(-1.0f - ulp / 4), 0xbf80);
  EXPECT_TRUE(std::isnan(__bfloat162float(__float2bfloat16(NAN))));
  EXPECT_EQ(__bfloat162float(__float2bfloat16(INFINITY)), INFINITY);
}

// f16 conversions round to nearest, ties to even, as cuda_fp16.h does:
// checked against the oracle's binary16 (reference/format.hpp, the
// compiler's _Float16), independently written, on every half, on every
// tie between neighbouring halves and the floats either side of it, and
// on a stride through all 2^32 floats (NaNs compared as NaN).
TEST(SimtMath, HalfRoundsToNearestEvenAsTheOracle) {
  auto oracle_bits = [](float f) { return moacert::f16(f).bits; };
  auto same = [&](float f) {
    const std::uint16_t ours = __float2half(f).__x, theirs = oracle_bits(f);
    const bool nan = std::isnan(f);
    return nan ? std::isnan(__half2float(__half(f))) && (ours & 0x7c00u) == 0x7c00u &&
                     (ours & 0x200u) != 0
               : ours == theirs;
  };
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = moacert::f16::from_bits(std::uint16_t(bits));
    __half ours;
    ours.__x = std::uint16_t(bits);
    const float value = float(h);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(__half2float(ours))) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(__half2float(ours)), std::bit_cast<std::uint32_t>(value))
        << "decode of 0x" << std::hex << bits;
    ASSERT_TRUE(same(value)) << "round trip of 0x" << std::hex << bits;
    if ((bits & 0x7fffu) >= 0x7c00u) continue;
    // the tie to the next half up in magnitude (to 65536 past the largest)
    const float next = (bits & 0x7fffu) == 0x7bffu
                           ? std::copysign(65536.0f, value)
                           : float(moacert::f16::from_bits(std::uint16_t(bits + 1)));
    const float tie = value + (next - value) / 2;  // exact: halves have 11 bits
    for (float f : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 2 * tie)})
      ASSERT_TRUE(same(f)) << "near the tie after 0x" << std::hex << bits << ": " << f;
  }
  for (std::uint64_t bits = 0; bits < (1ull << 32); bits += 997)
    ASSERT_TRUE(same(std::bit_cast<float>(std::uint32_t(bits)))) << std::hex << bits;
  EXPECT_EQ(__float2half(65519.0f).__x, 0x7bff);  // below the tie: the largest finite
  EXPECT_EQ(__float2half(65520.0f).__x, 0x7c00);  // the tie: to the even, infinity
  EXPECT_EQ(__float2half(0x1p-25f).__x, 0x0000);  // half the smallest subnormal: to 0
  EXPECT_EQ(__float2half(0x1.8p-25f).__x, 0x0001);
}

// ---- planted hazards: each caught, with kind, threads and source lines.
struct Planted {
  const char* name;
  const char* kind;
  const char* pattern;  // a regex the message must match
};

class SimtPlanted : public testing::TestWithParam<Planted> {};

TEST_P(SimtPlanted, IsReportedWithItsLocation) {
  const Planted& p = GetParam();
  try {
    simt_test::run_planted(p.name);
    FAIL() << p.name << " ran clean";
  } catch (const Hazard& h) {
    EXPECT_EQ(h.kind(), p.kind) << h.what();
    EXPECT_TRUE(std::regex_search(h.what(), std::regex(p.pattern))) << h.what();
  }
}

const std::string kThread = "thread \\(\\d+,0,0\\) of block \\(\\d+,0,0\\)";
const std::string kLine = "kernels\\.cu:\\d+";

INSTANTIATE_TEST_SUITE_P(
    Hazards, SimtPlanted,
    testing::Values(
        Planted{"missing_sync", "shared race",
                "kernel missing_sync: thread .* (reads|writes) 4 bytes at shared 'tile'\\+\\d+ "
                ".*kernels\\.cu:\\d+.*"
                "and thread \\(\\d+,0,0\\) of block \\(0,0,0\\) (wrote|read) it "
                "\\(.*kernels\\.cu:\\d+\\) "
                "in the same barrier interval"},
        Planted{"write_after_read", "shared race",
                "kernel write_after_read: thread .* (reads|writes) 4 bytes .*kernels\\.cu:\\d+.* "
                "(read|wrote) it \\(.*kernels\\.cu:\\d+\\) in the same barrier interval"},
        Planted{"barrier_in_branch", "divergent barrier",
                "__syncthreads at .*kernels\\.cu:\\d+ reached by 16 of 64 threads.*exited without "
                "reaching it"},
        Planted{"barriers_differ", "divergent barrier", "threads of a block at different barriers"},
        Planted{"off_by_one", "out of bounds",
                "kernel off_by_one: thread \\(31,0,0\\) of block \\(1,0,0\\) reads 4 bytes at "
                "'cudaMalloc#\\d+'\\+256 \\(.*kernels\\.cu:\\d+\\): past the end of "
                "'cudaMalloc#\\d+' \\(256 bytes\\), its bytes 256\\.\\.259, in no tensor"},
        // Issue 47: device memory as a GPU defines it.
        Planted{"read_past_small_input", "out of bounds",
                "kernel read_one: thread \\(0,0,0\\) of block \\(0,0,0\\) reads 4 bytes at 'x'\\+4 "
                "\\(.*kernels\\.cu:\\d+\\): past the end of 'x' \\(4 bytes\\), its bytes 4\\.\\.7"},
        Planted{
            "heap_host_memory", "host memory",
            "kernel read_one: thread \\(0,0,0\\) of block \\(0,0,0\\) reads 4 bytes at 0x[0-9a-f]+ "
            "\\(.*kernels\\.cu:\\d+\\): host memory, not device memory \\(no cudaMalloc "
            "allocation holds it\\), which a kernel cannot dereference"},
        Planted{"static_host_memory", "host memory",
                "kernel read_one: thread \\(0,0,0\\) of block \\(0,0,0\\) reads 4 bytes at "
                "'host_table'\\+12 \\(.*kernels\\.cu:\\d+\\): host memory, not device memory: "
                "static data of a loaded module, handed to the kernel as its argument 1"},
        Planted{"misaligned_global", "misaligned access",
                "kernel copy_vec4: thread \\(\\d,0,0\\) of block \\(0,0,0\\) reads 16 bytes at "
                "'cudaMalloc#\\d+'\\+\\d+ \\(.*kernels\\.cu:\\d+\\): misaligned address, not a "
                "multiple of 16"},
        Planted{"misaligned_shared", "misaligned access",
                "kernel shared_vec4: thread \\(\\d,0,0\\) of block \\(0,0,0\\) reads 16 bytes at "
                "shared 'tile'\\+4 \\(.*kernels\\.cu:\\d+\\): misaligned address, not a multiple "
                "of 16"},
        Planted{
            "past_dynamic_shared", "out of bounds",
            "kernel block_sum: thread \\((1[6-9]|2\\d|3[01]),0,0\\) of block \\(0,0,0\\) writes 4 "
            "bytes at dynamic shared\\+\\d+ \\(.*kernels\\.cu:\\d+\\): past the launch's 64 bytes "
            "of dynamic shared memory \\(its shared_bytes\\)"},
        // Each static __shared__ variable bounded by its own extent: one
        // element past the first array lands in the red zone after it.
        Planted{"past_static_shared", "out of bounds",
                "kernel shared_past: thread \\(31,0,0\\) of block \\(0,0,0\\) writes 4 bytes "
                "at shared 'first'\\+128 \\(.*kernels\\.cu:\\d+\\): past the end of static "
                "shared 'first' \\(128 bytes\\), its bytes 128\\.\\.131, in no __shared__ "
                "variable"},
        Planted{"uninitialised_shared", "uninitialised shared read",
                "thread \\((3[2-9]|[4-6]\\d),0,0\\) of block \\(0,0,0\\) reads 4 bytes at .*never "
                "written in this block"},
        Planted{
            "blocks_share_output", "global race",
            "thread \\(0,0,0\\) of block \\(\\d,0,0\\) writes 4 bytes at 'cudaMalloc#\\d+'\\+0 .*"
            "thread \\(0,0,0\\) of block \\(\\d,0,0\\) wrote it .*unordered: blocks of a launch"},
        Planted{"shuffle_outside_mask", "warp mask",
                "shuffles from lane 20, outside the mask 0x0000ffff \\(.*kernels\\.cu:\\d+\\)"},
        Planted{"mask_without_self", "warp mask",
                "thread \\(0,0,0\\) of block \\(0,0,0\\) \\(lane 0\\) calls a warp function with "
                "mask 0x00000002, which does not contain its own lane \\(.*kernels\\.cu:\\d+\\)"},
        Planted{"early_return", "divergent barrier",
                "reached by 63 of 64 threads.*thread \\(0,0,0\\) of block \\(0,0,0\\) exited"},
        Planted{"block_1025", "bad launch", "kernel trivial: a block of 1025x1x1 = 1025 threads"},
        Planted{"zero_grid", "bad launch", "kernel trivial: a grid of 0x1x1 blocks"},
        Planted{"negative_grid", "bad launch", "kernel trivial: a grid of 4294967295x1x1 blocks"},
        Planted{
            "too_much_shared", "bad launch",
            "kernel block_sum: 65536 bytes of dynamic shared memory, above the limit of 49152"}),
    [](const testing::TestParamInfo<Planted>& i) { return std::string(i.param.name); });

// The planted faults' correct twins hold, with their results.
TEST(SimtStrict, CorrectTwinsRunClean) {
  EXPECT_EQ(simt_test::run_strict_twins(), (std::vector<float>{1.0f, 1.0f, 4.0f, 32.0f, 3.0f}));
}

// The runtime's errors are CUDA's codes, never a crash (issue 47, item 4).
TEST(SimtStrict, RuntimeErrorsAreCudaCodes) {
  cudaGetLastError();
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  float host[32] = {};
  static float not_allocated[16];
  EXPECT_EQ(cudaFree(not_allocated), cudaErrorInvalidValue);                          // never one
  EXPECT_EQ(cudaFree(static_cast<char*>(p) + 16), cudaErrorInvalidValue);             // inside one
  EXPECT_EQ(cudaMemcpy(p, host, 65, cudaMemcpyHostToDevice), cudaErrorInvalidValue);  // past it
  EXPECT_EQ(cudaMemcpy(host, static_cast<char*>(p) + 32, 64, cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(host, p, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);  // sides
  EXPECT_EQ(cudaMemcpy(p, host, 64, cudaMemcpyKind(7)), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemset(p, 0, 65), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(host, 0, 4), cudaErrorInvalidValue);  // host memory
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);      // kept, as CUDA keeps it
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, host, 64, cudaMemcpyHostToDevice), cudaSuccess);  // the twins
  EXPECT_EQ(cudaMemset(p, 0, 64), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);                                     // twice
  EXPECT_EQ(cudaMemcpy(host, p, 4, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);  // freed
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

// Host code touching device memory outside a launch or a runtime call
// faults, as on a GPU, and the handler names the buffer; through the
// runtime the same bytes are copied (issue 47, item 1).
TEST(SimtStrictDeathTest, HostAccessToDeviceMemoryFaults) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  moacert_simt_name_buffer(p, "d");
  auto* f = static_cast<volatile float*>(p);
  EXPECT_DEATH(f[3] = 1.0f,
               "moacert simt: host access to device memory: host code writes 'd'\\+12, outside "
               "every kernel and runtime call");
  EXPECT_DEATH((void)f[1], "moacert simt: host access to device memory: host code reads 'd'\\+4");
  float host[16] = {};
  EXPECT_EQ(cudaMemset(p, 0, 64), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host, p, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[3], 0.0f);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

// Streams and events: handles checked as CUDA checks them, and the order
// of the streams' work kept beside the eager running (docs/simt.md#streams).
TEST(SimtStreams, HandlesAreCheckedAsCudaChecksThem) {
  cudaGetLastError();
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, e, e), cudaErrorInvalidValue);  // never recorded
  EXPECT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);  // twice
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaMemsetAsync(p, 0, 64, s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventRecord(e, nullptr), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidResourceHandle), "invalid resource handle");
  EXPECT_EQ(cudaFree(p), cudaSuccess);
}

// The hazard of the report since the last take, or "".
std::string reported_hazard() {
  char buf[4096];
  moacert_simt_take_report(buf, sizeof buf);
  const std::string report = buf;
  const auto at = report.find("\"message\":\"");
  return at == std::string::npos ? "" : report.substr(at);
}

TEST(SimtStreams, UnorderedWorkRacesAndOrderedWorkDoesNot) {
  reported_hazard();  // forget earlier tests
  void *p = nullptr, *q = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&q, 64), cudaSuccess);
  moacert_simt_name_buffer(p, "p");
  cudaStream_t one = nullptr, two = nullptr;
  ASSERT_EQ(cudaStreamCreate(&one), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&two), cudaSuccess);
  cudaEvent_t set = nullptr;
  ASSERT_EQ(cudaEventCreate(&set), cudaSuccess);
  // p set on one stream, copied on the other: unordered, then ordered.
  EXPECT_EQ(cudaMemsetAsync(p, 0, 64, one), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(q, p, 64, cudaMemcpyDeviceToDevice, two), cudaSuccess);
  EXPECT_TRUE(std::regex_search(
      reported_hazard(),
      std::regex("stream race: cudaMemcpyAsync of 64 bytes on stream #[0-9]+ reads 'p' while "
                 "cudaMemsetAsync of 64 bytes on stream #[0-9]+ writes it")));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemsetAsync(p, 0, 64, one), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(set, one), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(two, set, 0), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(q, p, 64, cudaMemcpyDeviceToDevice, two), cudaSuccess);
  EXPECT_EQ(reported_hazard(), "");
  // At the return: the legacy default stream's next work waits for a
  // blocking stream's, another blocking stream's does not.
  moacert_simt_call_returns(nullptr);
  EXPECT_EQ(reported_hazard(), "");
  EXPECT_EQ(cudaMemsetAsync(p, 0, 64, one), cudaSuccess);
  moacert_simt_call_returns(nullptr);
  EXPECT_EQ(reported_hazard(), "");
  EXPECT_EQ(cudaMemsetAsync(p, 0, 64, one), cudaSuccess);
  moacert_simt_call_returns(two);
  EXPECT_TRUE(std::regex_search(
      reported_hazard(), std::regex("unsynchronised work: cudaMemsetAsync of 64 bytes on stream "
                                    "#[0-9]+ is not ordered before the call returns")));
  for (cudaStream_t s : {one, two}) EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(set), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(q), cudaSuccess);
}

// cudaMemGetInfo's used bytes are the live allocations', exactly (the
// worker's leak check reads them).
TEST(SimtStreams, MemGetInfoCountsTheLiveAllocations) {
  std::size_t free0 = 0, total0 = 0, free1 = 0, total1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total0), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 1000), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total1), cudaSuccess);
  EXPECT_EQ(total1, total0);
  EXPECT_EQ(free0 - free1, 1000u);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total1), cudaSuccess);
  EXPECT_EQ(free1, free0);
}

TEST(SimtPlanted, HazardSetsTheLastError) {
  EXPECT_THROW(simt_test::run_planted("missing_sync"), Hazard);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(SimtReport, TakeReportGivesCountersAndTheFirstHazard) {
  char buf[4096];
  moacert_simt_take_report(buf, sizeof buf);  // forget earlier tests
  EXPECT_THROW(simt_test::run_planted("off_by_one"), Hazard);
  EXPECT_THROW(simt_test::run_planted("missing_sync"), Hazard);
  moacert_simt_take_report(buf, sizeof buf);
  const std::string report = buf;
  EXPECT_NE(report.find("\"launches\":2"), std::string::npos) << report;
  EXPECT_NE(report.find("\"kind\":\"out of bounds\""), std::string::npos) << report;
  moacert_simt_take_report(buf, sizeof buf);
  EXPECT_NE(std::string(buf).find("\"hazard\":null"), std::string::npos) << buf;
}

}  // namespace
