// The oracle's first pass: intervals of hardware doubles with directed
// rounding. Every operation returns an interval that contains the exact
// result of the operation applied to any points of its operands, so the DNF
// instantiated with FastInterval encloses the exact real value of each
// output (docs/oracle.md#first-pass).
//
// Only oracle/fast_pass.cpp includes this header: it is compiled with
// -frounding-math and runs these operations under an UpwardRounding guard.
// Upper bounds are rounded up directly; lower bounds use the negation trick
// down(x op y) = -up(-x op' y), so the whole pass runs in one rounding mode.
#pragma once

#include <cfenv>
#include <cmath>
#include <limits>

#include "reference/dnf/scalar.hpp"

namespace moacert::oracle::detail {

#if !defined(__FLT_EVAL_METHOD__) || __FLT_EVAL_METHOD__ != 0
#error "the fast pass needs double operations evaluated in double (FLT_EVAL_METHOD 0)"
#endif

// Sets round-upward for the current thread while alive.
class UpwardRounding {
 public:
  UpwardRounding() : saved_(std::fegetround()) { std::fesetround(FE_UPWARD); }
  ~UpwardRounding() { std::fesetround(saved_); }
  UpwardRounding(const UpwardRounding&) = delete;
  UpwardRounding& operator=(const UpwardRounding&) = delete;

 private:
  int saved_;
};

// exp and log bounds: libm is not correctly rounded, so these come from
// MPFR at 53 bits with MPFR_RNDD / MPFR_RNDU (fast_pass.cpp).
double exp_down(double x);
double exp_up(double x);
double log_down(double x);
double log_up(double x);

// [lo, hi] with lo <= x <= hi for the exact value x; a NaN endpoint means
// the operation was undefined somewhere (see docs/oracle.md#non-finite).
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

  friend FastInterval operator*(const FastInterval& a, const FastInterval& b) {
    if (a.is_point() && b.is_point()) return checked(mul_down(a.lo, b.lo), mul_up(a.lo, b.lo));
    // The extremes of a product of intervals are among the endpoint products.
    const double d1 = mul_down(a.lo, b.lo), d2 = mul_down(a.lo, b.hi), d3 = mul_down(a.hi, b.lo),
                 d4 = mul_down(a.hi, b.hi);
    const double u1 = mul_up(a.lo, b.lo), u2 = mul_up(a.lo, b.hi), u3 = mul_up(a.hi, b.lo),
                 u4 = mul_up(a.hi, b.hi);
    if (std::isnan(d1) || std::isnan(d2) || std::isnan(d3) || std::isnan(d4)) return nan();
    return checked(std::fmin(std::fmin(d1, d2), std::fmin(d3, d4)),
                   std::fmax(std::fmax(u1, u2), std::fmax(u3, u4)));
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
    return checked(std::fmin(std::fmin(d1, d2), std::fmin(d3, d4)),
                   std::fmax(std::fmax(u1, u2), std::fmax(u3, u4)));
  }

  FastInterval& operator+=(const FastInterval& b) { return *this = *this + b; }
  FastInterval& operator-=(const FastInterval& b) { return *this = *this - b; }
  FastInterval& operator*=(const FastInterval& b) { return *this = *this * b; }
  FastInterval& operator/=(const FastInterval& b) { return *this = *this / b; }

  // exp and log are increasing: bound each end.
  friend FastInterval exp(const FastInterval& a) {
    if (a.is_nan()) return nan();
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

}  // namespace moacert::oracle::detail

namespace moacert::dnf {

template <>
struct ScalarTraits<oracle::detail::FastInterval> {
  using I = oracle::detail::FastInterval;
  static I from_double(double x) { return I(x); }
  static I zero() { return I(0.0); }
  static I neg_inf() { return I(-std::numeric_limits<double>::infinity()); }
  // max is increasing in each argument: the max of the ends.
  static I max(const I& a, const I& b) {
    if (a.is_nan() || b.is_nan()) return I::nan();
    return {std::fmax(a.lo, b.lo), std::fmax(a.hi, b.hi)};
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
