#include "oracle/ulp.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "oracle/detail/mpfr_var.hpp"

namespace moacert::oracle {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Enough bits to hold hi + lo of any DD exactly (exponents span at most
// 2098 bits) and y - x exactly.
constexpr mpfr_prec_t kExact = 2200;

using detail::Mpfr;

// x = hi + lo exactly (NaN or ±inf when hi is).
void set_dd(mpfr_ptr out, const DD& x) {
  mpfr_set_d(out, x.hi, MPFR_RNDN);
  if (std::isfinite(x.hi)) mpfr_add_d(out, out, x.lo, MPFR_RNDN);  // exact at kExact bits
}

// The exponent of ulp_F(x) for a finite x.
long ulp_exponent(Format f, mpfr_srcptr x) {
  const FormatInfo fi = info(f);
  if (mpfr_zero_p(x)) return fi.emin - fi.precision + 1;
  const long e = static_cast<long>(mpfr_get_exp(x)) - 1;  // |x| in [2^e, 2^(e+1))
  return std::max<long>(e, fi.emin) - fi.precision + 1;
}

}  // namespace

double ulp(Format f, mpfr_srcptr x) {
  if (!mpfr_number_p(x)) return kInf;
  return std::ldexp(1.0, static_cast<int>(ulp_exponent(f, x)));
}

double ulp(Format f, const DD& x) {
  if (!std::isfinite(x.hi)) return kInf;
  const FormatInfo fi = info(f);
  int e = fi.emin;
  if (x.hi != 0) {
    e = std::ilogb(x.hi);
    // hi a power of two with lo of the other sign: |x| lies just below it.
    if (std::fabs(x.hi) == std::ldexp(1.0, e) && x.lo != 0 &&
        std::signbit(x.lo) != std::signbit(x.hi))
      --e;
    e = std::max(e, fi.emin);
  }
  return std::ldexp(1.0, e - fi.precision + 1);
}

double abs_error(double y, const DD& x) {
  if (std::isnan(x.hi)) return std::isnan(y) ? 0 : kInf;  // an undefined exact value
  if (std::isinf(x.hi)) return y == x.hi ? 0 : kInf;
  if (!std::isfinite(y)) return kInf;
  // y - hi = s + t exactly (Knuth's TwoSum), then the low parts.
  const double s = y - x.hi, v = s - y, t = (y - (s - v)) + (-x.hi - v);
  return std::fabs(s + (t - x.lo));
}

double abs_error(Format f, double y, const DD& x) {
  if (std::isinf(y) && std::isfinite(x.hi)) {
    // Rounding x to nearest in f overflows when |x| >= max + ulp(max)/2,
    // the tie going to the infinity (max's last bit is odd). |x| - max is
    // exact below 2 max (Sterbenz), and x's low part decides at the tie.
    const FormatInfo fi = info(f);
    const double max = std::ldexp(2.0 - std::ldexp(1.0, 1 - fi.precision), fi.emax);
    const double half_ulp = std::ldexp(1.0, fi.emax - fi.precision);
    const double magnitude = std::fabs(x.hi), beyond = std::signbit(x.hi) ? -x.lo : x.lo;
    const bool overflows =
        magnitude >= 2 * max || (magnitude >= max && (magnitude - max) + beyond >= half_ulp);
    if (overflows && std::signbit(y) == std::signbit(x.hi)) return 0;
  }
  return abs_error(y, x);
}

double ulp_error(Format f, double y, mpfr_srcptr x) {
  if (mpfr_nan_p(x)) return std::isnan(y) ? 0 : kInf;
  if (mpfr_inf_p(x)) return std::isinf(y) && (y > 0) == (mpfr_sgn(x) > 0) ? 0 : kInf;
  if (!std::isfinite(y)) return kInf;
  Mpfr d(std::max<mpfr_prec_t>(kExact, mpfr_get_prec(x) + 64));
  mpfr_d_sub(d.v, y, x, MPFR_RNDN);  // exact: enough bits for both
  mpfr_abs(d.v, d.v, MPFR_RNDN);
  mpfr_mul_2si(d.v, d.v, -ulp_exponent(f, x), MPFR_RNDN);  // / ulp: exact
  return mpfr_get_d(d.v, MPFR_RNDN);
}

double ulp_error(Format f, double y, const DD& x) {
  const double err = abs_error(f, y, x);
  if (err == 0 || std::isinf(err)) return err;
  return err / ulp(f, x);  // a power of two
}

double normwise_error(Format f, std::span<const double> y, std::span<const DD> x) {
  if (y.size() != x.size()) throw std::invalid_argument("normwise_error: sizes differ");
  Mpfr xv(kExact), diff(128), num(128), den(128), sq(128);
  mpfr_set_zero(num.v, 1);
  mpfr_set_zero(den.v, 1);
  for (std::size_t i = 0; i < y.size(); ++i) {
    set_dd(xv.v, x[i]);
    if (!mpfr_number_p(xv.v)) {
      if (ulp_error(f, y[i], xv.v) != 0) return kInf;
      continue;  // a matching infinity or NaN contributes nothing
    }
    if (!std::isfinite(y[i])) {
      if (abs_error(f, y[i], x[i]) == 0) continue;  // the infinity x rounds to
      return kInf;
    }
    mpfr_d_sub(diff.v, y[i], xv.v, MPFR_RNDN);  // y - x, one rounding to 128 bits
    mpfr_sqr(sq.v, diff.v, MPFR_RNDN);
    mpfr_add(num.v, num.v, sq.v, MPFR_RNDN);
    mpfr_sqr(sq.v, xv.v, MPFR_RNDN);
    mpfr_add(den.v, den.v, sq.v, MPFR_RNDN);
  }
  if (mpfr_zero_p(num.v)) return 0;
  if (mpfr_zero_p(den.v)) return kInf;
  mpfr_div(num.v, num.v, den.v, MPFR_RNDN);
  mpfr_sqrt(num.v, num.v, MPFR_RNDN);
  mpfr_mul_2si(num.v, num.v, info(f).precision, MPFR_RNDN);  // / u, u = 2^-p
  return mpfr_get_d(num.v, MPFR_RNDN);
}

}  // namespace moacert::oracle
