// The a priori bounds' vectorised score dots and value sums
// (oracle/bound_reductions.cpp). The dots:
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

// The value sums, lanes along d, against the plain loop of the forward
// bound's definition (docs/bounds.md#attention-forward), in one call and
// in blocks of keys (as bounds.cpp calls it), on the same kinds of values:
// every d of every width, tails included. A vector path that fused a
// product into its sum, took std::max's other operand on a NaN, or
// reordered the keys, differs here.
TEST(BoundValueSums, LanesAreBitForBitThePlainLoop) {
  std::mt19937_64 rng(20261206);
  int compared = 0;
  for (extent_t D : {1, 3, 8, 9, 64, 131})
    for (extent_t M : {1, 5, 64, 100}) {
      std::vector<double> p(static_cast<std::size_t>(M)), f_row(p.size()),
          v(static_cast<std::size_t>(M * D));
      for (double& x : p) x = std::fabs(any_value(rng));
      for (double& x : f_row) x = std::fabs(any_value(rng));
      for (double& x : v) x = any_value(rng);
      const double l = 1.25 + double(M);
      const auto zeros = std::vector<double>(std::size_t(D), 0.0);
      std::vector<double> c = zeros, f = zeros, o = zeros, vmax = zeros;
      for (extent_t j = 0; j < M; ++j) {
        const double P = p[std::size_t(j)] / l, F = f_row[std::size_t(j)];
        for (extent_t d = 0; d < D; ++d) {
          const double vv = v[std::size_t(j * D + d)];
          c[std::size_t(d)] += P * std::fabs(vv);
          f[std::size_t(d)] += P * std::fabs(vv) * F;
          o[std::size_t(d)] += P * vv;
          vmax[std::size_t(d)] = std::max(vmax[std::size_t(d)], std::fabs(vv));
        }
      }
      for (const extent_t block : {M, extent_t(7)}) {
        std::vector<double> vc = zeros, vf = zeros, vo = zeros, vm = zeros;
        for (extent_t first = 0; first < M; first += block)
          bound_value_sums(p.data(), f_row.data(), l, v.data(), first, std::min(first + block, M),
                           D, vc.data(), vf.data(), vo.data(), vm.data());
        for (std::size_t d = 0; d < std::size_t(D); ++d) {
          EXPECT_TRUE(same(vc[d], c[d]) && same(vf[d], f[d]) && same(vo[d], o[d]) &&
                      std::bit_cast<std::uint64_t>(vm[d]) == std::bit_cast<std::uint64_t>(vmax[d]))
              << "d " << d << " of " << D << ", " << M << " keys in blocks of " << block;
          ++compared;
        }
      }
    }
  EXPECT_GT(compared, 500);
}

}  // namespace
}  // namespace moacert::oracle::detail
