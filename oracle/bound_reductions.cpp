// The a priori bounds' score dots (detail/bound_helpers.hpp), vectorised
// with Highway: compiled once per target (foreach_target.h), the target
// chosen at run time by HWY_DYNAMIC_DISPATCH, as the oracle's other
// reductions.
//
// Bit for bit the plain loop's: each lane holds one key j and runs, d
// ascending from zero, the plain loop's two operations on it, a product
// rounded to nearest and its addition (and the product's absolute value
// added to the magnitude). Every step is an IEEE operation, lane by lane,
// so each lane's sums are the scalar's. Keys transposed (d-major, key
// stride 1) run in vectors of consecutive keys; keys read row by row run
// the plain loop. This file is
// compiled with -ffp-contract=off: a contracted product and sum would be
// another rounding than the plain loop's.

#ifndef MOACERT_BOUND_REDUCTIONS_ONCE
#define MOACERT_BOUND_REDUCTIONS_ONCE

#include <algorithm>
#include <cmath>

#include "oracle/detail/bound_helpers.hpp"

#endif  // MOACERT_BOUND_REDUCTIONS_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "oracle/bound_reductions.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::oracle::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using moa::extent_t;

void BoundDots(const double* a, const double* x, extent_t key_stride, extent_t d_stride, extent_t n,
               extent_t D, double* dot, double* mag) {
  const hn::ScalableTag<double> lanes;
  const auto L = static_cast<extent_t>(hn::Lanes(lanes));
  extent_t j = 0;
  for (; key_stride == 1 && j + L <= n; j += L) {  // keys contiguous: a vector of keys per d
    auto sum = hn::Zero(lanes), abs = hn::Zero(lanes);
    for (extent_t d = 0; d < D; ++d) {
      const auto product = hn::Mul(hn::Set(lanes, a[d]), hn::LoadU(lanes, x + d * d_stride + j));
      sum = hn::Add(sum, product);
      abs = hn::Add(abs, hn::Abs(product));
    }
    hn::StoreU(sum, lanes, dot + j);
    hn::StoreU(abs, lanes, mag + j);
  }
  for (; j < n; ++j) {
    double sum = 0, abs = 0;
    for (extent_t d = 0; d < D; ++d) {
      const double product = a[d] * x[d * d_stride + j * key_stride];
      sum += product;
      abs += std::fabs(product);
    }
    dot[j] = sum;
    mag[j] = abs;
  }
}

}  // namespace moacert::oracle::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::oracle::detail {

HWY_EXPORT(BoundDots);

void bound_dots(const double* a, const double* x, moa::extent_t key_stride, moa::extent_t d_stride,
                moa::extent_t n, moa::extent_t D, double* dot, double* mag) {
  HWY_DYNAMIC_DISPATCH(BoundDots)(a, x, key_stride, d_stride, n, D, dot, mag);
}

void transpose_rows(const double* from, moa::extent_t rows, moa::extent_t D, double* to) {
  for (moa::extent_t r = 0; r < rows; ++r)
    for (moa::extent_t d = 0; d < D; ++d) to[d * rows + r] = from[r * D + d];
}

Mat transposed_rows(const Mat& x) {
  const moa::extent_t D = x.shape()[x.shape().rank() - 1];
  const auto rows = static_cast<moa::extent_t>(x.storage().size()) / std::max<moa::extent_t>(D, 1);
  Mat t(moa::Shape{D, rows});
  transpose_rows(x.storage().data(), rows, D, t.storage().data());
  return t;
}

}  // namespace moacert::oracle::detail
#endif  // HWY_ONCE
