// The double-double pass's vectorised reductions (oracle/dd_reductions.cpp)
// against the plain loops of the definition (reference/dnf/reductions.hpp),
// bit for bit: every end of every result the same double-doubles, NaN
// where the loops give DDInterval::nan(). Compiled with -ffp-contract=off,
// as dd_pass.cpp: the plain loops here are the pass's scalar arithmetic.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "oracle/detail/dd_interval.hpp"

namespace moacert::oracle::detail {
namespace {

using moa::extent_t;

// An interval the pass meets as a weight or a query: a point of a double,
// a product or quotient of doubles (ends with tails, moved outward), a
// zero of either sign, one straddling zero, one out of range or NaN.
DDInterval any_interval(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::uniform_int_distribution<int> kind(0, 11);
  switch (kind(rng)) {
    case 0:
      return DDInterval(0.0);
    case 1:
      return DDInterval(-0.0);
    case 2:
      return DDInterval(u(rng)) * DDInterval(u(rng)) / DDInterval(3.0);
    case 3:
      return DDInterval(DD{-0.25, 0}, DD{0.5, 0x1p-60});  // both signs
    case 4:
      return DDInterval(0x1p1001);  // out of range
    case 5:
      return DDInterval::nan();
    case 6:
      return DDInterval(u(rng)) / DDInterval(7.0);
    default:
      return DDInterval(u(rng));
  }
}

// A point of a double: a key or a value of the case (rarely 0, -0, huge).
DDInterval any_point(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-3, 3);
  std::uniform_int_distribution<int> kind(0, 40);
  switch (kind(rng)) {
    case 0:
      return DDInterval(0.0);
    case 1:
      return DDInterval(-0.0);
    case 2:
      return DDInterval(0x1p1002);
    default:
      return DDInterval(u(rng));
  }
}

bool same_bits(const DDInterval& a, const DDInterval& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

struct Case {
  extent_t rows, D, stride;
  std::vector<DDInterval> a, x;  // a (rows or D), x (rows, stride)
};

Case any_case(std::mt19937_64& rng, extent_t rows, extent_t D, double interval_share) {
  Case c{rows, D, D + 3, {}, {}};
  std::bernoulli_distribution special(interval_share);
  for (extent_t k = 0; k < std::max(rows, D); ++k)
    c.a.push_back(special(rng) ? any_interval(rng) : DDInterval(std::normal_distribution<>()(rng)));
  for (extent_t k = 0; k < rows * c.stride; ++k) c.x.push_back(any_point(rng));
  return c;
}

moa::View<const DDInterval> rows_of(const Case& c) {
  return moa::View<const DDInterval>(c.x.data(),
                                     moa::Layout::strided({c.rows, c.D}, {c.stride, 1}));
}

// On an x86-64 CPU with AVX2 and FMA (Highway's AVX2 target) the vector
// code must have run on most trials (all but those with too few lanes of
// work or an x out of range), or the comparisons above compared nothing.
void expect_vectorised(int vectorised) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_GT(vectorised, 100);
  }
#endif
  ::testing::Test::RecordProperty("vectorised", vectorised);
}

TEST(DDReductions, DotsAreThePlainLoopsBitForBit) {
  std::mt19937_64 rng(1);
  int vectorised = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto rows = static_cast<extent_t>(1 + trial % 37),
               D = static_cast<extent_t>(1 + trial % 29);
    const Case c = any_case(rng, rows, D, trial % 2 ? 0.3 : 0.02);
    const moa::View<const DDInterval> a(c.a.data(), moa::Layout::row_major({D}));
    std::vector<DDInterval> want(static_cast<std::size_t>(rows)), got(want.size());
    dnf::plain_dots(a, rows_of(c), rows, want.data());
    if (!dd_dots(c.a.data(), c.x.data(), c.stride, rows, D, got.data())) continue;
    ++vectorised;
    for (extent_t j = 0; j < rows; ++j)
      ASSERT_TRUE(same_bits(want[j], got[j])) << "trial " << trial << " row " << j;
  }
  expect_vectorised(vectorised);
}

TEST(DDReductions, WeightedSumsAreThePlainLoopsBitForBit) {
  std::mt19937_64 rng(2);
  int vectorised = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto rows = static_cast<extent_t>(1 + trial % 41),
               D = static_cast<extent_t>(1 + trial % 35);
    const Case c = any_case(rng, rows, D, trial % 2 ? 0.3 : 0.02);
    std::vector<DDInterval> want(static_cast<std::size_t>(D)), got(want.size());
    dnf::plain_weighted_sum(c.a.data(), rows_of(c), rows, want.data());
    if (!dd_weighted_sum(c.a.data(), c.x.data(), c.stride, rows, D, got.data())) continue;
    ++vectorised;
    for (extent_t k = 0; k < D; ++k)
      ASSERT_TRUE(same_bits(want[k], got[k])) << "trial " << trial << " column " << k;
  }
  expect_vectorised(vectorised);
}

// An x that is not a point (an interval of O_i) is declined: the caller's
// plain loops run.
TEST(DDReductions, DeclineRowsThatAreNotPoints) {
  std::mt19937_64 rng(3);
  Case c = any_case(rng, 16, 16, 0);
  c.x[5] = DDInterval(1.0) / DDInterval(3.0);
  std::vector<DDInterval> out(16);
  EXPECT_FALSE(dd_dots(c.a.data(), c.x.data(), c.stride, 16, 16, out.data()));
  EXPECT_FALSE(dd_weighted_sum(c.a.data(), c.x.data(), c.stride, 16, 16, out.data()));
}

}  // namespace
}  // namespace moacert::oracle::detail
