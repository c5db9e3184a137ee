// Tensor cores on the emulator (docs/simt.md#tensor-cores): mma.m16n8k16's
// fragment layouts and its accumulation model, ldmatrix's layouts, and the
// planted hazards of tensor-core code, each caught.
#define MOACERT_SIMT_UNINSTRUMENTED 1  // this driver is host code
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "moacert/simt.h"
#include "tests/simt/tensor_core_kernels.hpp"

namespace {

using moacert::simt::Hazard;
using std::uint16_t;
using std::uint32_t;

constexpr std::uint64_t kSeeds[] = {0, 1, 2, 977, 0xdeadbeef};

// The b16 bits of a value that bf16 (or f16) holds exactly.
uint16_t bf16_bits(float exact) {
  const auto u = std::bit_cast<uint32_t>(exact);
  EXPECT_EQ(u & 0xffffu, 0u) << exact << " is not a bf16";
  return uint16_t(u >> 16);
}
float bf16_value(uint16_t bits) {
  return std::bit_cast<float>(uint32_t(bits) << 16);
}
uint16_t f16_bits(float exact) {
  const auto h = static_cast<_Float16>(exact);
  EXPECT_EQ(float(h), exact) << exact << " is not an f16";
  return std::bit_cast<uint16_t>(h);
}
float f16_value(uint16_t bits) {
  return float(std::bit_cast<_Float16>(bits));
}

// The operands of one mma: A 16x16, B 16x8 (B[k][n]), C 16x8, all zero.
struct Mma {
  std::vector<uint16_t> a = std::vector<uint16_t>(256), b = std::vector<uint16_t>(128);
  std::vector<float> c = std::vector<float>(128);
};

// ---- the model, restated in long double from its definition ---------------
// c + p[0] + ... + p[7]: every addend aligned to the largest exponent e
// among them and truncated toward zero to a multiple of 2^(e-23); the
// aligned addends summed exactly; the sum truncated toward zero to f32.
// (Long double holds the products of two bf16 or f16 exactly, and this sum:
// nine multiples of 2^(e-23), each below 2^(e+1).)
long double floor_log2(long double x) {
  int e = 0;
  std::frexp(x, &e);  // |x| = m 2^e, m in [1/2, 1)
  return e - 1;
}
float model_block(float c, const long double (&p)[8]) {
  long double e_max = -100000;
  if (c != 0) e_max = floor_log2(std::fabs(static_cast<long double>(c)));
  for (long double x : p)
    if (x != 0) e_max = std::max(e_max, floor_log2(std::fabs(x)));
  if (e_max == -100000) return c + 0.0f;
  const long double q = std::ldexp(1.0L, int(e_max) - 23);
  long double sum = std::trunc(c / q) * q;
  for (long double x : p) sum += std::trunc(x / q) * q;
  if (sum == 0) return 0.0f;
  const long double ulp =
      std::ldexp(1.0L, std::max(int(floor_log2(std::fabs(sum))) - 23, -149));  // f32's at sum
  return float(std::trunc(sum / ulp) * ulp);                                   // exact in f32
}
// D by the model: the 16 products of each element in two blocks of 8, the
// accumulator carried from the first into the second.
std::vector<float> model_mma(const Mma& m, float (*value)(uint16_t)) {
  std::vector<float> d(128);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = m.c[i * 8 + j];
      for (int k0 = 0; k0 < 16; k0 += 8) {
        long double p[8];
        for (int k = 0; k < 8; ++k)
          p[k] =
              static_cast<long double>(value(m.a[i * 16 + k0 + k])) * value(m.b[(k0 + k) * 8 + j]);
        acc = model_block(acc, p);
      }
      d[i * 8 + j] = acc;
    }
  return d;
}
// D exactly (long double), rounded once to f32.
std::vector<float> exact_mma(const Mma& m, float (*value)(uint16_t)) {
  std::vector<float> d(128);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      long double s = m.c[i * 8 + j];
      for (int k = 0; k < 16; ++k)
        s += static_cast<long double>(value(m.a[i * 16 + k])) * value(m.b[k * 8 + j]);
      d[i * 8 + j] = float(s);
    }
  return d;
}

// ---- layouts: with small integers every sum is exact, so D = A B + C
// exactly iff every fragment element went to its place.
Mma small_integers(std::uint64_t seed, uint16_t (*bits)(float)) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-4, 4);
  Mma m;
  for (auto& x : m.a) x = bits(float(v(rng)));
  for (auto& x : m.b) x = bits(float(v(rng)));
  for (auto& x : m.c) x = float(v(rng) * 16);
  return m;
}

TEST(SimtTensorCore, MmaFragmentsAreThePtxLayoutsBf16) {
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    const Mma m = small_integers(seed, bf16_bits);
    EXPECT_EQ(simt_test::run_mma(m.a, m.b, m.c, false), exact_mma(m, bf16_value)) << seed;
  }
}

TEST(SimtTensorCore, MmaFragmentsAreThePtxLayoutsF16) {
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    const Mma m = small_integers(seed, f16_bits);
    EXPECT_EQ(simt_test::run_mma(m.a, m.b, m.c, true), exact_mma(m, f16_value)) << seed;
  }
}

// ---- the arithmetic model: hand-derived cases where truncation and
// round-to-nearest differ, on element (0, 0): row 0 of A, column 0 of B.
struct Case {
  const char* what;
  float c;
  std::vector<std::pair<float, float>> ab;  // (A[0][k], B[k][0]) for k = 0, 1, ...
  float model;                              // by the model's definition
  float nearest;                            // the exact sum rounded to nearest
};

TEST(SimtTensorCore, MmaTruncatesWhereRoundingToNearestWouldNot) {
  const float u = std::ldexp(1.0f, -23);  // f32's ulp at 1
  const std::vector<Case> cases = {
      // Eight products of 2^-24, each below the quantum 2^-23 of the largest
      // addend (c = 1): each truncates to 0. Exactly: 1 + 8 2^-24 = 1 + 2^-21.
      {"small addends vanish", 1.0f, std::vector(8, std::pair{0x1p-12f, 0x1p-12f}), 1.0f,
       1.0f + 4 * u},
      // 1.75 2^-23 aligned to the quantum 2^-23 truncates to 2^-23; rounded
      // to nearest, 1 + 1.75 u is 1 + 2u.
      {"aligned addend truncated", 1.0f, {{0x1.cp-12f, 0x1p-11f}}, 1.0f + u, 1.0f + 2 * u},
      // -0.75 2^-24 truncates toward zero to 0; rounded to nearest,
      // 1 - 0.75 2^-24 is 1 - 2^-24 (f32's ulp below 1 is 2^-24).
      {"negative addend toward zero", 1.0f, {{-0x1.8p-12f, 0x1p-13f}}, 1.0f, 1.0f - u / 2},
      // (2^24 - 1) + 4 = 2^24 + 3 needs 25 bits: truncated to 2^24 + 2;
      // rounded to nearest (a tie), to the even 2^24 + 4.
      {"normalised sum truncated", 0x1.fffffep23f, {{2.0f, 2.0f}}, 0x1.000002p24f, 0x1.000004p24f},
      // Blocks of 8: k = 0..7 give 8 2^-24 = 2^-21 (exact within the
      // block), which survives the second block's alignment to 1 (k = 8).
      // One block of 16 would truncate every 2^-24 and give 1.
      {"blocks of eight", 0.0f,
       [] {
         std::vector ab(8, std::pair{0x1p-12f, 0x1p-12f});
         ab.push_back({1.0f, 1.0f});
         return ab;
       }(),
       1.0f + 4 * u, 1.0f + 4 * u},
  };
  for (const Case& k : cases) {
    Mma m;
    m.c[0] = k.c;
    for (std::size_t i = 0; i < k.ab.size(); ++i) {
      m.a[i] = bf16_bits(k.ab[i].first);
      m.b[i * 8] = bf16_bits(k.ab[i].second);
    }
    // The expected values follow from the definition; the restatement and
    // the exact sum agree with them.
    EXPECT_EQ(model_mma(m, bf16_value)[0], k.model) << k.what;
    EXPECT_EQ(exact_mma(m, bf16_value)[0], k.nearest) << k.what;
    EXPECT_EQ(simt_test::run_mma(m.a, m.b, m.c, false)[0], k.model) << k.what;
  }
}

// Random operands over a wide range of exponents, so that alignment drops
// bits in most sums: the emulator equals the model, bit for bit.
Mma wide_random(std::uint64_t seed, uint16_t (*bits)(float), int exponents) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> significand(0, 255), exponent(-exponents, exponents),
      sign(0, 1);
  auto value = [&](int fraction_bits) {
    const float s =
        1.0f + std::ldexp(float(significand(rng) >> (8 - fraction_bits)), -fraction_bits);
    return (sign(rng) ? -1.0f : 1.0f) * std::ldexp(s, exponent(rng));
  };
  const int fraction_bits = bits == bf16_bits ? 7 : 8;  // f16 has 10: 8 is a subset
  Mma m;
  for (auto& x : m.a) x = bits(value(fraction_bits));
  for (auto& x : m.b) x = bits(value(fraction_bits));
  std::uniform_real_distribution<float> c(-4.0f, 4.0f);
  for (auto& x : m.c) x = c(rng);
  return m;
}

TEST(SimtTensorCore, MmaEqualsTheModelOnRandomOperands) {
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    const Mma b = wide_random(seed, bf16_bits, 12);
    EXPECT_EQ(simt_test::run_mma(b.a, b.b, b.c, false), model_mma(b, bf16_value)) << seed;
    const Mma h = wide_random(seed, f16_bits, 6);
    EXPECT_EQ(simt_test::run_mma(h.a, h.b, h.c, true), model_mma(h, f16_value)) << seed;
  }
  // The model is not round-to-nearest: on these operands they differ.
  const Mma b = wide_random(1, bf16_bits, 12);
  EXPECT_NE(model_mma(b, bf16_value), exact_mma(b, bf16_value));
}

// ---- ldmatrix: lane l's register m holds, of 8x8 matrix m, the elements
// (l / 4, 2 (l % 4) + h), or with .trans (2 (l % 4) + h, l / 4), h = 0, 1
// in the lower and upper half (PTX ISA, ldmatrix).
TEST(SimtTensorCore, LdmatrixRegistersAreThePtxLayout) {
  std::vector<uint16_t> tile(256);
  for (int i = 0; i < 256; ++i) tile[std::size_t(i)] = uint16_t(i);
  for (int count : {1, 2, 4})
    for (bool trans : {false, true}) {
      const auto out = simt_test::run_ldmatrix(tile, count, trans);
      for (int l = 0; l < 32; ++l)
        for (int m = 0; m < count; ++m) {
          uint32_t expected = 0;
          for (int h = 0; h < 2; ++h) {
            const int row = trans ? 2 * (l % 4) + h : l / 4;
            const int col = trans ? l / 4 : 2 * (l % 4) + h;
            expected |= uint32_t(tile[std::size_t((8 * (m % 2) + row) * 16 + 8 * (m / 2) + col)])
                        << (16 * h);
          }
          EXPECT_EQ(out[std::size_t(l * count + m)], expected)
              << ".x" << count << (trans ? ".trans" : "") << " lane " << l << " register " << m;
        }
    }
}

TEST(SimtTensorCore, LdmatrixFeedsMma) {
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    const Mma m = small_integers(seed, bf16_bits);
    EXPECT_EQ(simt_test::run_ldmatrix_mma(m.a, m.b, m.c), exact_mma(m, bf16_value)) << seed;
  }
}

// ---- cp.async: the double-buffered pipeline is clean and exact under
// every schedule, with .ca copies of 4, 8 and 16 bytes and .cg of 16.
TEST(SimtTensorCore, AsyncCopyPipelineIsCleanAndExact) {
  const int stages = 4;
  std::vector<float> x(std::size_t(stages) * 256);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97);
  std::vector<float> expected(64, 0.0f);
  for (int t = 0; t < 64; ++t)
    for (int s = 0; s < stages; ++s)
      expected[std::size_t(t)] += x[std::size_t(s * 256 + (4 * t + 5) % 256)];
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    for (int bytes : {4, 8, 16})
      EXPECT_EQ(simt_test::run_async_pipeline(x, bytes, false), expected) << bytes << " " << seed;
    EXPECT_EQ(simt_test::run_async_pipeline(x, 16, true), expected) << seed;
  }
}

// ---- planted hazards: each caught, with kind, threads and source lines.
struct Planted {
  const char* name;
  const char* kind;     // a regex the kind must match (some hazards are seen
                        // as one of two kinds, by the order the threads ran)
  const char* pattern;  // a regex the message must match
};

class SimtTensorCorePlanted : public testing::TestWithParam<Planted> {};

TEST_P(SimtTensorCorePlanted, IsReportedWithItsLocation) {
  const Planted& p = GetParam();
  for (std::uint64_t seed : kSeeds) {
    moacert::simt::set_schedule_seed(seed);
    try {
      simt_test::run_tensor_core_planted(p.name);
      ADD_FAILURE() << p.name << " ran clean under seed " << seed;
    } catch (const Hazard& h) {
      EXPECT_TRUE(std::regex_match(h.kind(), std::regex(p.kind))) << h.kind() << ": " << h.what();
      EXPECT_TRUE(std::regex_search(h.what(), std::regex(p.pattern))) << h.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Hazards, SimtTensorCorePlanted,
    testing::Values(
        Planted{"mma_divergent", "warp mask",
                "kernel mma_divergent: lanes of warp 0 of block \\(0,0,0\\) meet in "
                "mma.sync.aligned at different instructions or qualifiers "
                "\\(.*tensor_core_kernels\\.cu:\\d+ and .*tensor_core_kernels\\.cu:\\d+\\)"},
        Planted{"mma_lane_exited", "warp mask",
                "waits in a warp function \\(.*tensor_core_kernels\\.cu:\\d+\\) with mask "
                "0xffffffff for lane 31, which exited"},
        Planted{"ldmatrix_past_tile", "out of bounds",
                "kernel ldmatrix_past_tile: thread \\(\\d+,0,0\\) of block \\(0,0,0\\) \\(lane "
                "\\d+\\) gives ldmatrix the row address .* \\(.*tensor_core_kernels\\.cu:\\d+\\): "
                "its 16-byte row ends \\d+ bytes past the launch's 512 bytes of dynamic shared "
                "memory"},
        Planted{"ldmatrix_misaligned", "misaligned access",
                "gives ldmatrix the row address .*tensor_core_kernels\\.cu:\\d+.*, which is not "
                "16-byte aligned \\(offset 2\\)"},
        Planted{
            "async_read_before_wait", "async copy race",
            "kernel async_read_before_wait: thread \\((\\d+),0,0\\) of block \\(0,0,0\\) reads 4 "
            "bytes of its destination, shared .* \\(.*tensor_core_kernels\\.cu:\\d+\\), and "
            "thread \\(\\1,0,0\\) of block \\(0,0,0\\)'s cp.async of 16 bytes "
            "\\(.*tensor_core_kernels\\.cu:\\d+\\) is in flight"},
        Planted{"async_source_written", "async copy race",
                "thread \\((\\d+),0,0\\) of block \\(0,0,0\\) writes 4 bytes of its source .* "
                "\\(.*tensor_core_kernels\\.cu:\\d+\\), and thread \\(\\1,0,0\\) of block "
                "\\(0,0,0\\)'s cp.async of 16 bytes \\(.*tensor_core_kernels\\.cu:\\d+\\) is in "
                "flight"},
        // Seen as a shared race (the issue writes a buffer another thread
        // read in the same interval) or as an access to a copy in flight.
        Planted{"async_double_buffer_overwritten", "shared race|async copy race",
                "kernel async_double_buffer_overwritten: thread \\(\\d+,0,0\\) .*"
                "tensor_core_kernels\\.cu:\\d+.*thread \\(\\d+,0,0\\) of block \\(0,0,0\\).*"
                "tensor_core_kernels\\.cu:\\d+"},
        Planted{"async_wait_after_barrier", "shared race|async copy race",
                "kernel async_wait_after_barrier: thread \\(\\d+,0,0\\) .*"
                "tensor_core_kernels\\.cu:\\d+.*thread \\(\\d+,0,0\\) of block \\(0,0,0\\).*"
                "tensor_core_kernels\\.cu:\\d+"},
        Planted{"pipeline_missing_barrier", "shared race",
                "kernel pipeline_missing_barrier: thread \\(\\d+,0,0\\) .* (reads|writes) .* "
                "\\(.*tensor_core_kernels\\.cu:\\d+\\).*thread \\(\\d+,0,0\\) of block "
                "\\(0,0,0\\) (wrote|read) it \\(.*tensor_core_kernels\\.cu:\\d+\\) in the same "
                "barrier interval"}),
    [](const testing::TestParamInfo<Planted>& i) { return std::string(i.param.name); });

}  // namespace
