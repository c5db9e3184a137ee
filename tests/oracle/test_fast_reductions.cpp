// The first pass's vectorised sums (oracle/fast_reductions.cpp) on every
// Highway target this machine runs, at lengths that cross their blocks
// (32 rows; 32 terms per lane) and leave tails: each result encloses the
// exact sum of its inputs' intervals, computed in MPFR, and the blocked
// sums are narrower than the plain loops' (what they are for).
// Compiled with -frounding-math -ffp-contract=off, as fast_pass.cpp: the
// plain loops here are the pass's scalar arithmetic.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <mpfr.h>

#include "hwy/targets.h"
#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/scoped_rounding.hpp"

namespace moacert::oracle::detail {
namespace {

using moa::extent_t;

// An interval the pass meets as a probability: positive, a few ulps wide.
FastInterval probability(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.01, 1);
  const double x = u(rng);
  return FastInterval(std::nextafter(x, 0.0), std::nextafter(std::nextafter(x, 2.0), 2.0));
}

// Σ of the ends in MPFR at 300 bits, rounded outward to doubles: the
// exact interval sum's ends, which every enclosure must contain.
struct Exact {
  double lo, hi;
};
Exact exact_sum(const std::vector<FastInterval>& terms) {
  mpfr_t lo, hi;
  mpfr_inits2(300, lo, hi, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_zero(lo, 1);
  mpfr_set_zero(hi, 1);
  for (const FastInterval& t : terms) {
    mpfr_add_d(lo, lo, t.lo, MPFR_RNDD);
    mpfr_add_d(hi, hi, t.hi, MPFR_RNDU);
  }
  const Exact e{mpfr_get_d(lo, MPFR_RNDD), mpfr_get_d(hi, MPFR_RNDU)};
  mpfr_clears(lo, hi, static_cast<mpfr_ptr>(nullptr));
  return e;
}

// One term of a weighted sum w_j · x_jd with x a point: its exact interval.
FastInterval exact_term(const FastInterval& w, double x) {
  return x >= 0 ? FastInterval(w.lo * x, w.hi * x) : FastInterval(w.hi * x, w.lo * x);
}

class EveryTarget : public ::testing::TestWithParam<std::int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};
INSTANTIATE_TEST_SUITE_P(FastReductions, EveryTarget,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         [](const auto& p) { return std::string(hwy::TargetName(p.param)); });

TEST_P(EveryTarget, SumEnclosesAndIsNarrowerThanTheLoop) {
  std::mt19937_64 rng(7);
  for (extent_t n : {1, 7, 255, 256, 257, 1000, 4096, 4099}) {
    std::vector<FastInterval> p(static_cast<std::size_t>(n));
    for (FastInterval& x : p) x = probability(rng);
    const Exact e = exact_sum(p);
    UpwardRounding up;
    const FastInterval blocked = interval_sum(p.data(), n);
    const FastInterval plain = dnf::plain_sum(p.data(), n);
    EXPECT_LE(blocked.lo, e.lo) << "n = " << n;
    EXPECT_GE(blocked.hi, e.hi) << "n = " << n;
    // At 4096 terms the plain loop widens the sum by thousands of ulps of
    // the total; the blocks by about a hundred (kBlock + n / kBlock).
    if (n >= 4096) {
      EXPECT_LT(8 * (blocked.hi - blocked.lo), plain.hi - plain.lo) << "n = " << n;
    }
  }
}

TEST_P(EveryTarget, WeightedSumEnclosesAndIsNarrowerThanTheLoop) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> value(-1, 1);
  constexpr extent_t D = 37;  // four vectors and a tail on every target
  for (extent_t rows : {1, 31, 32, 33, 100, 4096}) {
    std::vector<FastInterval> w(static_cast<std::size_t>(rows)), x(std::size_t(rows * D));
    for (FastInterval& p : w) p = probability(rng);
    for (FastInterval& v : x) v = FastInterval(value(rng));
    std::vector<FastInterval> blocked(D), plain(D);
    {
      UpwardRounding up;
      interval_weighted_sum(w.data(), x.data(), D, rows, D, blocked.data());
      dnf::plain_weighted_sum(
          w.data(), moa::View<const FastInterval>(x.data(), moa::Layout::row_major({rows, D})),
          rows, plain.data());
    }
    double blocked_width = 0, plain_width = 0;
    for (extent_t d = 0; d < D; ++d) {
      std::vector<FastInterval> terms;
      for (extent_t j = 0; j < rows; ++j)
        terms.push_back(exact_term(w[std::size_t(j)], x[std::size_t(j * D + d)].lo));
      const Exact e = exact_sum(terms);
      EXPECT_LE(blocked[std::size_t(d)].lo, e.lo) << "rows " << rows << ", d " << d;
      EXPECT_GE(blocked[std::size_t(d)].hi, e.hi) << "rows " << rows << ", d " << d;
      blocked_width += blocked[std::size_t(d)].hi - blocked[std::size_t(d)].lo;
      plain_width += plain[std::size_t(d)].hi - plain[std::size_t(d)].lo;
    }
    if (rows >= 4096) {
      EXPECT_LT(2 * blocked_width, plain_width) << "rows " << rows;
    }
  }
}

// The same double, bit for bit, or both NaN.
bool same(double x, double y) {
  return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y) ||
         (std::isnan(x) && std::isnan(y));
}

// The softmax's numerators, lanes against the scalar operators: bit for
// bit exp(x_j - shift), on the intervals the pass meets (scores below the
// shift, a few ulps wide or points, the shift itself giving an exact 1)
// and on those the Taylor way refuses, which take the scalar exp (NaN,
// -inf, past -690, wide enough that r passes ±0.35), with a point shift
// and a wider one, at lengths that leave tails.
TEST_P(EveryTarget, ShiftedExpsAreTheScalarExpBitForBit) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> score(-60, 0.5);
  const double inf = std::numeric_limits<double>::infinity();
  int compared = 0, refused = 0;
  for (const FastInterval shift : {FastInterval(0.25), FastInterval(-1.5, -1.5 + 0x1p-40)}) {
    for (extent_t n : {1, 7, 8, 9, 100, 1003}) {
      std::vector<FastInterval> x(static_cast<std::size_t>(n));
      for (FastInterval& v : x) {
        const double s = score(rng);
        switch (rng() % 16) {
          case 0:
            v = FastInterval(s);
            break;
          case 1:
            v = shift;
            break;
          case 2:
            v = FastInterval::nan();
            break;
          case 3:
            v = FastInterval(-inf);
            break;
          case 4:
            v = FastInterval(-800.0, -700.0);
            break;
          case 5:
            v = FastInterval(s - 3, s);
            break;
          default:
            v = FastInterval(s, std::nextafter(std::nextafter(s, inf), inf));
        }
      }
      std::vector<FastInterval> lanes = x, scalar(x.size());
      {
        UpwardRounding up;
        interval_shifted_exps(lanes.data(), n, shift);
        for (std::size_t j = 0; j < x.size(); ++j) scalar[j] = exp(x[j] - shift);
      }
      for (std::size_t j = 0; j < x.size(); ++j) {
        EXPECT_TRUE(same(lanes[j].lo, scalar[j].lo) && same(lanes[j].hi, scalar[j].hi))
            << "n " << n << ", j " << j << ": x [" << x[j].lo << ", " << x[j].hi << "] gives ["
            << lanes[j].lo << ", " << lanes[j].hi << "], the scalar [" << scalar[j].lo << ", "
            << scalar[j].hi << "]";
        ++compared;
        FastInterval taylor;
        UpwardRounding up;
        if (!exp_by_taylor(x[j] - shift, taylor)) ++refused;
      }
    }
  }
  EXPECT_GT(compared, 2000);
  EXPECT_GT(refused, 200);  // the scalar fallback was met
}

}  // namespace
}  // namespace moacert::oracle::detail
