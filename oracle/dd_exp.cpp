// The double-double pass's own exp (docs/oracle.md#first-pass-f64): an
// enclosure computed in DDInterval arithmetic, so that exp of each score
// does not take two MPFR calls at 128 bits. Compiled with -ffp-contract=off
// and run under round-to-nearest, as dd_pass.cpp (detail/dd_interval.hpp).
#include <cmath>
#include <stdexcept>

#include <mpfr.h>

#include "oracle/detail/dd_interval.hpp"
#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/scoped_rounding.hpp"

namespace moacert::oracle::detail {

namespace {

// v (at 256 bits) as a DD rounded in direction rnd: hi the nearest double,
// lo the rest (exact at 512 bits) rounded in rnd, so hi + lo is on v's
// side `rnd` and |lo| stays within half an ulp of hi.
DD dd_of(mpfr_srcptr v, mpfr_rnd_t rnd) {
  mpfr_t rest;
  mpfr_init2(rest, 512);
  DD d;
  d.hi = mpfr_get_d(v, MPFR_RNDN);
  mpfr_sub_d(rest, v, d.hi, MPFR_RNDN);  // exact
  d.lo = mpfr_get_d(rest, rnd);
  mpfr_clear(rest);
  return d;
}

}  // namespace

DDExpConstants make_dd_exp_constants(int degree) {
  using C = DDExpConstants;
  if (degree < 1 || degree > C::kMaxDegree) {
    throw std::logic_error("oracle: the double-double exp's degree is out of range");
  }
  NearestRounding nearest;
  C c;
  c.degree = degree;
  mpfr_t ln2, t, f;
  mpfr_inits2(256, ln2, t, f, static_cast<mpfr_ptr>(nullptr));
  mpfr_const_log2(ln2, MPFR_RNDN);
  mpfr_ui_div(t, 1, ln2, MPFR_RNDN);
  c.inv_ln2 = mpfr_get_d(t, MPFR_RNDN);
  // ln2 = ln2_1 + ln2_2 + ln2_3: the first two of 40 bits each (exact
  // differences at 256 bits), the third enclosed from ln2's own enclosure.
  mpfr_set_prec(t, 40);
  mpfr_set(t, ln2, MPFR_RNDN);
  c.ln2_1 = mpfr_get_d(t, MPFR_RNDN);  // exact: 40 bits
  mpfr_set_prec(t, 256);
  mpfr_sub_d(t, ln2, c.ln2_1, MPFR_RNDN);  // exact
  mpfr_set_prec(f, 40);
  mpfr_set(f, t, MPFR_RNDN);
  c.ln2_2 = mpfr_get_d(f, MPFR_RNDN);  // exact: 40 bits
  mpfr_set_prec(f, 256);
  for (const mpfr_rnd_t rnd : {MPFR_RNDD, MPFR_RNDU}) {
    mpfr_const_log2(t, rnd);
    mpfr_sub_d(t, t, c.ln2_1, rnd);
    mpfr_sub_d(t, t, c.ln2_2, rnd);
    (rnd == MPFR_RNDD ? c.ln2_3_down : c.ln2_3_up) = mpfr_get_d(t, rnd);
  }
  // 1/n!, as DDs rounded down and up.
  mpfr_set_ui(f, 1, MPFR_RNDN);  // n!, exact at 256 bits for n <= 57
  for (int n = 0; n <= degree; ++n) {
    if (n > 0) mpfr_mul_ui(f, f, static_cast<unsigned long>(n), MPFR_RNDN);
    mpfr_ui_div(t, 1, f, MPFR_RNDD);
    c.coef_down[n] = dd_of(t, MPFR_RNDD);
    mpfr_ui_div(t, 1, f, MPFR_RNDU);
    c.coef_up[n] = dd_of(t, MPFR_RNDU);
  }
  // Lagrange: |exp(r) - P(r)| <= |r|^(degree+1) / (degree+1)! · e^|r|.
  c.remainder = exp_taylor_remainder(degree, C::reach);
  mpfr_clears(ln2, t, f, static_cast<mpfr_ptr>(nullptr));
  return c;
}

const DDExpConstants& dd_exp_constants() {
  static const DDExpConstants c = make_dd_exp_constants(22);
  return c;
}

bool exp_by_taylor(const DDInterval& a, const DDExpConstants& c, DDInterval& out) {
  using C = DDExpConstants;
  if (!(a.lo.hi >= -C::limit && a.hi.hi <= C::limit)) return false;  // NaN included
  if (!std::isfinite(a.lo.lo) || !std::isfinite(a.hi.lo)) return false;
  // k only has to bring r near zero; |k| <= 1010.
  const double k = std::round((a.lo.hi / 2 + a.hi.hi / 2) * c.inv_ln2);
  DDInterval r = a;
  if (k != 0) {  // (k = 0 keeps r = a exactly: tiny arguments stay tight)
    // k·ln2_1 and k·ln2_2 are exact (51 bits), their sum exact by TwoSum;
    // k·ln2_3 is a product of doubles, exact too.
    const DD k12 = two_sum(k * c.ln2_1, k * c.ln2_2);
    r = (a - DDInterval(k12, k12)) -
        DDInterval(k) * DDInterval(DD{c.ln2_3_down, 0}, DD{c.ln2_3_up, 0});
  }
  // |r| < reach for the whole DD: a leading double strictly inside ±reach
  // (a double) keeps hi + lo inside too, |lo| being half an ulp at most.
  if (r.is_nan() || !(r.lo.hi > -C::reach && r.hi.hi < C::reach)) return false;
  // Horner, p = 1/n! + r·p, each step a DDInterval operation (enclosing);
  // the remainder widens the constant term 1 (1 ∓ remainder, exact by TwoSum), which
  // saves the outward move of a separate sum.
  DDInterval p(c.coef_down[c.degree], c.coef_up[c.degree]);
  for (int n = c.degree - 1; n >= 1; --n) p = DDInterval(c.coef_down[n], c.coef_up[n]) + r * p;
  p = DDInterval(two_sum(1, -c.remainder), two_sum(1, c.remainder)) + r * p;
  if (p.is_nan() || !(p.lo.hi > 0)) return false;
  // 2^k · p: exact unless a tail leaves the normal range (then MPFR).
  const int e = static_cast<int>(k);
  const DD lo{std::ldexp(p.lo.hi, e), std::ldexp(p.lo.lo, e)};
  const DD hi{std::ldexp(p.hi.hi, e), std::ldexp(p.hi.lo, e)};
  if (!std::isfinite(hi.hi) || !(lo.hi >= 0x1p-1022)) return false;
  if (std::ldexp(lo.lo, -e) != p.lo.lo || std::ldexp(hi.lo, -e) != p.hi.lo) return false;
  out = DDInterval::of(lo, hi, /*exact=*/true);  // NaN past 2^1000, as MPFR's
  return true;
}

}  // namespace moacert::oracle::detail
