// The a priori bound of tensor-core accumulation (docs/bounds.md#tensor-cores)
// against the emulator's model of one mma (docs/simt.md, "The arithmetic
// model of one mma"): dot products of length K chained through K / 16 mmas,
// each mma's D the next one's C, on inputs built to maximise the model's
// truncation (one product 2^23 times the others, which the alignment cuts
// to nothing; sums just below a power of two, which a carry then cuts),
// and on random ones. The bound the oracle evaluates for a variant that
// declares tensor-core accumulation holds on every element; the bound of
// round-to-nearest accumulation does not, on the adversarial ones.
#define MOACERT_SIMT_UNINSTRUMENTED 1  // this driver is host code
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "oracle/bounds.hpp"
#include "oracle/detail/bound_helpers.hpp"
#include "tests/simt/tensor_core_kernels.hpp"

namespace {

using moacert::Accumulation;
using moacert::Arithmetic;
using moacert::Format;
using moacert::Rounding;
using moacert::oracle::detail::Mat;
using moacert::oracle::detail::RoundingUnits;
using std::uint16_t;
using std::uint32_t;

constexpr int kRows = 16, kCols = 8, kStep = 16;  // one mma.m16n8k16

// The b16 bits of a value the input format holds exactly.
uint16_t bits_of(double exact, bool f16) {
  if (f16) {
    const auto h = static_cast<_Float16>(exact);
    EXPECT_EQ(double(h), exact) << exact << " is not an f16";
    return std::bit_cast<uint16_t>(h);
  }
  const auto u = std::bit_cast<uint32_t>(float(exact));
  EXPECT_EQ(double(float(exact)), exact);
  EXPECT_EQ(u & 0xffffu, 0u) << exact << " is not a bf16";
  return uint16_t(u >> 16);
}

// A (kRows, K) and B (K, kCols), row-major, in the input format's values.
struct Product {
  int K;
  bool f16;
  std::vector<double> a, b;
  Product(int k, bool half)
      : K(k), f16(half), a(std::size_t(kRows) * k), b(std::size_t(k) * kCols) {}
  double& A(int r, int k) { return a[std::size_t(r) * K + k]; }
  double& B(int k, int c) { return b[std::size_t(k) * kCols + c]; }
};

// C = A B on the emulator: K / 16 mmas, each one's D the next one's C.
std::vector<float> on_tensor_cores(const Product& p) {
  std::vector<float> acc(kRows * kCols, 0.0f);
  for (int k0 = 0; k0 < p.K; k0 += kStep) {
    std::vector<uint16_t> a(kRows * kStep), b(kStep * kCols);
    for (int r = 0; r < kRows; ++r)
      for (int k = 0; k < kStep; ++k)
        a[r * kStep + k] = bits_of(p.a[std::size_t(r) * p.K + k0 + k], p.f16);
    for (int k = 0; k < kStep; ++k)
      for (int c = 0; c < kCols; ++c)
        b[k * kCols + c] = bits_of(p.b[std::size_t(k0 + k) * kCols + c], p.f16);
    acc = simt_test::run_mma(a, b, acc, p.f16);
  }
  return acc;
}

// Σ_k A[r][k] B[k][c] exactly: the products of two b16 values are exact in
// long double, and so is every partial sum of the inputs below (checked:
// each addition's error, by Knuth's TwoSum, is zero).
long double exact_entry(const Product& p, int r, int c) {
  long double s = 0;
  for (int k = 0; k < p.K; ++k) {
    const long double x =
        (long double)p.a[std::size_t(r) * p.K + k] * p.b[std::size_t(k) * kCols + c];
    const long double t = s + x, back = t - s;
    EXPECT_EQ((s - (t - back)) + (x - back), 0.0L) << "the reference sum is not exact";
    s = t;
  }
  return s;
}

// The oracle's bound of C = A B for a kernel of this arithmetic (a GEMM's,
// docs/bounds.md#gemm, as mlp.swiglu and the block compose it), in f32
// accumulation and bf16 storage, before the storage rounding.
Mat gemm_bound(const Product& p, Accumulation accumulation) {
  const RoundingUnits u = moacert::oracle::detail::rounding_units(
      Format::bf16, {.arithmetic = Arithmetic{.accumulation = accumulation}});
  Mat a(moacert::moa::Shape{kRows, p.K}), b(moacert::moa::Shape{p.K, kCols});
  std::copy(p.a.begin(), p.a.end(), a.storage().begin());
  std::copy(p.b.begin(), p.b.end(), b.storage().begin());
  return moacert::oracle::detail::gemm_bounds(a, b, nullptr, u, nullptr, /*store=*/false);
}

// The largest error / bound over C's elements.
double worst_ratio(const Product& p, const std::vector<float>& c, const Mat& bound) {
  double worst = 0;
  for (int r = 0; r < kRows; ++r)
    for (int col = 0; col < kCols; ++col) {
      const double err =
          double(std::fabs((long double)c[std::size_t(r) * kCols + col] - exact_entry(p, r, col)));
      worst = std::max(worst, err / bound.storage()[std::size_t(r) * kCols + col]);
    }
  return worst;
}

// The largest significand of the input format: 2 - 2^-7 (bf16), 2 - 2^-10 (f16).
double top(bool f16) {
  return f16 ? 2 - 0x1p-10 : 2 - 0x1p-7;
}

// One product 2^E per row, at k = 0 (the first half of the rows) or
// further on, and every other product top 2^(E-24), just below 2^(E-23),
// of one sign per column (mixed signs would cancel the truncations):
// against the large accumulator each step's alignment cuts the small
// products to nothing, 2^-23 of the largest addend each where
// round-to-nearest loses at most 2^-24 per addition. E = 25 (bf16) or 15
// (f16, whose range is smaller).
Product wide_magnitudes(int K, bool f16) {
  Product p(K, f16);
  const int E = f16 ? 15 : 25;
  for (int r = 0; r < kRows; ++r) {
    const int big = r < kRows / 2 ? 0 : (r * 5) % K;
    for (int k = 0; k < K; ++k)
      p.A(r, k) = k == big ? std::ldexp(1.0, E) : std::ldexp(top(f16), E - 24);
  }
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < kCols; ++c) p.B(k, c) = k > 0 && c % 2 ? -1.0 : 1.0;
  return p;
}

// A sum just below a power of two, then a carry: the first step adds 2^E,
// 2^(E-1), ..., 2^(E-7) (2^(E+1) - 2^(E-7)); the second 2^(E-7) + 2^(E-23),
// crossing 2^(E+1) by 2^(E-23), which the final truncation cuts, and six
// products just below 2^(E-23), which the alignment cuts; every later step
// eight products just below 2^(E-22), cut against 2^(E+1).
Product carries_past_a_power_of_two(int K) {
  Product p(K, false);
  const int E = 25;
  for (int r = 0; r < kRows; ++r)
    for (int k = 0; k < K; ++k) {
      const int step = k / 8, in_step = k % 8;
      double x = std::ldexp(top(false), E - 23);  // later steps
      if (step == 0) x = std::ldexp(1.0, E - in_step);
      if (step == 1) {
        x = in_step == 0   ? std::ldexp(1.0, E - 7)
            : in_step == 1 ? std::ldexp(1.0, E - 23)
                           : std::ldexp(top(false), E - 24);
      }
      p.A(r, k) = x;
    }
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < kCols; ++c) p.B(k, c) = 1.0;
  return p;
}

// Random signs and exponents over 2^-6 .. 2^6 (cancellation, and products
// 2^24 apart), significands over the format.
Product random_operands(int K, bool f16, std::uint64_t seed) {
  Product p(K, f16);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exponent(-6, 6), significand(0, f16 ? 1023 : 127);
  auto draw = [&] {
    const double m = 1 + std::ldexp(double(significand(rng)), f16 ? -10 : -7);
    return (rng() & 1 ? -1 : 1) * std::ldexp(m, exponent(rng));
  };
  for (double& x : p.a) x = draw();
  for (double& x : p.b) x = draw();
  return p;
}

struct Family {
  std::string name;
  Product p;
};

std::vector<Family> families() {
  std::vector<Family> f;
  for (int K : {16, 64, 128}) {
    f.push_back({"wide magnitudes, bf16, K = " + std::to_string(K), wide_magnitudes(K, false)});
    f.push_back({"wide magnitudes, f16, K = " + std::to_string(K), wide_magnitudes(K, true)});
    f.push_back(
        {"carries past a power of two, K = " + std::to_string(K), carries_past_a_power_of_two(K)});
    for (std::uint64_t seed : {1u, 2u, 3u})
      f.push_back({"random, bf16, K = " + std::to_string(K) + ", seed " + std::to_string(seed),
                   random_operands(K, false, seed)});
    f.push_back({"random, f16, K = " + std::to_string(K), random_operands(K, true, 7)});
  }
  return f;
}

TEST(TensorCoreBound, HoldsOnTheMmaModelsWorstInputs) {
  for (const Family& f : families()) {
    const std::vector<float> c = on_tensor_cores(f.p);
    const double ratio = worst_ratio(f.p, c, gemm_bound(f.p, Accumulation::tensor_core));
    EXPECT_LE(ratio, 1.0) << f.name;
    RecordProperty(f.name, std::to_string(ratio));
  }
}

// The bound is needed: the model's truncation exceeds what round-to-nearest
// allows (γ_K with u_a = 2^-24), by nearly 2 on wide magnitudes.
TEST(TensorCoreBound, RoundToNearestBoundFailsOnTheModel) {
  for (int K : {64, 128})
    for (bool f16 : {false, true}) {
      const Product p = wide_magnitudes(K, f16);
      const std::vector<float> c = on_tensor_cores(p);
      EXPECT_GT(worst_ratio(p, c, gemm_bound(p, Accumulation::rounded)), 1.5)
          << "K = " << K << (f16 ? ", f16" : ", bf16");
      // and the tensor-core bound is not vacuous there: the model reaches
      // nearly half of it
      EXPECT_GT(worst_ratio(p, c, gemm_bound(p, Accumulation::tensor_core)), 0.4);
    }
}

// A tensor-core ONF in f16 storage rounds P and dS to f16 (flash_tc,
// bwd_tc, the fused *_tc): the bound takes f16's unit roundoff and
// underflow for them, not bf16's, and without the declaration none.
TEST(TensorCoreBound, WeightsAndScoreGradientsTakeTheStoragesUnits) {
  const Arithmetic declared{.accumulation = Accumulation::tensor_core,
                            .rounded = {{"P", Rounding::storage}, {"dS", Rounding::storage}}};
  const struct {
    Format format;
    double u, eta;
  } storages[] = {{Format::f16, 0x1p-11, 0x1p-24}, {Format::bf16, 0x1p-8, 0x1p-133}};
  for (const auto& s : storages) {
    const RoundingUnits u =
        moacert::oracle::detail::rounding_units(s.format, {.arithmetic = declared});
    EXPECT_EQ(u.u_weights, s.u) << name(s.format);
    EXPECT_EQ(u.u_score_grads, s.u) << name(s.format);
    EXPECT_EQ(u.eta_weights, s.eta) << name(s.format);
    EXPECT_EQ(u.eta_score_grads, s.eta) << name(s.format);
    const RoundingUnits undeclared = moacert::oracle::detail::rounding_units(
        s.format, {.arithmetic = {.accumulation = Accumulation::tensor_core}});
    EXPECT_EQ(undeclared.u_weights, 0.0) << name(s.format);
    EXPECT_EQ(undeclared.u_score_grads, 0.0) << name(s.format);
  }
}

}  // namespace
