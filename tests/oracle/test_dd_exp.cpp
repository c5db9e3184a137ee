// The double-double pass's own exp (oracle/dd_exp.cpp): its enclosure
// contains exp's exact value at both ends (MPFR at 300 bits) on points and
// narrow intervals all over [-700, 700], its width stays within a stated
// multiple of the MPFR path's, and its remainder is what keeps a truncated
// polynomial sound. Compiled with -ffp-contract=off, as dd_exp.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <mpfr.h>

#include "oracle/detail/dd_interval.hpp"

namespace moacert::oracle::detail {
namespace {

constexpr mpfr_prec_t kBits = 300;

struct Mp {
  mpfr_t v;
  Mp() { mpfr_init2(v, kBits); }
  ~Mp() { mpfr_clear(v); }
  void set(const DD& d) {  // exact at 300 bits for a normal DD
    mpfr_set_d(v, d.hi, MPFR_RNDN);
    mpfr_add_d(v, v, d.lo, MPFR_RNDN);
  }
};

// Whether [lo, hi] contains exp over [x.lo, x.hi]: exp(x.lo) >= lo and
// exp(x.hi) <= hi, each exp rounded so that the comparison is conclusive.
bool contains(const DDInterval& x, const DDInterval& e) {
  Mp a, b;
  a.set(x.lo);
  mpfr_exp(a.v, a.v, MPFR_RNDD);
  b.set(e.lo);
  if (mpfr_cmp(b.v, a.v) > 0) return false;
  a.set(x.hi);
  mpfr_exp(a.v, a.v, MPFR_RNDU);
  b.set(e.hi);
  return mpfr_cmp(b.v, a.v) >= 0;
}

// (hi - lo) / lo, to a double.
double relative_width(const DDInterval& e) {
  Mp a, b;
  a.set(e.hi);
  b.set(e.lo);
  mpfr_sub(a.v, a.v, b.v, MPFR_RNDN);
  mpfr_div(a.v, a.v, b.v, MPFR_RNDN);
  return mpfr_get_d(a.v, MPFR_RNDN);
}

// A DD near x: x's double and a tail within half an ulp of it.
DD near(double x, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  const double ulp = std::nextafter(std::fabs(x), INFINITY) - std::fabs(x);
  return fast_two_sum(x, u(rng) * ulp);
}

// An argument the pass meets or that tests the reduction: a point or a
// narrow interval (relative width 2^-100 to 2^-60) about a centre drawn from
// [-700, 700], near 0, tiny, near ±limit, or near a boundary of k.
DDInterval argument(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> kind(0, 6), bits(30, 1000), wbits(60, 100), j(-1009, 1009);
  double x = 0;
  switch (kind(rng)) {
    case 0:
      x = 700 * u(rng);
      break;
    case 1:
      x = 1e-3 * u(rng);
      break;
    case 2:
      x = std::ldexp(u(rng), -bits(rng));
      break;
    case 3:
      x = std::copysign(700 - 1e-6 * std::fabs(u(rng)), u(rng));
      break;
    case 4:  // (j + 1/2) ln2: k is a tie of its two neighbours
      x = (j(rng) + 0.5) * 0.69314718055994530942 + 1e-12 * u(rng);
      break;
    default:
      x = 20 * u(rng);
  }
  const DD c = near(x, rng);
  if (rng() % 2 == 0) return DDInterval(c, c);
  const double w = std::ldexp(std::fabs(x), -wbits(rng));
  return DDInterval(two_sum(c.hi, c.lo - w), two_sum(c.hi, c.lo + w));
}

TEST(DDExp, RemainderBelowTheDoubleDoubles) {
  // 2^-104 of exp(r) >= e^-reach: the truncation is below the pass's moves.
  const DDExpConstants& c = dd_exp_constants();
  EXPECT_LE(c.remainder, 0x1p-104 * std::exp(-DDExpConstants::reach));
  EXPECT_GT(c.remainder, 0);
}

TEST(DDExp, ContainsExpAndIsNearlyAsTightAsMpfr) {
  std::mt19937_64 rng(29);
  const DDExpConstants& c = dd_exp_constants();
  int applied = 0, n = 0;
  std::vector<double> ratios[2], widths[2];  // [0] points, [1] intervals
  for (int i = 0; i < 20000; ++i) {
    const DDInterval x = argument(rng);
    DDInterval e;
    ++n;
    if (!exp_by_taylor(x, c, e)) continue;
    ++applied;
    if (e.is_nan()) continue;  // past 2^1000, as MPFR's
    ASSERT_TRUE(contains(x, e)) << std::hexfloat << x.lo.hi << " + " << x.lo.lo << " .. " << x.hi.hi
                                << " + " << x.hi.lo;
    const DDInterval m = exp_by_mpfr(x);
    const double wn = relative_width(e), wm = relative_width(m);
    const int kind = x.is_point() ? 0 : 1;
    widths[kind].push_back(wn);
    // Each DDInterval operation moves its ends by 2^-96: the enclosure is
    // the MPFR path's width plus at most 2^-91 (about 20 such moves).
    EXPECT_LE(wn, 2.1 * wm + 0x1p-91) << std::hexfloat << x.lo.hi << " " << wn << " " << wm;
    if (wm > 0) ratios[kind].push_back(wn / wm);
  }
  // Every argument in range but those whose result's tail leaves the
  // normal range, and the widest intervals, takes the enclosure.
  EXPECT_GT(applied, n * 9 / 10);
  std::printf("applied %d of %d\n", applied, n);
  for (int kind = 0; kind < 2; ++kind) {
    std::vector<double>&r = ratios[kind], &w = widths[kind];
    std::sort(r.begin(), r.end());
    std::sort(w.begin(), w.end());
    std::printf(
        "%s: width / MPFR's: 10%% %.3g, median %.3g, 90%% %.3g, max %.3g; relative "
        "width: median 2^%.1f, max 2^%.1f\n",
        kind == 0 ? "points" : "intervals", r[r.size() / 10], r[r.size() / 2], r[r.size() * 9 / 10],
        r.back(), std::log2(w[w.size() / 2]), std::log2(w.back()));
  }
}

TEST(DDExp, ExactZeroAndOutOfRange) {
  DDInterval e;
  ASSERT_TRUE(exp_by_taylor(DDInterval(0.0), dd_exp_constants(), e));
  EXPECT_TRUE(contains(DDInterval(0.0), e));
  EXPECT_TRUE(exp(DDInterval(0.0)).is_point());
  EXPECT_FALSE(exp_by_taylor(DDInterval(701.0), dd_exp_constants(), e));
  EXPECT_FALSE(exp_by_taylor(DDInterval(-701.0), dd_exp_constants(), e));
  EXPECT_FALSE(exp_by_taylor(DDInterval::nan(), dd_exp_constants(), e));
  EXPECT_FALSE(exp_by_taylor(DDInterval(INFINITY), dd_exp_constants(), e));
  EXPECT_FALSE(exp_by_taylor(DDInterval(DD{-1, 0}, DD{1, 0}), dd_exp_constants(), e));  // wide
  // exp falls back to MPFR there: its result is the MPFR path's.
  const DDInterval far(-701.0), m = exp_by_mpfr(far), f = exp(far);
  EXPECT_TRUE(f.lo.hi == m.lo.hi && f.lo.lo == m.lo.lo && f.hi.hi == m.hi.hi);
}

// The arguments where a truncation or a short ln2 shows: r near ±reach,
// with k from 0 to ±900.
std::vector<DDInterval> edge_arguments() {
  std::vector<DDInterval> xs;
  for (const double k : {0.0, 1.0, -1.0, 500.0, -500.0, 900.0, -900.0}) {
    for (const double r : {0.34, -0.34, 0.3, -0.3}) {
      const double x = k * 0.69314718055994530942 + r;
      xs.push_back(DDInterval(x));
    }
  }
  return xs;
}

int failures(const DDExpConstants& c) {
  int failed = 0;
  for (const DDInterval& x : edge_arguments()) {
    DDInterval e;
    if (!exp_by_taylor(x, c, e)) {
      ADD_FAILURE() << "not applied at " << x.lo.hi;
    } else if (!contains(x, e)) {
      ++failed;
    }
  }
  return failed;
}

// The planted faults: the same enclosure computed here from constants with
// a term dropped. A degree-8 polynomial truncates at about 2^-33: with its
// remainder it encloses, without it it does not. ln2 to 80 bits (ln2_3
// dropped) misplaces r by up to 900 · 2^-81: caught too.
TEST(DDExp, TheRemainderAndLn2sTailAreNeeded) {
  const DDExpConstants low = make_dd_exp_constants(8);
  EXPECT_EQ(failures(low), 0);
  DDExpConstants no_remainder = low;
  no_remainder.remainder = 0;
  EXPECT_GT(failures(no_remainder), 0);
  DDExpConstants short_ln2 = dd_exp_constants();
  EXPECT_EQ(failures(short_ln2), 0);
  short_ln2.ln2_3_down = short_ln2.ln2_3_up = 0;
  EXPECT_GT(failures(short_ln2), 0);
}

}  // namespace
}  // namespace moacert::oracle::detail
