// The oracle's first pass: intervals of hardware doubles with directed
// rounding. Every operation returns an interval that contains the exact
// result of the operation applied to any points of its operands, so the DNF
// instantiated with FastInterval encloses the exact real value of each
// output (docs/oracle.md#first-pass).
//
// Only oracle/fast_pass.cpp, oracle/fast_mlp.cpp and
// oracle/fast_reductions.cpp include this header: they are compiled with
// -frounding-math and run these operations under an UpwardRounding guard.
// Upper bounds are rounded up directly; lower bounds use the negation trick
// down(x op y) = -up(-x op' y), so the whole pass runs in one rounding mode.
#pragma once

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "oracle/detail/scoped_rounding.hpp"
#include "reference/dnf/reductions.hpp"
#include "reference/dnf/scalar.hpp"

namespace moacert::oracle::detail {

#if !defined(__FLT_EVAL_METHOD__) || __FLT_EVAL_METHOD__ != 0
#error "the fast pass needs double operations evaluated in double (FLT_EVAL_METHOD 0)"
#endif

// Which first pass runs on the calling thread (fast_pass.cpp sets it for
// the threads of a pass): the vectorised one, or the reference, the pass as
// first written (scalar loops, every exp from MPFR), kept to measure the
// vectorised one against (bench/oracle_bench, tests/oracle/test_fast_pass).
enum class FirstPassKind : std::uint8_t { vectorised, reference };
FirstPassKind& first_pass_kind();

// exp and log bounds: libm is not correctly rounded, so these come from
// MPFR at 53 bits with MPFR_RNDD / MPFR_RNDU (fast_bounds.cpp).
double exp_down(double x);
double exp_up(double x);
double log_down(double x);
double log_up(double x);

// The constants of the first pass's own exp (exp_by_taylor below), computed
// once by MPFR with directed rounding (fast_bounds.cpp):
//   exp(x) = 2^k · exp(r),  r = x - k·ln 2,  |r| <= reach,
//   exp(r) = Σ_{n <= degree} r^n / n!  +  R,  |R| <= remainder
// (Lagrange: |R| <= reach^(degree+1) / (degree+1)! · e^reach).
struct ExpConstants {
  static constexpr int degree = 14;
  static constexpr double reach = 0.35;  // > ln 2 / 2: k = round(x / ln 2) reaches it
  static constexpr double limit = 690;   // |x| <= limit: 2^k · exp(r) stays normal
  double ln2_hi;                         // ln 2 rounded to 32 bits: k · ln2_hi is exact
  double ln2_lo_down, ln2_lo_up;         // ln 2 - ln2_hi, rounded down and up
  double inv_ln2;                        // about 1 / ln 2 (it only chooses k)
  double coef_down[degree + 1], coef_up[degree + 1];  // 1 / n!, rounded down and up
  double remainder;                                   // the bound on |R|, rounded up
};
const ExpConstants& exp_constants();

// An upper bound of exp's Taylor remainder over |r| <= reach after the
// terms through r^degree (Lagrange): reach^(degree+1) / (degree+1)! ·
// e^reach, every step rounded up in MPFR. The first pass's exp and the
// double-double pass's (dd_exp.cpp) both take it.
double exp_taylor_remainder(int degree, double reach);

// [lo, hi] with lo <= x <= hi for the exact value x; a NaN endpoint means
// the operation was undefined somewhere (see docs/oracle.md#non-finite).
struct FastInterval;
bool exp_by_taylor(const FastInterval& a, FastInterval& out);

struct FastInterval {
  double lo = 0, hi = 0;

  FastInterval() = default;
  // A point: every double is exact.
  explicit FastInterval(double x) : lo(x), hi(x) {}
  FastInterval(double l, double h) : lo(l), hi(h) {}

  bool is_nan() const { return std::isnan(lo) || std::isnan(hi); }
  bool is_point() const { return lo == hi; }

  static FastInterval nan() {
    const double n = std::numeric_limits<double>::quiet_NaN();
    return {n, n};
  }
  static FastInterval checked(double l, double h) {
    if (std::isnan(l) || std::isnan(h)) return nan();
    return {l, h};
  }

  friend FastInterval operator-(const FastInterval& a) { return {-a.hi, -a.lo}; }

  friend FastInterval operator+(const FastInterval& a, const FastInterval& b) {
    return checked(-((-a.lo) - b.lo), a.hi + b.hi);
  }
  friend FastInterval operator-(const FastInterval& a, const FastInterval& b) {
    return checked(-((-a.lo) + b.hi), a.hi - b.lo);
  }

  // down(x·y) = -((-x)·y) under round-upward.
  static double mul_down(double x, double y) { return -((-x) * y); }
  static double mul_up(double x, double y) { return x * y; }
  static double div_down(double x, double y) { return -((-x) / y); }
  static double div_up(double x, double y) { return x / y; }

  bool is_finite() const { return std::isfinite(lo) && std::isfinite(hi); }

  friend FastInterval operator*(const FastInterval& a, const FastInterval& b) {
    if (a.is_point() && b.is_point()) return checked(mul_down(a.lo, b.lo), mul_up(a.lo, b.lo));
    // Finite operands of known signs: the extremes are known products (the
    // probabilities, the Horner steps of exp). Infinite ends take the
    // general way, where 0 · inf gives NaN as before.
    if (a.is_finite() && b.is_finite()) {
      if (a.lo >= 0 && b.lo >= 0) return {mul_down(a.lo, b.lo), mul_up(a.hi, b.hi)};
      if (a.lo >= 0 && b.hi <= 0) return {mul_down(a.hi, b.lo), mul_up(a.lo, b.hi)};
      if (a.hi <= 0 && b.lo >= 0) return {mul_down(a.lo, b.hi), mul_up(a.hi, b.lo)};
      if (a.hi <= 0 && b.hi <= 0) return {mul_down(a.hi, b.hi), mul_up(a.lo, b.lo)};
    }
    // The extremes of a product of intervals are among the endpoint products.
    const double d1 = mul_down(a.lo, b.lo), d2 = mul_down(a.lo, b.hi), d3 = mul_down(a.hi, b.lo),
                 d4 = mul_down(a.hi, b.hi);
    const double u1 = mul_up(a.lo, b.lo), u2 = mul_up(a.lo, b.hi), u3 = mul_up(a.hi, b.lo),
                 u4 = mul_up(a.hi, b.hi);
    if (std::isnan(d1) || std::isnan(d2) || std::isnan(d3) || std::isnan(d4)) return nan();
    return extremes(d1, d2, d3, d4, u1, u2, u3, u4);
  }

  // [min d, max u] of endpoint products or quotients none of which is NaN
  // (u_k is NaN exactly when d_k is), so plain comparisons serve; libm's
  // fmin and fmax are calls that the pass would spend a tenth of its time in.
  static FastInterval extremes(double d1, double d2, double d3, double d4, double u1, double u2,
                               double u3, double u4) {
    return {std::min(std::min(d1, d2), std::min(d3, d4)),
            std::max(std::max(u1, u2), std::max(u3, u4))};
  }

  friend FastInterval operator/(const FastInterval& a, const FastInterval& b) {
    if (a.is_point() && b.is_point()) return checked(div_down(a.lo, b.lo), div_up(a.lo, b.lo));
    // A divisor interval that contains zero gives no enclosure: NaN (the
    // element goes on to the MPFI pass, which decides what it is).
    if (!(b.lo > 0 || b.hi < 0)) return nan();
    const double d1 = div_down(a.lo, b.lo), d2 = div_down(a.lo, b.hi), d3 = div_down(a.hi, b.lo),
                 d4 = div_down(a.hi, b.hi);
    const double u1 = div_up(a.lo, b.lo), u2 = div_up(a.lo, b.hi), u3 = div_up(a.hi, b.lo),
                 u4 = div_up(a.hi, b.hi);
    if (std::isnan(d1) || std::isnan(d2) || std::isnan(d3) || std::isnan(d4)) return nan();
    return extremes(d1, d2, d3, d4, u1, u2, u3, u4);
  }

  FastInterval& operator+=(const FastInterval& b) { return *this = *this + b; }
  FastInterval& operator-=(const FastInterval& b) { return *this = *this - b; }
  FastInterval& operator*=(const FastInterval& b) { return *this = *this * b; }
  FastInterval& operator/=(const FastInterval& b) { return *this = *this / b; }

  // exp and log are increasing: bound each end. exp runs once per score,
  // too often for MPFR: the vectorised pass takes exp_by_taylor's enclosure
  // where it applies and MPFR's bounds elsewhere.
  friend FastInterval exp(const FastInterval& a) {
    if (a.is_nan()) return nan();
    FastInterval r;
    if (first_pass_kind() == FirstPassKind::vectorised && exp_by_taylor(a, r)) return r;
    return {exp_down(a.lo), exp_up(a.hi)};
  }
  friend FastInterval log(const FastInterval& a) {
    if (a.is_nan() || a.lo < 0) return nan();
    return {log_down(a.lo), log_up(a.hi)};
  }
  // sqrt is correctly rounded by IEEE 754 in the current mode (upward):
  // the round-down value is that result, or the double below it when the
  // result is inexact (r·r != x exactly).
  static double sqrt_down(double x) {
    const double r = std::sqrt(x);
    if (!std::isfinite(r) || r == 0) return r;
    if (mul_up(r, r) == x && mul_down(r, r) == x) return r;
    return std::nextafter(r, 0.0);
  }
  friend FastInterval sqrt(const FastInterval& a) {
    if (a.is_nan() || a.lo < 0) return nan();
    return {sqrt_down(a.lo), std::sqrt(a.hi)};
  }
};

// An enclosure of exp over a, by the reduction and the Taylor polynomial of
// ExpConstants, evaluated in FastInterval arithmetic: every step encloses,
// and the remainder bound covers the truncation. False (and `out` unset)
// where it does not apply: an end past ±limit, or r out of ±reach.
inline bool exp_by_taylor(const FastInterval& a, FastInterval& out) {
  constexpr double limit = ExpConstants::limit, reach = ExpConstants::reach;
  if (!(a.lo >= -limit && a.hi <= limit)) return false;  // NaN and infinities included
  if (a.lo == 0 && a.hi == 0) {  // exp(0) = 1, the one exact case: keep it a point
    out = FastInterval(1.0);
    return true;
  }
  const ExpConstants& c = exp_constants();
  // k only has to bring r near zero; std::round does not depend on the mode.
  const double k = std::round((a.lo / 2 + a.hi / 2) * c.inv_ln2);
  const FastInterval r = a - FastInterval(k * c.ln2_hi) -  // k · ln2_hi: exact (42 bits)
                         FastInterval(k) * FastInterval(c.ln2_lo_down, c.ln2_lo_up);
  if (!(r.lo >= -reach && r.hi <= reach)) return false;
  // Horner, p = c_n + r·p. p stays positive (checked: each c_n exceeds
  // reach · p), so the extremes of r·p are known products.
  FastInterval p(c.coef_down[ExpConstants::degree], c.coef_up[ExpConstants::degree]);
  for (int n = ExpConstants::degree - 1; n >= 0; --n) {
    const double lo =
        r.lo >= 0 ? FastInterval::mul_down(p.lo, r.lo) : FastInterval::mul_down(p.hi, r.lo);
    const double hi =
        r.hi >= 0 ? FastInterval::mul_up(p.hi, r.hi) : FastInterval::mul_up(p.lo, r.hi);
    p = FastInterval(-((-lo) - c.coef_down[n]), hi + c.coef_up[n]);
    if (!(p.lo > 0)) return false;
  }
  p += FastInterval(-c.remainder, c.remainder);
  // 2^k · p is exact: |k| <= 996 and p in [0.7, 1.5] keep it normal.
  const double two_k = std::ldexp(1.0, static_cast<int>(k));
  out = FastInterval(p.lo * two_k, p.hi * two_k);
  return true;
}

// The vectorised reductions of the first pass (fast_reductions.cpp, Highway,
// dispatched at run time). Rows of x are `row_stride` intervals apart, the
// elements of a row (and of a) contiguous.
//   interval_dots:          out_j = Σ_d a_d · x_jd     for j < rows, d < D
//   interval_weighted_sum:  out_d = Σ_j w_j · x_jd     for d < D, j < rows
//   interval_sum:           Σ_j x_j                    for j < n
void interval_dots(const FastInterval* a, const FastInterval* x, moa::extent_t row_stride,
                   moa::extent_t rows, moa::extent_t D, FastInterval* out);
void interval_weighted_sum(const FastInterval* w, const FastInterval* x, moa::extent_t row_stride,
                           moa::extent_t rows, moa::extent_t D, FastInterval* out);
FastInterval interval_sum(const FastInterval* x, moa::extent_t n);
//   interval_shifted_exps:  x_j = exp(x_j - shift)    for j < n, in place:
//                           exp_by_taylor's operations lane by lane, bit for
//                           bit the scalar exp(x_j - shift); lanes it does not
//                           apply to take the scalar exp
void interval_shifted_exps(FastInterval* x, moa::extent_t n, const FastInterval& shift);
// Several rows at once (RowReductions): a[r] (or w[r]) against the first
// rows[r] rows of x, into out[r]; each row's values are those of the
// one-row functions above, bit for bit.
void interval_dots_rows(const FastInterval* const* a, moa::extent_t R, const FastInterval* x,
                        moa::extent_t row_stride, const moa::extent_t* rows, moa::extent_t D,
                        FastInterval* const* out);
void interval_weighted_sums(const FastInterval* const* w, const FastInterval* x,
                            moa::extent_t row_stride, const moa::extent_t* rows, moa::extent_t R,
                            moa::extent_t D, FastInterval* const* out);
// One block of R weighted sums over points (mlp.swiglu's weights, read a
// block of rows at a time): out[r]_d += (Σ_{j < rows} w[r]_j · x_jd, summed
// from zero) for d < D, each element's operations those of a block of
// interval_weighted_sum. NaN ends are left as the lanes made them: the
// caller applies FastInterval::checked to each total.
void interval_add_point_block(const FastInterval* const* w, moa::extent_t R, const double* x,
                              moa::extent_t row_stride, moa::extent_t rows, moa::extent_t D,
                              FastInterval* const* out);

}  // namespace moacert::oracle::detail

namespace moacert::dnf {

// The first pass's reductions: vectorised where the rows are contiguous
// (always, for the oracle's row-major inputs) and the vectorised pass runs.
template <>
struct Reductions<oracle::detail::FastInterval> {
  using I = oracle::detail::FastInterval;
  static bool vectorised() {
    return oracle::detail::first_pass_kind() == oracle::detail::FirstPassKind::vectorised;
  }
  static void dots(const moa::View<const I>& a, const moa::View<const I>& x, moa::extent_t rows,
                   I* out) {
    if (vectorised() && contiguous_rows(a) && contiguous_rows(x)) {
      oracle::detail::interval_dots(a.data(), x.data(), x.layout().stride(0), rows, a.shape()[0],
                                    out);
    } else {
      plain_dots(a, x, rows, out);
    }
  }
  static void weighted_sum(const I* w, const moa::View<const I>& x, moa::extent_t rows, I* out) {
    if (vectorised() && contiguous_rows(x)) {
      oracle::detail::interval_weighted_sum(w, x.data(), x.layout().stride(0), rows, x.shape()[1],
                                            out);
    } else {
      plain_weighted_sum(w, x, rows, out);
    }
  }
  static I sum(const I* x, moa::extent_t n) {
    return vectorised() ? oracle::detail::interval_sum(x, n) : plain_sum(x, n);
  }
  static void shifted_exps(I* x, moa::extent_t n, const I& shift) {
    if (vectorised()) {
      oracle::detail::interval_shifted_exps(x, n, shift);
    } else {
      plain_shifted_exps(x, n, shift);
    }
  }
};

template <>
struct RowReductions<oracle::detail::FastInterval> {
  using I = oracle::detail::FastInterval;
  static void dots(std::span<const moa::View<const I>> a, const moa::View<const I>& x,
                   const moa::extent_t* rows, I* const* out) {
    const bool contiguous =
        std::all_of(a.begin(), a.end(), [](const auto& row) { return contiguous_rows(row); });
    if (Reductions<I>::vectorised() && contiguous && contiguous_rows(x)) {
      std::vector<const I*> starts;
      for (const auto& row : a) starts.push_back(row.data());
      oracle::detail::interval_dots_rows(starts.data(), moa::extent_t(a.size()), x.data(),
                                         x.layout().stride(0), rows, x.shape()[1], out);
    } else {
      each_row_dots(a, x, rows, out);
    }
  }
  static void weighted_sums(const I* const* w, const moa::View<const I>& x,
                            const moa::extent_t* rows, moa::extent_t R, I* const* out) {
    if (Reductions<I>::vectorised() && contiguous_rows(x)) {
      oracle::detail::interval_weighted_sums(w, x.data(), x.layout().stride(0), rows, R,
                                             x.shape()[1], out);
    } else {
      each_row_weighted_sums(w, x, rows, R, out);
    }
  }
};

template <>
struct ScalarTraits<oracle::detail::FastInterval> {
  using I = oracle::detail::FastInterval;
  static I from_double(double x) { return I(x); }
  static I zero() { return I(0.0); }
  static I neg_inf() { return I(-std::numeric_limits<double>::infinity()); }
  // max is increasing in each argument: the max of the ends.
  static I max(const I& a, const I& b) {
    if (a.is_nan() || b.is_nan()) return I::nan();
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  // Softmax and LSE are exactly invariant under any finite shift: a point
  // of the row max keeps S - shift tight (a point stays itself, so a point
  // infinity behaves as the IEEE DNF does).
  static I shift(const I& m) {
    if (m.is_nan() || m.is_point()) return m;
    if (std::isfinite(m.lo)) return I(m.lo);
    if (std::isfinite(m.hi)) return I(m.hi);
    return m;
  }
};

}  // namespace moacert::dnf
