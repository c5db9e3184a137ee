// The bounds of exp and log for the first pass, and the thread count.
// Kept out of fast_pass.cpp on purpose: a call into another translation
// unit cannot be inlined, so no floating-point operation of the pass can be
// scheduled between the switches of rounding mode made here (GCC does not
// treat fesetround as a barrier for register operations, bug 34678).
#include <cfenv>

#include <mpfr.h>
#include <omp.h>

#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/passes.hpp"

namespace moacert::oracle::detail {

namespace {

// One 53-bit MPFR variable per thread.
struct Scratch {
  mpfr_t x;
  Scratch() { mpfr_init2(x, 53); }
  ~Scratch() { mpfr_clear(x); }
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// f(x) rounded in direction `rnd` to 53 bits, then to double in the same
// direction (the second rounding only acts in the subnormal range, and in
// the same direction, so the bound holds).
double bound(int (*f)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t), double x, mpfr_rnd_t rnd) {
  NearestRounding nearest;
  mpfr_ptr v = scratch().x;
  mpfr_set_d(v, x, MPFR_RNDN);  // exact: 53 bits
  f(v, v, rnd);
  return mpfr_get_d(v, rnd);
}

}  // namespace

double exp_down(double x) {
  return bound(mpfr_exp, x, MPFR_RNDD);
}
double exp_up(double x) {
  return bound(mpfr_exp, x, MPFR_RNDU);
}
double log_down(double x) {
  return bound(mpfr_log, x, MPFR_RNDD);
}
double log_up(double x) {
  return bound(mpfr_log, x, MPFR_RNDU);
}

namespace {

// Every constant rounded in the direction that keeps exp_by_taylor's
// enclosure sound, from MPFR at 256 bits (themselves rounded the same way).
ExpConstants compute_exp_constants() {
  NearestRounding nearest;
  using C = ExpConstants;
  C c{};
  mpfr_t ln2, t, f;
  mpfr_inits2(256, ln2, t, f, static_cast<mpfr_ptr>(nullptr));
  mpfr_const_log2(ln2, MPFR_RNDN);
  // ln2_hi: 32 bits, so k · ln2_hi is exact for |k| < 2^21.
  mpfr_set_prec(t, 32);
  mpfr_set(t, ln2, MPFR_RNDN);
  c.ln2_hi = mpfr_get_d(t, MPFR_RNDN);  // exact: 32 bits
  mpfr_set_prec(t, 256);
  mpfr_const_log2(t, MPFR_RNDD);
  mpfr_sub_d(t, t, c.ln2_hi, MPFR_RNDD);
  c.ln2_lo_down = mpfr_get_d(t, MPFR_RNDD);
  mpfr_const_log2(t, MPFR_RNDU);
  mpfr_sub_d(t, t, c.ln2_hi, MPFR_RNDU);
  c.ln2_lo_up = mpfr_get_d(t, MPFR_RNDU);
  mpfr_ui_div(t, 1, ln2, MPFR_RNDN);
  c.inv_ln2 = mpfr_get_d(t, MPFR_RNDN);
  // 1/n!, rounded down and up.
  mpfr_set_ui(f, 1, MPFR_RNDN);  // n!, exact at 256 bits for n <= 57
  for (int n = 0; n <= C::degree; ++n) {
    if (n > 0) mpfr_mul_ui(f, f, static_cast<unsigned long>(n), MPFR_RNDN);
    mpfr_ui_div(t, 1, f, MPFR_RNDD);
    c.coef_down[n] = mpfr_get_d(t, MPFR_RNDD);
    mpfr_ui_div(t, 1, f, MPFR_RNDU);
    c.coef_up[n] = mpfr_get_d(t, MPFR_RNDU);
  }
  c.remainder = exp_taylor_remainder(C::degree, C::reach);
  mpfr_clears(ln2, t, f, static_cast<mpfr_ptr>(nullptr));
  return c;
}

}  // namespace

double exp_taylor_remainder(int degree, double reach) {
  NearestRounding nearest;
  mpfr_t r, factorial, bound;
  mpfr_inits2(256, r, factorial, bound, static_cast<mpfr_ptr>(nullptr));
  // (degree+1)!: exact at 256 bits for degree < 57, and rounded down past
  // that, which only raises the bound.
  mpfr_fac_ui(factorial, static_cast<unsigned long>(degree + 1), MPFR_RNDD);
  mpfr_set_d(r, reach, MPFR_RNDN);  // exact: a double
  mpfr_pow_ui(bound, r, static_cast<unsigned long>(degree + 1), MPFR_RNDU);
  mpfr_div(bound, bound, factorial, MPFR_RNDU);
  mpfr_exp(r, r, MPFR_RNDU);
  mpfr_mul(bound, bound, r, MPFR_RNDU);
  const double out = mpfr_get_d(bound, MPFR_RNDU);
  mpfr_clears(r, factorial, bound, static_cast<mpfr_ptr>(nullptr));
  return out;
}

const ExpConstants& exp_constants() {
  static const ExpConstants c = compute_exp_constants();
  return c;
}

int thread_count(int requested) {
  return requested > 0 ? requested : omp_get_max_threads();
}

}  // namespace moacert::oracle::detail
