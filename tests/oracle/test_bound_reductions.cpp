// The a priori bounds' vectorised score dots (oracle/bound_reductions.cpp):
// keys read transposed, in vectors of consecutive keys, against the same
// keys read row by row, which runs the plain loop: bit for bit, on values
// of every kind a bound meets (zeros of both signs, tiny, huge, infinite,
// NaN) and every count of keys, tails included. A vector path that fused a
// product into its sum, or summed in another order, differs here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"

namespace moacert::oracle::detail {
namespace {

using moa::extent_t;

// The same double, bit for bit, or both NaN (which NaN an invalid operation
// gives depends on the order of its operands, which a compiler may swap in
// a commutative addition: a NaN bound is unbounded either way).
bool same(double x, double y) {
  return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y) ||
         (std::isnan(x) && std::isnan(y));
}

double any_value(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-3, 3);
  switch (std::uniform_int_distribution<int>(0, 60)(rng)) {
    case 0:
      return 0.0;
    case 1:
      return -0.0;
    case 2:
      return 0x1p-1070;  // a product underflows
    case 3:
      return 0x1p600;  // a product overflows
    case 4:
      return std::numeric_limits<double>::infinity();
    case 5:
      return std::numeric_limits<double>::quiet_NaN();
    default:
      return u(rng) / 3;  // not a short binary fraction: products round
  }
}

TEST(BoundDots, TransposedKeysAreBitForBitThePlainLoop) {
  std::mt19937_64 rng(20261205);
  int compared = 0;
  for (extent_t D : {1, 2, 7, 64, 131})
    for (extent_t M : {0, 1, 3, 4, 5, 8, 9, 16, 17, 31, 33, 100}) {
      std::vector<double> a(static_cast<std::size_t>(D)), rows(static_cast<std::size_t>(M * D));
      for (double& x : a) x = any_value(rng);
      for (double& x : rows) x = any_value(rng);
      Mat x(moa::Shape{M, D});
      std::copy(rows.begin(), rows.end(), x.storage().begin());
      const Mat xt = transposed_rows(x);
      std::vector<double> dot(std::size_t(M) + 1), mag(dot.size()), vdot(dot.size()),
          vmag(dot.size());
      bound_dots(a.data(), rows.data(), D, 1, M, D, dot.data(), mag.data());
      bound_dots(a.data(), xt.storage().data(), 1, M, M, D, vdot.data(), vmag.data());
      for (extent_t j = 0; j < M; ++j) {
        EXPECT_TRUE(same(vdot[j], dot[j])) << "dot, key " << j << " of " << M << ", D " << D << ": "
                                           << vdot[j] << " vs " << dot[j];
        EXPECT_TRUE(same(vmag[j], mag[j])) << "mag, key " << j << " of " << M << ", D " << D;
        ++compared;
      }
      // The plain loop is the definition's: a product, then its sum.
      if (M > 0) {
        double sum = 0, abs = 0;
        for (extent_t d = 0; d < D; ++d) {
          const double p = a[std::size_t(d)] * rows[std::size_t(d)];
          sum += p;
          abs += std::fabs(p);
        }
        EXPECT_TRUE(same(dot[0], sum));
        EXPECT_TRUE(same(mag[0], abs));
      }
    }
  EXPECT_GT(compared, 1000);
}

}  // namespace
}  // namespace moacert::oracle::detail
