#include "oracle/rounding.hpp"

#include <cmath>
#include <limits>

namespace moacert::oracle {

double round_to_format(mpfr_srcptr x, Format f) {
  if (mpfr_nan_p(x)) return std::numeric_limits<double>::quiet_NaN();
  if (mpfr_inf_p(x) || mpfr_zero_p(x)) return mpfr_get_d(x, MPFR_RNDN);
  const FormatInfo fi = info(f);
  const bool negative = mpfr_sgn(x) < 0;
  // |x| in [2^e, 2^(e+1)); below 2^emin the quantum is fixed at the
  // smallest subnormal 2^(emin - p + 1), so the precision left is p_eff.
  const long e = static_cast<long>(mpfr_get_exp(x)) - 1;
  long p_eff = fi.precision;
  if (e < fi.emin) p_eff = fi.precision - (fi.emin - e);
  const double tiny = std::ldexp(1.0, fi.emin - fi.precision + 1);  // smallest subnormal
  if (p_eff <= 0) {
    // |x| < 2^(emin - p + 1): 0 or the smallest subnormal. p_eff == 0 means
    // |x| in [tiny/2, tiny): exactly tiny/2 is a tie and goes to even (0).
    double r = 0;
    if (p_eff == 0) {
      mpfr_t half;
      mpfr_init2(half, 2);
      mpfr_set_ui_2exp(half, 1, fi.emin - fi.precision, MPFR_RNDN);  // tiny / 2
      r = mpfr_cmpabs(x, half) > 0 ? tiny : 0.0;
      mpfr_clear(half);
    }
    return negative ? -r : r;
  }
  mpfr_t y;
  mpfr_init2(y, static_cast<mpfr_prec_t>(p_eff));
  mpfr_set(y, x, MPFR_RNDN);            // MPFR's exponent range is far wider: one rounding
  double r = mpfr_get_d(y, MPFR_RNDN);  // exact: y has at most 53 bits, in double's range
  mpfr_clear(y);
  // Overflow: IEEE rounds to infinity exactly when the unbounded-exponent
  // rounding reaches 2^(emax + 1).
  if (std::fabs(r) >= std::ldexp(1.0, fi.emax + 1)) {
    r = negative ? -std::numeric_limits<double>::infinity()
                 : std::numeric_limits<double>::infinity();
  }
  return r;
}

// The conversions of reference/format.hpp, each one correct rounding from
// double under round-to-nearest (tests/oracle check them against the MPFR
// version above).
double round_to_format(double x, Format f) {
  switch (f) {
    case Format::f64:
      return x;
    case Format::f32:
      return static_cast<float>(x);
    case Format::bf16:
      return static_cast<float>(bf16::from_double(x));
    case Format::f16:
      return static_cast<float>(f16::from_double(x));
  }
  return x;
}

}  // namespace moacert::oracle
