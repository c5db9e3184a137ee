// The first pass of f64 targets: intervals whose ends are double-doubles
// (docs/oracle.md#first-pass-f64). Double intervals are too wide to decide a
// rounding to double; ends of about 106 bits decide nearly every element.
//
// Each end is computed in round-to-nearest with the double-word algorithms
// of Joldes, Muller and Popescu ("Tight and rigorous error bounds for basic
// building blocks of double-word arithmetic", ACM TOMS 44(2), 2017), whose
// relative errors are at most 3u² + 13u³ (sum), 5u² (product) and
// 15u² + 56u³ (quotient), u = 2^-53; the lower end is then moved down and
// the upper end up by 2^-96 of its magnitude (about 1000u², which covers
// those bounds and the rounding of the move itself) plus 2^-1020 (which
// covers the absolute error of an operation that underflows). Results the
// algorithms compute exactly (a sum or product of two doubles, a zero
// factor) are not moved, so exact results stay points. exp is the pass's
// own enclosure, in this arithmetic (exp_by_taylor, dd_exp.cpp), where it
// applies; log and sqrt, and exp elsewhere, come from MPFR at 128 bits,
// rounded outward (dd_pass.cpp). An end beyond
// 2^1000 in magnitude, infinite or NaN makes the interval NaN: no enclosure,
// MPFI decides.
//
// Only oracle/dd_pass.cpp, dd_exp.cpp and dd_reductions.cpp (and the
// tests of this arithmetic) include this header: they are compiled with
// -ffp-contract=off, since a contracted a*b+c would break the error-free
// transformations, and runs under round-to-nearest.
#pragma once

#include <cmath>
#include <limits>

#include "oracle/oracle.hpp"
#include "reference/dnf/reductions.hpp"
#include "reference/dnf/scalar.hpp"

namespace moacert::oracle::detail {

// Error-free transformations (round-to-nearest): a + b = s + e, a · b = p + e.
inline DD two_sum(double a, double b) {
  const double s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
inline DD fast_two_sum(double a, double b) {  // |a| >= |b| or a == 0
  const double s = a + b;
  return {s, b - (s - a)};
}
inline DD two_prod(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}

// Joldes-Muller-Popescu, Algorithm 6 (AccurateDWPlusDW).
inline DD dw_add(const DD& x, const DD& y) {
  const DD s = two_sum(x.hi, y.hi), t = two_sum(x.lo, y.lo);
  const DD v = fast_two_sum(s.hi, s.lo + t.hi);
  return fast_two_sum(v.hi, t.lo + v.lo);
}
// Algorithm 12 (DWTimesDW3, with FMA).
inline DD dw_mul(const DD& x, const DD& y) {
  const DD c = two_prod(x.hi, y.hi);
  const double tl0 = x.lo * y.lo;
  const double tl1 = std::fma(x.hi, y.lo, tl0);
  const double cl2 = std::fma(x.lo, y.hi, tl1);
  return fast_two_sum(c.hi, c.lo + cl2);
}
// Algorithm 17 (DWDivDW2), with DWTimesFP1 (Algorithm 7) for y · th.
inline DD dw_div(const DD& x, const DD& y) {
  const double th = x.hi / y.hi;
  const DD c = two_prod(y.hi, th);
  const DD t = fast_two_sum(c.hi, y.lo * th);
  const DD r = fast_two_sum(t.hi, t.lo + c.lo);
  const double pi_h = x.hi - r.hi, delta_l = x.lo - r.lo;
  return fast_two_sum(th, (pi_h + delta_l) / y.hi);
}

struct DDInterval {
  DD lo{0, 0}, hi{0, 0};

  DDInterval() = default;
  explicit DDInterval(double x) : lo{x, 0}, hi{x, 0} {}
  DDInterval(const DD& l, const DD& h) : lo(l), hi(h) {}

  static DDInterval nan() {
    const double n = std::numeric_limits<double>::quiet_NaN();
    return {{n, 0}, {n, 0}};
  }
  bool is_nan() const { return std::isnan(lo.hi) || std::isnan(hi.hi); }
  bool is_point() const { return lo.hi == hi.hi && lo.lo == hi.lo; }

  static constexpr double kLimit = 0x1p1000;  // larger ends: no enclosure
  static bool in_range(const DD& x) {         // false for NaN
    return std::fabs(x.hi) <= kLimit && std::isfinite(x.lo);
  }

  // z moved outward: down (sign -1) or up (+1) by 2^-96 |z| + 2^-1020.
  static DD moved(const DD& z, double sign) {
    const double by = std::fabs(z.hi) * 0x1p-96 + 0x1p-1020;
    return two_sum(z.hi, z.lo + sign * by);  // exact, whatever the magnitudes
  }
  // An interval from approximate ends (or exact ones, `exact`), NaN out of range.
  static DDInterval of(const DD& l, const DD& h, bool exact) {
    if (!in_range(l) || !in_range(h)) return nan();
    if (exact) return {l, h};
    return {moved(l, -1), moved(h, +1)};
  }
  static bool is_double(const DD& x) { return x.lo == 0; }

  friend DDInterval operator-(const DDInterval& a) {
    return {{-a.hi.hi, -a.hi.lo}, {-a.lo.hi, -a.lo.lo}};
  }
  friend DDInterval operator+(const DDInterval& a, const DDInterval& b) {
    if (a.is_nan() || b.is_nan()) return nan();
    const DD l = dw_add(a.lo, b.lo), h = dw_add(a.hi, b.hi);
    // The sum of two doubles is exact (TwoSum, then exact renormalisation).
    const bool exact = is_double(a.lo) && is_double(b.lo) && is_double(a.hi) && is_double(b.hi);
    return of(l, h, exact);
  }
  friend DDInterval operator-(const DDInterval& a, const DDInterval& b) { return a + (-b); }

  // One end product: exact for two doubles (TwoProd) or a zero factor.
  static DD product(const DD& x, const DD& y, bool& exact) {
    if (x.hi == 0 || y.hi == 0) return {0, 0};
    exact = exact && is_double(x) && is_double(y);
    return dw_mul(x, y);
  }
  // The sign of an interval: 1 (>= 0), -1 (<= 0), 0 (both signs).
  static int sign(const DDInterval& a) { return a.lo.hi >= 0 ? 1 : a.hi.hi <= 0 ? -1 : 0; }

  friend DDInterval operator*(const DDInterval& a, const DDInterval& b) {
    if (a.is_nan() || b.is_nan() || !in_range(a.lo) || !in_range(a.hi) || !in_range(b.lo) ||
        !in_range(b.hi))
      return nan();
    // The extremes by the signs of the operands (no comparison of ends).
    const DD *l1, *l2, *h1, *h2;
    const int sa = sign(a), sb = sign(b);
    if (sa > 0 && sb > 0) {
      l1 = &a.lo, l2 = &b.lo, h1 = &a.hi, h2 = &b.hi;
    } else if (sa > 0 && sb < 0) {
      l1 = &a.hi, l2 = &b.lo, h1 = &a.lo, h2 = &b.hi;
    } else if (sa < 0 && sb > 0) {
      l1 = &a.lo, l2 = &b.hi, h1 = &a.hi, h2 = &b.lo;
    } else if (sa < 0 && sb < 0) {
      l1 = &a.hi, l2 = &b.hi, h1 = &a.lo, h2 = &b.lo;
    } else if (sa > 0) {  // b has both signs
      l1 = &a.hi, l2 = &b.lo, h1 = &a.hi, h2 = &b.hi;
    } else if (sa < 0) {
      l1 = &a.lo, l2 = &b.hi, h1 = &a.lo, h2 = &b.lo;
    } else if (sb > 0) {  // a has both signs
      l1 = &a.lo, l2 = &b.hi, h1 = &a.hi, h2 = &b.hi;
    } else if (sb < 0) {
      l1 = &a.hi, l2 = &b.lo, h1 = &a.lo, h2 = &b.lo;
    } else {
      return nan();  // both have both signs: rare, MPFI decides
    }
    bool exact = true;
    const DD l = product(*l1, *l2, exact), h = product(*h1, *h2, exact);
    return of(l, h, exact);
  }

  friend DDInterval operator/(const DDInterval& a, const DDInterval& b) {
    if (a.is_nan() || b.is_nan() || !in_range(a.lo) || !in_range(a.hi)) return nan();
    if (!(b.lo.hi > 0 || b.hi.hi < 0) || !in_range(b.lo) || !in_range(b.hi)) return nan();
    if (b.hi.hi < 0) return -(a / -b);
    // b > 0: the extremes by the sign of a.
    const int sa = sign(a);
    const DD& ld = sa > 0 ? b.hi : b.lo;  // lower end: a.lo over this
    const DD& hd = sa < 0 ? b.hi : b.lo;  // upper end: a.hi over this
    auto quotient = [](const DD& x, const DD& y) { return x.hi == 0 ? DD{0, 0} : dw_div(x, y); };
    return of(quotient(a.lo, ld), quotient(a.hi, hd), false);
  }

  DDInterval& operator+=(const DDInterval& b) { return *this = *this + b; }
  DDInterval& operator-=(const DDInterval& b) { return *this = *this - b; }
  DDInterval& operator*=(const DDInterval& b) { return *this = *this * b; }
  DDInterval& operator/=(const DDInterval& b) { return *this = *this / b; }

  friend DDInterval exp(const DDInterval& a);   // dd_pass.cpp
  friend DDInterval log(const DDInterval& a);   // dd_pass.cpp
  friend DDInterval sqrt(const DDInterval& a);  // dd_pass.cpp
};

// exp over DDIntervals without MPFR (dd_exp.cpp): exp(x) = 2^k · exp(r),
// r = x - k·ln2 with k·ln2 enclosed from a three-double split of ln2
// (k·ln2_1 and k·ln2_2 exact, ln2_3 an interval), exp(r) by its Taylor
// polynomial of the given degree in Horner form, every step a DDInterval
// operation, its constant term 1 widened by ±remainder for the truncation
// (1 ± remainder, exact by TwoSum), then the exact
// scaling by 2^k. The constants come from MPFR once, each rounded in the
// direction that keeps the enclosure sound.
struct DDExpConstants {
  static constexpr int kMaxDegree = 30;
  static constexpr double limit = 700;   // |x| beyond: MPFR (|k| <= 1010)
  static constexpr double reach = 0.35;  // |r| beyond (wide intervals): MPFR
  int degree = 0;
  double inv_ln2 = 0;                   // only chooses k
  double ln2_1 = 0, ln2_2 = 0;          // 40 bits each: k·ln2_i exact for |k| < 2^13
  double ln2_3_down = 0, ln2_3_up = 0;  // ln2 - ln2_1 - ln2_2 enclosed
  DD coef_down[kMaxDegree + 1]{}, coef_up[kMaxDegree + 1]{};  // 1/n! enclosed
  double remainder = 0;  // >= reach^(degree+1) / (degree+1)! · e^reach
};
// The constants for a Taylor polynomial of `degree` (<= kMaxDegree).
DDExpConstants make_dd_exp_constants(int degree);
// The pass's constants: degree 22, whose remainder is below 2^-104 of
// exp(r) (tests/oracle/test_dd_exp.cpp checks it).
const DDExpConstants& dd_exp_constants();
// The enclosure of exp over a by the constants c; false (out unset) where
// it does not apply: NaN, an end past ±limit, r out of ±reach, a result
// whose tail would leave the normal range.
bool exp_by_taylor(const DDInterval& a, const DDExpConstants& c, DDInterval& out);
// exp's ends through MPFR at 128 bits, rounded outward (dd_pass.cpp): the
// fallback, and the tests' reference for the width.
DDInterval exp_by_mpfr(const DDInterval& a);

// The attention DNF's two reductions over DDIntervals, vectorised along
// independent sums (dd_reductions.cpp, Highway, dispatched at run time):
// each lane is one sum, run through DDInterval's own operations in the
// plain loops' order, so the results are plain_dots' and
// plain_weighted_sum's bit for bit. Rows of x are `row_stride` intervals
// apart, the elements of a row (and of a) contiguous; every x must be a
// point (the case's inputs are). They return false, computing nothing, where
// they do not apply (an x not a point, a target without a fused
// multiply-add, which TwoProd needs): the caller runs the plain loops.
//   dd_dots:          out_j = Σ_d a_d · x_jd     for j < rows, d < D
//   dd_weighted_sum:  out_d = Σ_j w_j · x_jd     for d < D, j < rows
bool dd_dots(const DDInterval* a, const DDInterval* x, moa::extent_t row_stride, moa::extent_t rows,
             moa::extent_t D, DDInterval* out);
bool dd_weighted_sum(const DDInterval* w, const DDInterval* x, moa::extent_t row_stride,
                     moa::extent_t rows, moa::extent_t D, DDInterval* out);

}  // namespace moacert::oracle::detail

namespace moacert::dnf {

// The double-double pass's reductions: vectorised where the rows are
// contiguous and x holds points (the scores' keys, the values), the plain
// loops otherwise (D_i's single dot of dO_i with O_i, an interval).
template <>
struct Reductions<oracle::detail::DDInterval> {
  using I = oracle::detail::DDInterval;
  static void dots(const moa::View<const I>& a, const moa::View<const I>& x, moa::extent_t rows,
                   I* out) {
    if (!(contiguous_rows(a) && contiguous_rows(x) &&
          oracle::detail::dd_dots(a.data(), x.data(), x.layout().stride(0), rows, a.shape()[0],
                                  out)))
      plain_dots(a, x, rows, out);
  }
  static void weighted_sum(const I* w, const moa::View<const I>& x, moa::extent_t rows, I* out) {
    if (!(contiguous_rows(x) && oracle::detail::dd_weighted_sum(w, x.data(), x.layout().stride(0),
                                                                rows, x.shape()[1], out)))
      plain_weighted_sum(w, x, rows, out);
  }
  static I sum(const I* x, moa::extent_t n) { return plain_sum(x, n); }
  static void shifted_exps(I* x, moa::extent_t n, const I& shift) {
    plain_shifted_exps(x, n, shift);
  }
};

template <>
struct ScalarTraits<oracle::detail::DDInterval> {
  using I = oracle::detail::DDInterval;
  static I from_double(double x) { return I(x); }
  static I zero() { return I(0.0); }
  static I neg_inf() { return I(-std::numeric_limits<double>::infinity()); }
  // Only the softmax's row max uses max, and only through shift, which may
  // be any finite point (softmax and LSE are exactly invariant under it):
  // comparing the leading doubles is enough.
  static I max(const I& a, const I& b) {
    if (a.is_nan() || b.is_nan()) return I::nan();
    return a.hi.hi >= b.hi.hi ? a : b;
  }
  static I shift(const I& m) {
    if (m.is_nan() || m.is_point()) return m;
    if (std::isfinite(m.hi.hi)) return I(m.hi.hi);
    if (std::isfinite(m.lo.hi)) return I(m.lo.hi);
    return m;
  }
};

}  // namespace moacert::dnf
