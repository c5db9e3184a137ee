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

// MPFR works in integer arithmetic, but its conversions from and to double
// are only promised under the default rounding mode, so each call runs
// under round-to-nearest.
class NearestRounding {
 public:
  NearestRounding() : saved_(std::fegetround()) { std::fesetround(FE_TONEAREST); }
  ~NearestRounding() { std::fesetround(saved_); }
  NearestRounding(const NearestRounding&) = delete;
  NearestRounding& operator=(const NearestRounding&) = delete;

 private:
  int saved_;
};

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

int thread_count(int requested) {
  return requested > 0 ? requested : omp_get_max_threads();
}

}  // namespace moacert::oracle::detail
