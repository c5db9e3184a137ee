// The first pass (docs/oracle.md#first-pass): the DNF instantiated with
// FastInterval, intervals of doubles with directed rounding. This file is
// compiled with -frounding-math -ffp-contract=off so that the compiler
// neither folds nor contracts operations whose rounding matters.
#include <cfenv>
#include <stdexcept>

#include <mpfr.h>
#include <omp.h>

#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"

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

// The pass relies on the compiler keeping each operation's rounding; a
// build that folded -((-x)·y) into x·y would lose the lower bounds. Check
// it once per pass on values the compiler cannot see.
void check_directed_rounding() {
  volatile double one = 1, three = 3;
  const FastInterval third = FastInterval(one) / FastInterval(three);
  const FastInterval sum = FastInterval(one) + FastInterval(1e-30 * three);
  if (!(third.lo < third.hi) || !(sum.lo < sum.hi)) {
    throw std::logic_error("oracle: directed rounding is not in effect in the fast pass");
  }
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

void fast_pass(const Case& c, std::span<const Unit> units, int threads, const FastSink& sink) {
  const Inputs<FastInterval> in = make_inputs<FastInterval>(c);
  const auto n = static_cast<std::int64_t>(units.size());
  bool failed = false;
  std::string error;
#pragma omp parallel num_threads(thread_count(threads))
  {
    UpwardRounding upward;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < n; ++u) {
      try {
        if (u == 0) check_directed_rounding();
        run_unit(c.problem, in, units[static_cast<std::size_t>(u)],
                 [&](int output, moa::extent_t flat, const FastInterval& x) {
                   sink(static_cast<std::size_t>(u), output, flat, x.lo, x.hi);
                 });
      } catch (const std::exception& e) {
#pragma omp critical(moacert_oracle_fast_error)
        {
          if (!failed) error = e.what();
          failed = true;
        }
      }
    }
  }
  if (failed) throw std::logic_error(error);
}

}  // namespace moacert::oracle::detail
