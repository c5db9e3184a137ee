// Correct rounding to each format at its edges (subnormals, ties, overflow)
// and ULP arithmetic on hand-picked values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include <mpfr.h>

#include "oracle/oracle.hpp"
#include "oracle/rounding.hpp"
#include "oracle/ulp.hpp"
#include "tests/support/harness.hpp"

namespace moacert::oracle {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 2^e · (1 + frac), exactly, at 200 bits; rounded by round_to_format.
double round_exact(Format f, long e, double frac, int sign = 1) {
  mpfr_t x;
  mpfr_init2(x, 200);
  mpfr_set_d(x, 1 + frac, MPFR_RNDN);  // frac a small dyadic: exact
  mpfr_mul_2si(x, x, e, MPFR_RNDN);
  if (sign < 0) mpfr_neg(x, x, MPFR_RNDN);
  const double r = round_to_format(x, f);
  mpfr_clear(x);
  return r;
}

// 2^e + 2^(e - k) exactly (k up to 150), rounded.
double round_pow2_plus(Format f, long e, long k) {
  mpfr_t x;
  mpfr_init2(x, 400);
  mpfr_set_ui_2exp(x, 1, e, MPFR_RNDN);
  mpfr_t t;
  mpfr_init2(t, 10);
  mpfr_set_ui_2exp(t, 1, e - k, MPFR_RNDN);
  mpfr_add(x, x, t, MPFR_RNDN);
  const double r = round_to_format(x, f);
  mpfr_clear(x);
  mpfr_clear(t);
  return r;
}

TEST(Rounding, SubnormalsTiesAndOverflow) {
  struct Edge {
    Format f;
    double tiny, max;  // smallest subnormal, largest finite
  };
  const Edge edges[] = {
      {Format::f64, std::ldexp(1.0, -1074), std::numeric_limits<double>::max()},
      {Format::f32, std::ldexp(1.0, -149), std::numeric_limits<float>::max()},
      {Format::bf16, std::ldexp(1.0, -133), std::ldexp(2 - std::ldexp(1.0, -7), 127)},
      {Format::f16, std::ldexp(1.0, -24), 65504},
  };
  for (const Edge& x : edges) {
    SCOPED_TRACE(name(x.f));
    const FormatInfo fi = info(x.f);
    const long t = fi.emin - fi.precision + 1;  // log2 of the smallest subnormal
    EXPECT_EQ(round_exact(x.f, t, 0), x.tiny);
    EXPECT_EQ(round_exact(x.f, t - 1, 0), 0.0);                 // tiny/2: a tie, to even (0)
    EXPECT_TRUE(std::signbit(round_exact(x.f, t - 1, 0, -1)));  // -tiny/2 -> -0
    EXPECT_EQ(round_pow2_plus(x.f, t - 1, 60), x.tiny);         // just above tiny/2
    EXPECT_EQ(round_exact(x.f, t - 2, 0), 0.0);                 // tiny/4
    EXPECT_EQ(round_exact(x.f, t, 0.5), 2 * x.tiny);            // 1.5 tiny: a tie, to even (2 tiny)
    EXPECT_EQ(round_exact(x.f, t + 1, 0.25), 2 * x.tiny);       // 2.5 tiny: a tie, to even (2 tiny)
    // The largest subnormal and the smallest normal.
    EXPECT_EQ(round_exact(x.f, fi.emin, 0), std::ldexp(1.0, fi.emin));
    const double largest_sub = std::ldexp(1.0, fi.emin) - x.tiny;
    mpfr_t v;
    mpfr_init2(v, 200);
    mpfr_set_d(v, largest_sub, MPFR_RNDN);
    EXPECT_EQ(round_to_format(v, x.f), largest_sub);
    // Overflow: max + half an ulp is the threshold (a tie, to even: inf).
    const double half_ulp = std::ldexp(1.0, fi.emax - fi.precision);
    mpfr_set_d(v, x.max, MPFR_RNDN);
    mpfr_add_d(v, v, half_ulp / 2, MPFR_RNDN);
    EXPECT_EQ(round_to_format(v, x.f), x.max);
    mpfr_set_d(v, x.max, MPFR_RNDN);
    mpfr_add_d(v, v, half_ulp, MPFR_RNDN);
    EXPECT_EQ(round_to_format(v, x.f), kInf);
    mpfr_neg(v, v, MPFR_RNDN);
    EXPECT_EQ(round_to_format(v, x.f), -kInf);
    mpfr_set_ui_2exp(v, 1, 5000, MPFR_RNDN);
    EXPECT_EQ(round_to_format(v, x.f), kInf);
    mpfr_set_ui_2exp(v, 1, -5000, MPFR_RNDN);
    EXPECT_EQ(round_to_format(v, x.f), 0.0);
    mpfr_set_nan(v);
    EXPECT_TRUE(std::isnan(round_to_format(v, x.f)));
    mpfr_clear(v);
  }
}

// The fast conversions from double agree with the MPFR rounding over the
// whole exponent range of each format, edges included.
TEST(Rounding, DoubleConversionsAgreeWithMpfr) {
  std::mt19937_64 rng(7);
  mpfr_t v;
  mpfr_init2(v, 53);
  for (Format f : {Format::f32, Format::bf16, Format::f16}) {
    const FormatInfo fi = info(f);
    std::uniform_int_distribution<int> e(fi.emin - fi.precision - 3, fi.emax + 2);
    for (int n = 0; n < 200000; ++n) {
      const double x = std::ldexp(1.0 + double(rng() >> 11) * 0x1p-53, e(rng)) * (n % 2 ? -1 : 1);
      mpfr_set_d(v, x, MPFR_RNDN);
      const double a = round_to_format(x, f), b = round_to_format(v, f);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(a), std::bit_cast<std::uint64_t>(b))
          << name(f) << " " << x;
    }
  }
  mpfr_clear(v);
}

// The mean of two floats that is an exact tie rounds to even: the oracle
// gets a point enclosure and rounds it with ties to even.
TEST(Rounding, OracleTiesToEven) {
  const Dims d{.B = 1, .H = 1, .Hkv = 1, .N = 1, .M = 2, .D = 1};
  Case c = test::make_case(Op::attention_fwd, Format::f32, d, 1);
  c.inputs[0].set({0, 0, 0, 0}, 0);  // q = 0: P = (1/2, 1/2)
  c.inputs[2].set({0, 0, 0, 0}, 1);
  c.inputs[2].set({0, 0, 1, 0}, 1 + 0x1p-23);  // mean 1 + 2^-24: halfway
  const Answer a = evaluate(c);
  EXPECT_EQ(a.outputs[0].rounded[0], 1.0);
  EXPECT_EQ(a.outputs[0].exact[0].hi, 1 + 0x1p-24);
  c.inputs[2].set({0, 0, 0, 0}, 1 + 0x1p-22);  // mean 1 + 3·2^-24: halfway, up to even
  c.inputs[2].set({0, 0, 1, 0}, 1 + 0x1p-23);
  EXPECT_EQ(evaluate(c).outputs[0].rounded[0], 1 + 0x1p-22);
}

TEST(Ulp, DefinitionOnHandPickedValues) {
  EXPECT_EQ(ulp(Format::f64, DD{1, 0}), 0x1p-52);
  EXPECT_EQ(ulp(Format::f32, DD{1, 0}), 0x1p-23);
  EXPECT_EQ(ulp(Format::bf16, DD{1, 0}), 0x1p-7);
  EXPECT_EQ(ulp(Format::f16, DD{1, 0}), 0x1p-10);
  EXPECT_EQ(ulp(Format::f32, DD{1, -0x1p-80}), 0x1p-24);  // just below 1: e = -1
  EXPECT_EQ(ulp(Format::f32, DD{-3, 0}), 0x1p-22);
  // Subnormal range and zero: the smallest subnormal.
  EXPECT_EQ(ulp(Format::f32, DD{0x1p-140, 0}), 0x1p-149);
  EXPECT_EQ(ulp(Format::f32, DD{0, 0}), 0x1p-149);
  EXPECT_EQ(ulp(Format::f16, DD{0x1p-20, 0}), 0x1p-24);
  EXPECT_EQ(ulp(Format::bf16, DD{0, 0}), 0x1p-133);
  EXPECT_EQ(ulp(Format::f64, DD{0, 0}), 0x1p-1074);
  EXPECT_EQ(ulp(Format::f16, DD{65504, 0}), 32);
  EXPECT_EQ(ulp(Format::f32, DD{kInf, 0}), kInf);
}

TEST(Ulp, ErrorOfRoundedValues) {
  // A correctly rounded value is within half an ulp.
  for (Format f : kAllFormats) {
    const DD third{1.0 / 3, std::fma(-3, 1.0 / 3, 1) / 3};  // 1/3 to ~106 bits
    const double y = round_to_format(third.hi, f);
    EXPECT_LE(ulp_error(f, y, third), 0.5) << name(f);
    EXPECT_GT(ulp_error(f, y, third), 0.2) << name(f);
  }
  EXPECT_EQ(ulp_error(Format::f32, 1 + 0x1p-23, DD{1, 0}), 1.0);
  EXPECT_EQ(ulp_error(Format::f32, 1, DD{1 + 0x1p-24, 0}), 0.5);  // a tie
  EXPECT_EQ(ulp_error(Format::f32, 1, DD{1, 0x1p-60}), 0x1p-37);  // the DD's low part counts
  EXPECT_EQ(ulp_error(Format::f16, 0, DD{0x1p-25, 0}), 0.5);      // subnormal range
  EXPECT_EQ(ulp_error(Format::f16, 0x1p-24, DD{0, 0}), 1.0);      // exact zero
  EXPECT_EQ(ulp_error(Format::f16, 65504, DD{65504 + 15, 0}), 15.0 / 32);
  // Non-finite values.
  EXPECT_EQ(ulp_error(Format::f16, kInf, DD{65504 + 15, 0}), kInf);  // overflowed, exact is finite
  // Past the overflow threshold (2 - 2^-p) 2^emax, rounding to nearest gives
  // the infinity: the correctly rounded result, no error (f16: 65520, the
  // tie between 65504 and 2^16 going to the infinity).
  EXPECT_EQ(ulp_error(Format::f16, kInf, DD{65504 + 16, 0}), 0);
  EXPECT_EQ(ulp_error(Format::f16, kInf, DD{65504 + 16, -0x1p-30}), kInf);  // just below: 65504
  EXPECT_EQ(ulp_error(Format::f16, -kInf, DD{-74332.4, 0}), 0);
  EXPECT_EQ(ulp_error(Format::f16, kInf, DD{-74332.4, 0}), kInf);  // the wrong infinity
  EXPECT_EQ(ulp_error(Format::f16, kNaN, DD{-74332.4, 0}), kInf);
  EXPECT_EQ(ulp_error(Format::bf16, kInf, DD{0x1.fe8p127, 0}), kInf);    // rounds to 0x1.fep127
  EXPECT_EQ(ulp_error(Format::bf16, kInf, DD{0x1.ffp127, 0}), 0);        // the tie
  EXPECT_EQ(ulp_error(Format::f32, kInf, DD{0x1.ffffffp127, 0}), 0);     // the tie
  EXPECT_EQ(ulp_error(Format::f32, kInf, DD{0x1.fffffep127, 0}), kInf);  // max finite
  EXPECT_EQ(ulp_error(Format::f64, kInf, DD{0x1.fffffffffffffp1023, 0x1p970}), 0);  // the tie
  EXPECT_EQ(ulp_error(Format::f64, kInf, DD{0x1.fffffffffffffp1023, 0x1p969}), kInf);
  EXPECT_EQ(ulp_error(Format::f32, kNaN, DD{1, 0}), kInf);
  EXPECT_EQ(ulp_error(Format::f32, kInf, DD{kInf, 0}), 0);
  EXPECT_EQ(ulp_error(Format::f32, -kInf, DD{kInf, 0}), kInf);
  EXPECT_EQ(ulp_error(Format::f32, 1e30, DD{-kInf, 0}), kInf);
  EXPECT_EQ(ulp_error(Format::f32, kNaN, DD{kNaN, 0}), 0);
  EXPECT_EQ(ulp_error(Format::f32, 0, DD{kNaN, 0}), kInf);
}

// The DD forms (computed in double, used by the judge on every element)
// agree with the MPFR forms (exact) on random values near and far from y,
// power-of-two edges and the subnormal range included: ulp exactly, the
// error in ulps to double's accuracy.
TEST(Ulp, DoubleDoubleFormsAgreeWithMpfr) {
  std::mt19937_64 rng(11);
  mpfr_t x;
  mpfr_init2(x, 2200);
  std::uniform_int_distribution<int> exponent(-1100, 1000), shift(-60, 4);
  for (Format f : kAllFormats) {
    for (int n = 0; n < 100000; ++n) {
      const double hi =
          std::ldexp(n % 7 == 0 ? 1.0 : 1.0 + double(rng() >> 11) * 0x1p-53, exponent(rng)) *
          (n % 2 ? -1 : 1);
      const double lo = n % 5 == 0 ? 0 : std::ldexp(hi, -53 - int(rng() % 8)) * (n % 3 ? 1 : -1);
      const DD dd{hi, lo};
      // y at a random distance from x: equal, a few ulps away, far away.
      const double y = n % 11 == 0 ? hi : hi + std::ldexp(hi, shift(rng)) * (n % 4 ? 1 : -1);
      mpfr_set_d(x, hi, MPFR_RNDN);
      mpfr_add_d(x, x, lo, MPFR_RNDN);  // exact at 2200 bits
      ASSERT_EQ(ulp(f, dd), ulp(f, x)) << name(f) << " " << hi << " + " << lo;
      const double want = ulp_error(f, y, x), got = ulp_error(f, y, dd);
      if (std::isinf(want)) {
        ASSERT_TRUE(std::isinf(got) || got > 0x1p1000) << name(f) << " " << y << " vs " << hi;
        continue;
      }
      ASSERT_LE(std::fabs(got - want), 0x1p-50 * want + 0x1p-60)
          << name(f) << " y " << y << " x " << hi << " + " << lo;
    }
  }
  mpfr_clear(x);
}

TEST(Ulp, NormwiseError) {
  const std::vector<DD> x = {{3, 0}, {4, 0}};
  const std::vector<double> same = {3, 4}, off = {3, 4 + 5 * 0x1p-24};
  EXPECT_EQ(normwise_error(Format::f32, same, x), 0);
  EXPECT_DOUBLE_EQ(normwise_error(Format::f32, off, x), 1.0);  // 5·2^-24 / 5 / 2^-24
  const std::vector<double> bad = {3, kNaN};
  EXPECT_EQ(normwise_error(Format::f32, bad, x), kInf);
  const std::vector<DD> zero = {{0, 0}, {0, 0}};
  EXPECT_EQ(normwise_error(Format::f32, same, zero), kInf);
}

}  // namespace
}  // namespace moacert::oracle
