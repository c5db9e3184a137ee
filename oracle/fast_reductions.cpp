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
//   DotsRows, WeightedSums: several query rows, each row's operations
//                 those of Dots or WeightedSum for it alone, a block of
//                 keys meeting every row while it is in cache.
//   ShiftedExps:  exp(x_j - shift), lanes along j: the scalar operators'
//                 and exp_by_taylor's operations, bit for bit.
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

// Lane `lane` of e as an interval.
HWY_INLINE FastInterval in_lane(const Ends& e, extent_t lane) {
  return FastInterval(hn::ExtractLane(e.lo, std::size_t(lane)),
                      hn::ExtractLane(e.hi, std::size_t(lane)));
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

// out_j for j in [first, last): the dots of keys first .. last - 1.
HWY_INLINE void DotsOfKeys(const FastInterval* a, const FastInterval* x, extent_t row_stride,
                           extent_t first, extent_t last, extent_t D, FastInterval* out) {
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
  extent_t j = first;
  for (; j + 2 <= last; j += 2) {
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
  for (; j < last; ++j) {
    const FastInterval* xj = x + j * row_stride;
    Ends acc{hn::Zero(d), hn::Zero(d)};
    for (extent_t k = 0; k < body; k += L) acc = add(acc, mul(d, load(d, a + k), load(d, xj + k)));
    out[j] = finish(acc, xj);
  }
}

void Dots(const FastInterval* a, const FastInterval* x, extent_t row_stride, extent_t rows,
          extent_t D, FastInterval* out) {
  DotsOfKeys(a, x, row_stride, 0, rows, D, out);
}

// Keys per block when several query rows share them: 64 keys (128 KiB of
// intervals at D = 128) stay in cache while every row takes its dots.
constexpr extent_t kKeysPerBlock = 64;

void DotsRows(const FastInterval* const* a, extent_t R, const FastInterval* x, extent_t row_stride,
              const extent_t* rows, extent_t D, FastInterval* const* out) {
  const extent_t most = R == 0 ? 0 : *std::max_element(rows, rows + R);
  for (extent_t first = 0; first < most; first += kKeysPerBlock)
    for (extent_t r = 0; r < R; ++r)
      if (rows[r] > first)
        DotsOfKeys(a[r], x, row_stride, first, std::min(first + kKeysPerBlock, rows[r]), D, out[r]);
}

// A vector of points: both ends the loaded values (the weights of
// mlp.swiglu, read from the case as doubles; AddBlock's X = double).
HWY_INLINE Ends load(Lanes d, const double* p) {
  const V v = hn::LoadU(d, p);
  return {v, v};
}

// out += the block of rows [first, last), summed from zero: lanes along d,
// j ascending. x holds intervals, or points (X = double).
template <class X>
HWY_INLINE void AddBlock(const FastInterval* w, const X* x, extent_t row_stride, extent_t first,
                         extent_t last, extent_t D, FastInterval* out) {
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  const extent_t body = D - D % L;
  const Ends zero{hn::Zero(d), hn::Zero(d)};
  // Two vectors of columns at a time: two independent chains of additions.
  extent_t k = 0;
  for (; k + 2 * L <= body; k += 2 * L) {
    Ends acc0 = zero, acc1 = zero;
    for (extent_t j = first; j < last; ++j) {
      const Ends wj = broadcast(d, w[j]);
      const X* xj = x + j * row_stride + k;
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
    for (extent_t j = first; j < last; ++j) acc += w[j] * FastInterval(x[j * row_stride + k]);
    out[k] += acc;
  }
}

// Both ends NaN where either is (the lanes' part: the scalar tail's
// operators already did).
HWY_INLINE void FinishSums(extent_t D, FastInterval* out) {
  const auto L = static_cast<extent_t>(hn::Lanes(Lanes()));
  for (extent_t k = 0; k < D - D % L; ++k) out[k] = FastInterval::checked(out[k].lo, out[k].hi);
}

void WeightedSum(const FastInterval* w, const FastInterval* x, extent_t row_stride, extent_t rows,
                 extent_t D, FastInterval* out) {
  // out holds the totals. Blocks of rows outermost: a block (kBlock rows,
  // 64 KiB of intervals at D = 128) stays in cache while each vector of
  // columns sums its share, where sweeping every row once per vector of
  // columns read x from memory D / L times; each element's operations and
  // their order are the same either way.
  for (extent_t k = 0; k < D; ++k) out[k] = FastInterval(0.0);
  for (extent_t first = 0; first < rows; first += kBlock)
    AddBlock(w, x, row_stride, first, std::min(first + kBlock, rows), D, out);
  FinishSums(D, out);
}

// Each block of rows meets every query row in turn: row r's blocks, and
// their order, are WeightedSum's.
void WeightedSums(const FastInterval* const* w, const FastInterval* x, extent_t row_stride,
                  const extent_t* rows, extent_t R, extent_t D, FastInterval* const* out) {
  for (extent_t r = 0; r < R; ++r)
    for (extent_t k = 0; k < D; ++k) out[r][k] = FastInterval(0.0);
  const extent_t most = R == 0 ? 0 : *std::max_element(rows, rows + R);
  for (extent_t first = 0; first < most; first += kBlock)
    for (extent_t r = 0; r < R; ++r)
      if (rows[r] > first)
        AddBlock(w[r], x, row_stride, first, std::min(first + kBlock, rows[r]), D, out[r]);
  for (extent_t r = 0; r < R; ++r) FinishSums(D, out[r]);
}

// Each row r adds the block x (rows × D points) weighted by w[r]: one
// block of a weighted sum that is WeightedSum's, block for block, with the
// caller reading x a block at a time (fast_mlp.cpp).
void AddPointBlock(const FastInterval* const* w, extent_t R, const double* x, extent_t row_stride,
                   extent_t rows, extent_t D, FastInterval* const* out) {
  for (extent_t r = 0; r < R; ++r) AddBlock(w[r], x, row_stride, 0, rows, D, out[r]);
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

// x_j = exp(x_j - shift): the scalar operators' and exp_by_taylor's
// operations lane by lane, in their order, under the same round-upward
// mode, so each lane's ends are the scalar's bit for bit; std::round (half
// away from zero) is Trunc and a step, 2^k built from its bits. A lane
// exp_by_taylor does not apply to (NaN, past ±limit, r past ±reach, a
// Horner step not positive), and the tail, take the scalar exp.
void ShiftedExps(FastInterval* x, extent_t n, FastInterval shift) {
  using C = ExpConstants;
  const ExpConstants& c = exp_constants();
  auto scalar = [&](extent_t j) { x[j] = exp(x[j] - shift); };
  // k · [ln2_lo_down, ln2_lo_up] by FastInterval's operator* takes the ends
  // by the signs of k and of that interval; one that straddles 0 (not ln 2's
  // remainder) would take its general way: all scalar then.
  if (!(c.ln2_lo_down >= 0 || c.ln2_lo_up <= 0)) {
    for (extent_t j = 0; j < n; ++j) scalar(j);
    return;
  }
  const Lanes d;
  const auto L = static_cast<extent_t>(hn::Lanes(d));
  const V zero = hn::Zero(d), one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
  const V shift_lo = hn::Set(d, shift.lo), shift_hi = hn::Set(d, shift.hi);
  const V ln2_lo_down = hn::Set(d, c.ln2_lo_down), ln2_lo_up = hn::Set(d, c.ln2_lo_up);
  extent_t j = 0;
  for (; j + L <= n; j += L) {
    const Ends in = load(d, x + j);
    // a = x_j - shift (operator-), its ends NaN together (checked).
    const V a_lo = hn::Neg(hn::Add(hn::Neg(in.lo), shift_hi)), a_hi = hn::Sub(in.hi, shift_lo);
    auto ok = hn::And(hn::Ge(a_lo, hn::Set(d, -C::limit)), hn::Le(a_hi, hn::Set(d, C::limit)));
    const auto exact_one = hn::And(hn::Eq(a_lo, zero), hn::Eq(a_hi, zero));
    // k = round((a.lo / 2 + a.hi / 2) · 1/ln 2), half away from zero
    const V m = hn::Mul(hn::Add(hn::Div(a_lo, hn::Set(d, 2.0)), hn::Div(a_hi, hn::Set(d, 2.0))),
                        hn::Set(d, c.inv_ln2));
    const V t = hn::Trunc(m);
    const V k =
        hn::IfThenElse(hn::Ge(hn::Abs(hn::Sub(m, t)), half), hn::Add(t, hn::CopySign(one, m)), t);
    // r = a - [k·ln2_hi] - [k]·[ln2_lo_down, ln2_lo_up]
    const V t1 = hn::Mul(k, hn::Set(d, c.ln2_hi));
    const V b_lo = hn::Neg(hn::Add(hn::Neg(a_lo), t1)), b_hi = hn::Sub(a_hi, t1);
    const auto k_up = hn::Ge(k, zero);  // operator*'s a.lo >= 0 (else a.hi <= 0)
    const V p_lo = hn::IfThenElse(k_up, mul_down(k, ln2_lo_down), mul_down(k, ln2_lo_up));
    const V p_hi = hn::IfThenElse(k_up, hn::Mul(k, ln2_lo_up), hn::Mul(k, ln2_lo_down));
    const V r_lo = hn::Neg(hn::Add(hn::Neg(b_lo), p_hi)), r_hi = hn::Sub(b_hi, p_lo);
    ok = hn::And(ok,
                 hn::And(hn::Ge(r_lo, hn::Set(d, -C::reach)), hn::Le(r_hi, hn::Set(d, C::reach))));
    // Horner, p = c_n + r·p, the extremes of r·p by the signs of r's ends.
    V e_lo = hn::Set(d, c.coef_down[C::degree]), e_hi = hn::Set(d, c.coef_up[C::degree]);
    const auto r_lo_up = hn::Ge(r_lo, zero), r_hi_up = hn::Ge(r_hi, zero);
    for (int k_n = C::degree - 1; k_n >= 0; --k_n) {
      const V lo = hn::IfThenElse(r_lo_up, mul_down(e_lo, r_lo), mul_down(e_hi, r_lo));
      const V hi = hn::IfThenElse(r_hi_up, hn::Mul(e_hi, r_hi), hn::Mul(e_lo, r_hi));
      e_lo = hn::Neg(hn::Sub(hn::Neg(lo), hn::Set(d, c.coef_down[k_n])));
      e_hi = hn::Add(hi, hn::Set(d, c.coef_up[k_n]));
      ok = hn::And(ok, hn::Gt(e_lo, zero));
    }
    // + [-remainder, remainder] (operator+), then · 2^k (exact)
    e_lo = hn::Neg(hn::Sub(hn::Neg(e_lo), hn::Set(d, -c.remainder)));
    e_hi = hn::Add(e_hi, hn::Set(d, c.remainder));
    const hn::RebindToSigned<Lanes> di;
    const V two_k = hn::BitCast(
        d, hn::ShiftLeft<52>(hn::Add(hn::ConvertTo(di, k), hn::Set(di, std::int64_t{1023}))));
    const Ends out{hn::IfThenElse(exact_one, one, hn::Mul(e_lo, two_k)),
                   hn::IfThenElse(exact_one, one, hn::Mul(e_hi, two_k))};
    store(d, out, x + j);
    // The lanes the Taylor way did not take (an exact 1 did): scalar.
    const auto done = hn::Or(ok, exact_one);
    if (!hn::AllTrue(d, done)) {
      for (extent_t lane = 0; lane < L; ++lane) {
        if (hn::ExtractLane(hn::VecFromMask(d, done), std::size_t(lane)) != 0) continue;
        x[j + lane] = in_lane(in, lane);
        scalar(j + lane);
      }
    }
  }
  for (; j < n; ++j) scalar(j);
}

}  // namespace moacert::oracle::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::oracle::detail {

HWY_EXPORT(Dots);
HWY_EXPORT(DotsRows);
HWY_EXPORT(WeightedSum);
HWY_EXPORT(WeightedSums);
HWY_EXPORT(AddPointBlock);
HWY_EXPORT(Sum);
HWY_EXPORT(ShiftedExps);

void interval_dots(const FastInterval* a, const FastInterval* x, moa::extent_t row_stride,
                   moa::extent_t rows, moa::extent_t D, FastInterval* out) {
  HWY_DYNAMIC_DISPATCH(Dots)(a, x, row_stride, rows, D, out);
}

void interval_weighted_sum(const FastInterval* w, const FastInterval* x, moa::extent_t row_stride,
                           moa::extent_t rows, moa::extent_t D, FastInterval* out) {
  HWY_DYNAMIC_DISPATCH(WeightedSum)(w, x, row_stride, rows, D, out);
}

void interval_dots_rows(const FastInterval* const* a, moa::extent_t R, const FastInterval* x,
                        moa::extent_t row_stride, const moa::extent_t* rows, moa::extent_t D,
                        FastInterval* const* out) {
  HWY_DYNAMIC_DISPATCH(DotsRows)(a, R, x, row_stride, rows, D, out);
}

void interval_weighted_sums(const FastInterval* const* w, const FastInterval* x,
                            moa::extent_t row_stride, const moa::extent_t* rows, moa::extent_t R,
                            moa::extent_t D, FastInterval* const* out) {
  HWY_DYNAMIC_DISPATCH(WeightedSums)(w, x, row_stride, rows, R, D, out);
}

void interval_add_point_block(const FastInterval* const* w, moa::extent_t R, const double* x,
                              moa::extent_t row_stride, moa::extent_t rows, moa::extent_t D,
                              FastInterval* const* out) {
  HWY_DYNAMIC_DISPATCH(AddPointBlock)(w, R, x, row_stride, rows, D, out);
}

FastInterval interval_sum(const FastInterval* x, moa::extent_t n) {
  return HWY_DYNAMIC_DISPATCH(Sum)(x, n);
}

void interval_shifted_exps(FastInterval* x, moa::extent_t n, const FastInterval& shift) {
  HWY_DYNAMIC_DISPATCH(ShiftedExps)(x, n, shift);
}

}  // namespace moacert::oracle::detail
#endif  // HWY_ONCE
