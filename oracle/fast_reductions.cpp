// The first pass's reductions (detail/fast_interval.hpp), vectorised with
// Highway: compiled once per target (foreach_target.h), the target chosen
// at run time by HWY_DYNAMIC_DISPATCH, as the kernels are.
//
// Rigour: the lanes hold the ends of intervals, and every operation is the
// scalar FastInterval's, lane by lane, under the same round-upward mode
// (SIMD arithmetic obeys MXCSR, which fesetround sets): upper ends rounded
// up, lower ends by down(x op y) = -((-x) op' y) (Neg flips the sign bit:
// exact). This file is compiled, as fast_pass.cpp, with -frounding-math
// -ffp-contract=off: no folding under an assumed mode, no FMA contraction
// (Mul and Add are written apart on purpose). The pass's run-time check
// (fast_pass.cpp) includes one of these dot products.
//
//   weighted_sum: lanes run along d, j ascending, in blocks of kBlock rows
//                 each summed from zero and then added to the total.
//   dots:         lanes run along d, each lane a partial sum, the lanes then
//                 summed (lower ends negated, so every addition rounds
//                 outward).
//   sum:          each lane sums every L-th term in blocks of kBlock, the
//                 lanes then summed.
// Other orders than the scalar loops', the same exact sums enclosed. Why
// blocks: each addition widens an end by up to an ulp of the running sum,
// so n terms in a row widen it by about n ulps of the total, where blocks
// of b give about b + n/b (and lanes divide both by L). In a row at a
// time, the forward rows of a generated backward case at N = M = 2048 sent
// 1393 of 16384 rows through the double-double pass to decide an element's
// rounding; in blocks, 65 (docs/performance-history.md, "Allowances and blocked sums").

#ifndef MOACERT_FAST_REDUCTIONS_ONCE
#define MOACERT_FAST_REDUCTIONS_ONCE

#include <algorithm>
#include <limits>

#include "oracle/detail/fast_interval.hpp"

#endif  // MOACERT_FAST_REDUCTIONS_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "oracle/fast_reductions.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::oracle::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using moa::extent_t;

using Lanes = hn::ScalableTag<double>;
using V = hn::Vec<Lanes>;

// Terms per block (the b above): about sqrt(M / L) at M = 4096 on AVX-512.
constexpr extent_t kBlock = 32;

// The ends of one interval per lane.
struct Ends {
  V lo, hi;
};

HWY_INLINE Ends load(Lanes d, const FastInterval* p) {
  static_assert(sizeof(FastInterval) == 2 * sizeof(double), "FastInterval is {lo, hi}");
  Ends e;
  hn::LoadInterleaved2(d, reinterpret_cast<const double*>(p), e.lo, e.hi);
  return e;
}

HWY_INLINE void store(Lanes d, const Ends& e, FastInterval* p) {
  hn::StoreInterleaved2(e.lo, e.hi, d, reinterpret_cast<double*>(p));
}

HWY_INLINE Ends broadcast(Lanes d, const FastInterval& x) {
  return {hn::Set(d, x.lo), hn::Set(d, x.hi)};
}

// down(x·y) = -((-x)·y) under round-upward.
HWY_INLINE V mul_down(V x, V y) {
  return hn::Neg(hn::Mul(hn::Neg(x), y));
}

// a + b: FastInterval's operator+ lane by lane (a NaN end stays NaN; the
// caller makes both ends NaN at the end, as FastInterval::checked does).
HWY_INLINE Ends add(const Ends& a, const Ends& b) {
  return {hn::Neg(hn::Sub(hn::Neg(a.lo), b.lo)), hn::Add(a.hi, b.hi)};
}

// a · b: the extremes of the endpoint products lane by lane, NaN where any
// of them is NaN, as FastInterval's operator*. Points (the inputs) take two
// products, an interval times points four (P · V), intervals eight.
HWY_INLINE Ends mul(Lanes d, const Ends& a, const Ends& b) {
  const V n = hn::Set(d, std::numeric_limits<double>::quiet_NaN());
  const bool b_points = hn::AllTrue(d, hn::Eq(b.lo, b.hi));
  if (b_points && hn::AllTrue(d, hn::Eq(a.lo, a.hi)))
    return {mul_down(a.lo, b.lo), hn::Mul(a.lo, b.lo)};
  if (b_points) {
    const V d1 = mul_down(a.lo, b.lo), d2 = mul_down(a.hi, b.lo);
    const V u1 = hn::Mul(a.lo, b.lo), u2 = hn::Mul(a.hi, b.lo);
    const auto nan = hn::Or(hn::IsNaN(d1), hn::IsNaN(d2));
    return {hn::IfThenElse(nan, n, hn::Min(d1, d2)), hn::IfThenElse(nan, n, hn::Max(u1, u2))};
  }
  const V d1 = mul_down(a.lo, b.lo), d2 = mul_down(a.lo, b.hi), d3 = mul_down(a.hi, b.lo),
          d4 = mul_down(a.hi, b.hi);
  const V u1 = hn::Mul(a.lo, b.lo), u2 = hn::Mul(a.lo, b.hi), u3 = hn::Mul(a.hi, b.lo),
          u4 = hn::Mul(a.hi, b.hi);
  const auto nan =
      hn::Or(hn::Or(hn::IsNaN(d1), hn::IsNaN(d2)), hn::Or(hn::IsNaN(d3), hn::IsNaN(d4)));
  return {hn::IfThenElse(nan, n, hn::Min(hn::Min(d1, d2), hn::Min(d3, d4))),
          hn::IfThenElse(nan, n, hn::Max(hn::Max(u1, u2), hn::Max(u3, u4)))};
}

// The lanes' intervals summed: lo = -(Σ -lo_k), hi = Σ hi_k, each addition
// rounded up.
HWY_INLINE FastInterval sum_lanes(Lanes d, const Ends& e) {
  return FastInterval(-hn::GetLane(hn::SumOfLanes(d, hn::Neg(e.lo))),
                      hn::GetLane(hn::SumOfLanes(d, e.hi)));
}

void Dots(const FastInterval* a, const FastInterval* x, extent_t row_stride, extent_t rows,
          extent_t D, FastInterval* out) {
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  const extent_t body = D - D % L;  // the lanes' part; the tail d in [body, D) is scalar
  // The tail and the lanes' sum, then both ends NaN if either is.
  auto finish = [&](const Ends& acc, const FastInterval* xj) {
    FastInterval dot = sum_lanes(d, acc);
    for (extent_t k = body; k < D; ++k) dot += a[k] * xj[k];
    return FastInterval::checked(dot.lo, dot.hi);
  };
  // Two rows at a time: two independent chains of additions, one load of a.
  extent_t j = 0;
  for (; j + 2 <= rows; j += 2) {
    const FastInterval *x0 = x + j * row_stride, *x1 = x0 + row_stride;
    Ends acc0{hn::Zero(d), hn::Zero(d)}, acc1 = acc0;
    for (extent_t k = 0; k < body; k += L) {
      const Ends ak = load(d, a + k);
      acc0 = add(acc0, mul(d, ak, load(d, x0 + k)));
      acc1 = add(acc1, mul(d, ak, load(d, x1 + k)));
    }
    out[j] = finish(acc0, x0);
    out[j + 1] = finish(acc1, x1);
  }
  for (; j < rows; ++j) {
    const FastInterval* xj = x + j * row_stride;
    Ends acc{hn::Zero(d), hn::Zero(d)};
    for (extent_t k = 0; k < body; k += L) acc = add(acc, mul(d, load(d, a + k), load(d, xj + k)));
    out[j] = finish(acc, xj);
  }
}

void WeightedSum(const FastInterval* w, const FastInterval* x, extent_t row_stride, extent_t rows,
                 extent_t D, FastInterval* out) {
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  const extent_t body = D - D % L;
  const Ends zero{hn::Zero(d), hn::Zero(d)};
  // out holds the totals. Blocks of rows outermost: a block (kBlock rows,
  // 64 KiB of intervals at D = 128) stays in cache while each vector of
  // columns sums its share, where sweeping every row once per vector of
  // columns read x from memory D / L times; each element's operations and
  // their order are the same either way.
  for (extent_t k = 0; k < D; ++k) out[k] = FastInterval(0.0);
  for (extent_t first = 0; first < rows; first += kBlock) {
    const extent_t last = std::min(first + kBlock, rows);
    // Two vectors of columns at a time: two independent chains of additions.
    extent_t k = 0;
    for (; k + 2 * L <= body; k += 2 * L) {
      Ends acc0 = zero, acc1 = zero;
      for (extent_t j = first; j < last; ++j) {
        const Ends wj = broadcast(d, w[j]);
        const FastInterval* xj = x + j * row_stride + k;
        acc0 = add(acc0, mul(d, wj, load(d, xj)));
        acc1 = add(acc1, mul(d, wj, load(d, xj + L)));
      }
      store(d, add(load(d, out + k), acc0), out + k);
      store(d, add(load(d, out + k + L), acc1), out + k + L);
    }
    for (; k < body; k += L) {
      Ends acc = zero;
      for (extent_t j = first; j < last; ++j)
        acc = add(acc, mul(d, broadcast(d, w[j]), load(d, x + j * row_stride + k)));
      store(d, add(load(d, out + k), acc), out + k);
    }
    for (; k < D; ++k) {
      FastInterval acc(0.0);
      for (extent_t j = first; j < last; ++j) acc += w[j] * x[j * row_stride + k];
      out[k] += acc;
    }
  }
  for (extent_t k = 0; k < body; ++k) out[k] = FastInterval::checked(out[k].lo, out[k].hi);
}

FastInterval Sum(const FastInterval* x, extent_t n) {
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  const extent_t body = n - n % L;
  const Ends zero{hn::Zero(d), hn::Zero(d)};
  Ends total = zero;
  for (extent_t first = 0; first < body; first += kBlock * L) {
    Ends acc = zero;
    for (extent_t j = first; j < std::min(first + kBlock * L, body); j += L)
      acc = add(acc, load(d, x + j));
    total = add(total, acc);
  }
  FastInterval sum = sum_lanes(d, total);
  for (extent_t j = body; j < n; ++j) sum += x[j];
  return FastInterval::checked(sum.lo, sum.hi);
}

}  // namespace moacert::oracle::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::oracle::detail {

HWY_EXPORT(Dots);
HWY_EXPORT(WeightedSum);
HWY_EXPORT(Sum);

void interval_dots(const FastInterval* a, const FastInterval* x, moa::extent_t row_stride,
                   moa::extent_t rows, moa::extent_t D, FastInterval* out) {
  HWY_DYNAMIC_DISPATCH(Dots)(a, x, row_stride, rows, D, out);
}

void interval_weighted_sum(const FastInterval* w, const FastInterval* x, moa::extent_t row_stride,
                           moa::extent_t rows, moa::extent_t D, FastInterval* out) {
  HWY_DYNAMIC_DISPATCH(WeightedSum)(w, x, row_stride, rows, D, out);
}

FastInterval interval_sum(const FastInterval* x, moa::extent_t n) {
  return HWY_DYNAMIC_DISPATCH(Sum)(x, n);
}

}  // namespace moacert::oracle::detail
#endif  // HWY_ONCE
