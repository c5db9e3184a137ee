// The double-double pass's reductions (detail/dd_interval.hpp), vectorised
// with Highway: compiled once per target (foreach_target.h), the target
// chosen at run time by HWY_DYNAMIC_DISPATCH, as fast_reductions.cpp.
//
// Bit for bit: each lane holds one of the independent sums (dots: one key j
// per lane, d ascending; weighted_sum: one column d per lane, j ascending)
// and runs on it DDInterval's operator* and operator+ as written, step by
// step, in the plain loops' order, with the broadcast factor as the left
// operand as there. Every step is an IEEE operation rounded to nearest,
// lane by lane, so each lane's ends are the scalar's. Branches become
// selects; a lane whose interval became NaN (no enclosure) is marked and
// written as DDInterval::nan() at the end, as the scalar operations return
// it at once and keep it. The right operand x is a point (checked first),
// which takes operator*'s sign cases down to one: l = (x >= 0 ? a.lo : a.hi)
// · x, h = (x >= 0 ? a.hi : a.lo) · x.
//
// TwoProd needs a fused multiply-add: a target without one (Highway's
// HWY_NATIVE_FMA 0) declines and the plain loops run. This file is
// compiled, as dd_pass.cpp, with -ffp-contract=off and runs under the
// pass's round-to-nearest.

#ifndef MOACERT_DD_REDUCTIONS_ONCE
#define MOACERT_DD_REDUCTIONS_ONCE

#include <cstdint>
#include <vector>

#include "oracle/detail/dd_interval.hpp"

#endif  // MOACERT_DD_REDUCTIONS_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "oracle/dd_reductions.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::oracle::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using moa::extent_t;

using Lanes = hn::ScalableTag<double>;
using V = hn::Vec<Lanes>;
using Mask = hn::Mask<Lanes>;
constexpr std::size_t kMaxLanes = HWY_MAX_BYTES / sizeof(double);

static_assert(sizeof(DDInterval) == 4 * sizeof(double),
              "DDInterval is {lo.hi, lo.lo, hi.hi, hi.lo}");

// Whether x's elements (rows of `row_stride` intervals, D contiguous) are
// all points.
bool all_points(const DDInterval* x, extent_t row_stride, extent_t rows, extent_t D) {
  for (extent_t j = 0; j < rows; ++j)
    for (extent_t k = 0; k < D; ++k)
      if (!x[j * row_stride + k].is_point()) return false;
  return true;
}

#if HWY_NATIVE_FMA

// A double-double per lane.
struct DDV {
  V hi, lo;
};

// dd_interval.hpp's error-free transformations and double-word algorithms,
// lane by lane, operation for operation.
HWY_INLINE DDV two_sum(V a, V b) {
  const V s = hn::Add(a, b), bb = hn::Sub(s, a);
  return {s, hn::Add(hn::Sub(a, hn::Sub(s, bb)), hn::Sub(b, bb))};
}
HWY_INLINE DDV fast_two_sum(V a, V b) {
  const V s = hn::Add(a, b);
  return {s, hn::Sub(b, hn::Sub(s, a))};
}
HWY_INLINE DDV two_prod(V a, V b) {
  const V p = hn::Mul(a, b);
  return {p, hn::MulAdd(a, b, hn::Neg(p))};  // std::fma(a, b, -p)
}
HWY_INLINE DDV dw_add(const DDV& x, const DDV& y) {
  const DDV s = two_sum(x.hi, y.hi), t = two_sum(x.lo, y.lo);
  const DDV v = fast_two_sum(s.hi, hn::Add(s.lo, t.hi));
  return fast_two_sum(v.hi, hn::Add(t.lo, v.lo));
}
HWY_INLINE DDV dw_mul(const DDV& x, const DDV& y) {
  const DDV c = two_prod(x.hi, y.hi);
  const V tl0 = hn::Mul(x.lo, y.lo);
  const V tl1 = hn::MulAdd(x.hi, y.lo, tl0);
  const V cl2 = hn::MulAdd(x.lo, y.hi, tl1);
  return fast_two_sum(c.hi, hn::Add(c.lo, cl2));
}

// DDInterval::in_range and is_double.
HWY_INLINE Mask in_range(Lanes d, const DDV& x) {
  return hn::And(hn::Le(hn::Abs(x.hi), hn::Set(d, DDInterval::kLimit)), hn::IsFinite(x.lo));
}
HWY_INLINE Mask is_double(Lanes d, const DDV& x) {
  return hn::Eq(x.lo, hn::Zero(d));
}

// DDInterval::moved: z moved down (`up` false) or up by 2^-96 |z| + 2^-1020.
HWY_INLINE DDV moved(Lanes d, const DDV& z, bool up) {
  const V by = hn::Add(hn::Mul(hn::Abs(z.hi), hn::Set(d, 0x1p-96)), hn::Set(d, 0x1p-1020));
  return two_sum(z.hi, hn::Add(z.lo, up ? by : hn::Neg(by)));  // sign · by: ±1 exact
}

// One interval per lane, and the lanes where it is NaN.
struct IV {
  DDV lo, hi;
  Mask nan;
};

// DDInterval::of(l, h, exact) lane by lane.
HWY_INLINE IV of(Lanes d, const DDV& l, const DDV& h, Mask exact, Mask nan) {
  const Mask bad = hn::Or(nan, hn::Not(hn::And(in_range(d, l), in_range(d, h))));
  const DDV ml = moved(d, l, false), mh = moved(d, h, true);
  return {{hn::IfThenElse(exact, l.hi, ml.hi), hn::IfThenElse(exact, l.lo, ml.lo)},
          {hn::IfThenElse(exact, h.hi, mh.hi), hn::IfThenElse(exact, h.lo, mh.lo)},
          bad};
}

// DDInterval::product(end, x, exact) with x a point per lane: {0, 0} for a
// zero factor (exact untouched), else dw_mul, exact while both are doubles.
HWY_INLINE DDV product(Lanes d, const DDV& end, const DDV& x, Mask& exact) {
  const Mask zero = hn::Or(hn::Eq(end.hi, hn::Zero(d)), hn::Eq(x.hi, hn::Zero(d)));
  exact = hn::And(exact, hn::Or(zero, hn::And(is_double(d, end), is_double(d, x))));
  const DDV p = dw_mul(end, x);
  return {hn::IfThenZeroElse(zero, p.hi), hn::IfThenZeroElse(zero, p.lo)};
}

// a · x (operator*, a broadcast, x a point per lane); `a_bad`: a is NaN or
// out of range, which makes every lane NaN.
HWY_INLINE IV times_point(Lanes d, const DDInterval& a, bool a_bad, const DDV& x) {
  const Mask x_bad = hn::Not(in_range(d, x));  // a point: its one end
  const Mask nan = a_bad ? hn::Not(hn::FirstN(d, 0)) : x_bad;
  // sign(x) >= 0 picks a.lo for the lower end, a.hi for the upper.
  const Mask pos = hn::Ge(x.hi, hn::Zero(d));
  const DDV alo{hn::Set(d, a.lo.hi), hn::Set(d, a.lo.lo)},
      ahi{hn::Set(d, a.hi.hi), hn::Set(d, a.hi.lo)};
  const DDV l1{hn::IfThenElse(pos, alo.hi, ahi.hi), hn::IfThenElse(pos, alo.lo, ahi.lo)};
  const DDV h1{hn::IfThenElse(pos, ahi.hi, alo.hi), hn::IfThenElse(pos, ahi.lo, alo.lo)};
  Mask exact = hn::Not(hn::FirstN(d, 0));
  const DDV l = product(d, l1, x, exact);
  const DDV h = product(d, h1, x, exact);
  return of(d, l, h, exact, nan);
}

// acc + t (operator+).
HWY_INLINE IV add(Lanes d, const IV& acc, const IV& t) {
  const Mask nan = hn::Or(acc.nan, t.nan);
  const DDV l = dw_add(acc.lo, t.lo), h = dw_add(acc.hi, t.hi);
  const Mask exact = hn::And(hn::And(is_double(d, acc.lo), is_double(d, t.lo)),
                             hn::And(is_double(d, acc.hi), is_double(d, t.hi)));
  return of(d, l, h, exact, nan);
}

// DDInterval's operator* and operator+ read a's NaN and range once.
bool bad(const DDInterval& a) {
  return a.is_nan() || !DDInterval::in_range(a.lo) || !DDInterval::in_range(a.hi);
}

HWY_INLINE IV zero(Lanes d) {
  return {{hn::Zero(d), hn::Zero(d)}, {hn::Zero(d), hn::Zero(d)}, hn::FirstN(d, 0)};
}

// The lanes' intervals into out[0], out[stride], ... (NaN lanes as
// DDInterval::nan()).
HWY_INLINE void store(Lanes d, const IV& v, DDInterval* out, extent_t stride) {
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  HWY_ALIGN double lh[kMaxLanes], ll[kMaxLanes], hh[kMaxLanes], hl[kMaxLanes], n[kMaxLanes];
  hn::Store(v.lo.hi, d, lh);
  hn::Store(v.lo.lo, d, ll);
  hn::Store(v.hi.hi, d, hh);
  hn::Store(v.hi.lo, d, hl);
  hn::Store(hn::IfThenElseZero(v.nan, hn::Set(d, 1.0)), d, n);
  for (extent_t k = 0; k < L; ++k)
    out[k * stride] =
        n[k] != 0 ? DDInterval::nan() : DDInterval(DD{lh[k], ll[k]}, DD{hh[k], hl[k]});
}

// The points x[0], x[stride], ... one per lane.
HWY_INLINE DDV load_points(Lanes d, const DDInterval* x, extent_t stride) {
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  HWY_ALIGN double h[kMaxLanes], l[kMaxLanes];
  for (extent_t k = 0; k < L; ++k) {
    h[k] = x[k * stride].lo.hi;
    l[k] = x[k * stride].lo.lo;
  }
  return {hn::Load(d, h), hn::Load(d, l)};
}

bool Dots(const DDInterval* a, const DDInterval* x, extent_t row_stride, extent_t rows, extent_t D,
          DDInterval* out) {
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  if (rows < L || !all_points(x, row_stride, rows, D)) return false;
  std::vector<std::uint8_t> a_bad(static_cast<std::size_t>(D));
  for (extent_t k = 0; k < D; ++k) a_bad[static_cast<std::size_t>(k)] = bad(a[k]);
  const extent_t body = rows - rows % L;  // the lanes' keys; the tail is scalar
  for (extent_t j = 0; j < body; j += L) {
    IV acc = zero(d);
    const DDInterval* xj = x + j * row_stride;
    for (extent_t k = 0; k < D; ++k)
      acc = add(d, acc,
                times_point(d, a[k], a_bad[static_cast<std::size_t>(k)] != 0,
                            load_points(d, xj + k, row_stride)));
    store(d, acc, out + j, 1);
  }
  for (extent_t j = body; j < rows; ++j) {  // plain_dots' loop
    DDInterval dot(0.0);
    for (extent_t k = 0; k < D; ++k) dot += a[k] * x[j * row_stride + k];
    out[j] = dot;
  }
  return true;
}

bool WeightedSum(const DDInterval* w, const DDInterval* x, extent_t row_stride, extent_t rows,
                 extent_t D, DDInterval* out) {
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  if (D < L || !all_points(x, row_stride, rows, D)) return false;
  std::vector<std::uint8_t> w_bad(static_cast<std::size_t>(rows));
  for (extent_t j = 0; j < rows; ++j) w_bad[static_cast<std::size_t>(j)] = bad(w[j]);
  const extent_t body = D - D % L;  // the lanes' columns; the tail is scalar
  // Two vectors of columns at a time: two independent chains of additions.
  extent_t k = 0;
  for (; k + 2 * L <= body; k += 2 * L) {
    IV acc0 = zero(d), acc1 = zero(d);
    for (extent_t j = 0; j < rows; ++j) {
      const bool wb = w_bad[static_cast<std::size_t>(j)] != 0;
      const DDInterval* xj = x + j * row_stride + k;
      acc0 = add(d, acc0, times_point(d, w[j], wb, load_points(d, xj, 1)));
      acc1 = add(d, acc1, times_point(d, w[j], wb, load_points(d, xj + L, 1)));
    }
    store(d, acc0, out + k, 1);
    store(d, acc1, out + k + L, 1);
  }
  for (; k < body; k += L) {
    IV acc = zero(d);
    for (extent_t j = 0; j < rows; ++j)
      acc = add(d, acc,
                times_point(d, w[j], w_bad[static_cast<std::size_t>(j)] != 0,
                            load_points(d, x + j * row_stride + k, 1)));
    store(d, acc, out + k, 1);
  }
  for (; k < D; ++k) {  // plain_weighted_sum's loop
    DDInterval acc(0.0);
    for (extent_t j = 0; j < rows; ++j) acc += w[j] * x[j * row_stride + k];
    out[k] = acc;
  }
  return true;
}

#else  // no fused multiply-add: the plain loops

bool Dots(const DDInterval*, const DDInterval*, extent_t, extent_t, extent_t, DDInterval*) {
  return false;
}
bool WeightedSum(const DDInterval*, const DDInterval*, extent_t, extent_t, extent_t, DDInterval*) {
  return false;
}

#endif  // HWY_NATIVE_FMA

}  // namespace moacert::oracle::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::oracle::detail {

HWY_EXPORT(Dots);
HWY_EXPORT(WeightedSum);

bool dd_dots(const DDInterval* a, const DDInterval* x, moa::extent_t row_stride, moa::extent_t rows,
             moa::extent_t D, DDInterval* out) {
  return HWY_DYNAMIC_DISPATCH(Dots)(a, x, row_stride, rows, D, out);
}

bool dd_weighted_sum(const DDInterval* w, const DDInterval* x, moa::extent_t row_stride,
                     moa::extent_t rows, moa::extent_t D, DDInterval* out) {
  return HWY_DYNAMIC_DISPATCH(WeightedSum)(w, x, row_stride, rows, D, out);
}

}  // namespace moacert::oracle::detail
#endif  // HWY_ONCE
