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
  // Keys contiguous: four vectors of keys per d, eight independent chains of
  // additions (one vector's two chains waited on their adds' latency), each
  // key's sums still over d ascending.
  for (; key_stride == 1 && j + 4 * L <= n; j += 4 * L) {
    auto sum0 = hn::Zero(lanes), sum1 = sum0, sum2 = sum0, sum3 = sum0;
    auto abs0 = sum0, abs1 = sum0, abs2 = sum0, abs3 = sum0;
    for (extent_t d = 0; d < D; ++d) {
      const auto ad = hn::Set(lanes, a[d]);
      const double* xd = x + d * d_stride + j;
      const auto p0 = hn::Mul(ad, hn::LoadU(lanes, xd)), p1 = hn::Mul(ad, hn::LoadU(lanes, xd + L)),
                 p2 = hn::Mul(ad, hn::LoadU(lanes, xd + 2 * L)),
                 p3 = hn::Mul(ad, hn::LoadU(lanes, xd + 3 * L));
      sum0 = hn::Add(sum0, p0);
      sum1 = hn::Add(sum1, p1);
      sum2 = hn::Add(sum2, p2);
      sum3 = hn::Add(sum3, p3);
      abs0 = hn::Add(abs0, hn::Abs(p0));
      abs1 = hn::Add(abs1, hn::Abs(p1));
      abs2 = hn::Add(abs2, hn::Abs(p2));
      abs3 = hn::Add(abs3, hn::Abs(p3));
    }
    hn::StoreU(sum0, lanes, dot + j);
    hn::StoreU(sum1, lanes, dot + j + L);
    hn::StoreU(sum2, lanes, dot + j + 2 * L);
    hn::StoreU(sum3, lanes, dot + j + 3 * L);
    hn::StoreU(abs0, lanes, mag + j);
    hn::StoreU(abs1, lanes, mag + j + L);
    hn::StoreU(abs2, lanes, mag + j + 2 * L);
    hn::StoreU(abs3, lanes, mag + j + 3 * L);
  }
  for (; key_stride == 1 && j + L <= n; j += L) {  // then a vector of keys per d
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

void BoundValueSums(const double* p, const double* f_row, double l, const double* v,
                    extent_t first, extent_t last, extent_t D, double* c, double* f, double* o,
                    double* vmax) {
  const hn::ScalableTag<double> lanes;
  const auto L = static_cast<extent_t>(hn::Lanes(lanes));
  const extent_t body = D - D % L;
  for (extent_t j = first; j < last; ++j) {
    const double P = p[j] / l, F = f_row[j];
    const double* vj = v + j * D;
    const auto Pv = hn::Set(lanes, P), Fv = hn::Set(lanes, F);
    for (extent_t d = 0; d < body; d += L) {
      const auto vv = hn::LoadU(lanes, vj + d), av = hn::Abs(vv);
      const auto pa = hn::Mul(Pv, av);
      hn::StoreU(hn::Add(hn::LoadU(lanes, c + d), pa), lanes, c + d);
      hn::StoreU(hn::Add(hn::LoadU(lanes, f + d), hn::Mul(pa, Fv)), lanes, f + d);
      hn::StoreU(hn::Add(hn::LoadU(lanes, o + d), hn::Mul(Pv, vv)), lanes, o + d);
      // std::max(m, x): x only where m < x (a NaN |V| leaves m), as below.
      const auto m = hn::LoadU(lanes, vmax + d);
      hn::StoreU(hn::IfThenElse(hn::Lt(m, av), av, m), lanes, vmax + d);
    }
    for (extent_t d = body; d < D; ++d) {
      const double vv = vj[d];
      c[d] += P * std::fabs(vv);
      f[d] += P * std::fabs(vv) * F;
      o[d] += P * vv;
      vmax[d] = std::max(vmax[d], std::fabs(vv));
    }
  }
}

}  // namespace moacert::oracle::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::oracle::detail {

HWY_EXPORT(BoundDots);
HWY_EXPORT(BoundValueSums);

void bound_dots(const double* a, const double* x, moa::extent_t key_stride, moa::extent_t d_stride,
                moa::extent_t n, moa::extent_t D, double* dot, double* mag) {
  HWY_DYNAMIC_DISPATCH(BoundDots)(a, x, key_stride, d_stride, n, D, dot, mag);
}

void bound_value_sums(const double* p, const double* f_row, double l, const double* v,
                      moa::extent_t first, moa::extent_t last, moa::extent_t D, double* c,
                      double* f, double* o, double* vmax) {
  HWY_DYNAMIC_DISPATCH(BoundValueSums)(p, f_row, l, v, first, last, D, c, f, o, vmax);
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
