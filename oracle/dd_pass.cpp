// The first pass of f64 targets (docs/oracle.md#first-pass-f64): the DNF
// instantiated with DDInterval, intervals of double-doubles. Compiled with
// -ffp-contract=off (see detail/dd_interval.hpp); runs under
// round-to-nearest, which each thread of the pass sets.
#include <cfenv>
#include <stdexcept>

#include <mpfr.h>

#include "oracle/detail/dd_interval.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/scoped_rounding.hpp"
#include "oracle/detail/units.hpp"

namespace moacert::oracle::detail {

namespace {

constexpr mpfr_prec_t kBits = 128;

struct Scratch {
  mpfr_t x, rest;
  Scratch() {
    mpfr_init2(x, kBits);
    mpfr_init2(rest, 2 * kBits);
  }
  ~Scratch() {
    mpfr_clear(x);
    mpfr_clear(rest);
  }
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// f at an end of `a`, rounded in direction `rnd` (down for a lower end, up
// for an upper one; f increasing): the end's value hi + lo rounded to 128
// bits in that direction, f of it in that direction, then to a DD in it.
DD bound(int (*f)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t), const DD& end, mpfr_rnd_t rnd) {
  Scratch& s = scratch();
  mpfr_set_d(s.x, end.hi, MPFR_RNDN);  // exact
  mpfr_add_d(s.x, s.x, end.lo, rnd);
  f(s.x, s.x, rnd);
  DD d;
  d.hi = mpfr_get_d(s.x, MPFR_RNDN);
  if (!std::isfinite(d.hi)) return d;
  mpfr_sub_d(s.rest, s.x, d.hi, MPFR_RNDN);  // exact at 256 bits
  d.lo = mpfr_get_d(s.rest, rnd);
  return d;
}

DDInterval monotone(int (*f)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t), const DDInterval& a) {
  return DDInterval::of(bound(f, a.lo, MPFR_RNDD), bound(f, a.hi, MPFR_RNDU), /*exact=*/true);
}

// The error-free transformations need each operation rounded to nearest
// and nothing contracted; check it on values the compiler cannot see.
void check_error_free() {
  volatile double one = 1, tiny = 0x1p-60, near_one = 1 + 0x1p-30;
  const DD s = two_sum(one, tiny), p = two_prod(near_one, near_one);
  if (s.hi != 1 || s.lo != 0x1p-60 || p.lo != 0x1p-60) {
    throw std::logic_error("oracle: the double-double pass's arithmetic is not error-free");
  }
}

}  // namespace

DDInterval exp_by_mpfr(const DDInterval& a) {
  if (a.is_nan()) return DDInterval::nan();
  return monotone(mpfr_exp, a);
}

// exp runs once per score, too often for MPFR: the pass's own enclosure
// where it applies (dd_exp.cpp), MPFR's bounds elsewhere.
DDInterval exp(const DDInterval& a) {
  if (a.is_nan()) return DDInterval::nan();
  if (a.is_point() && a.lo.hi == 0) return DDInterval(1.0);  // exp(0) = 1, exact
  DDInterval r;
  if (exp_by_taylor(a, dd_exp_constants(), r)) return r;
  return exp_by_mpfr(a);
}

DDInterval log(const DDInterval& a) {
  if (a.is_nan() || !(a.lo.hi > 0)) return DDInterval::nan();
  return monotone(mpfr_log, a);
}

DDInterval sqrt(const DDInterval& a) {
  if (a.is_nan() || a.lo.hi < 0) return DDInterval::nan();
  return monotone(mpfr_sqrt, a);
}

void dd_pass(const Case& c, std::span<const Unit> units, int threads, const DDSink& sink) {
  for (const Unit& u : units) {
    if (u.kind == UnitKind::batch) {
      throw std::logic_error("oracle: block has no first pass (see passes.hpp)");
    }
  }
  // One run of units at a time (for_each_chunk): their rows converted, then
  // the run's units spread over the threads.
  const int team = thread_count(threads);
  const Conversion converts = Conversion::every_read;  // no op streams at this pass
  const double limit =
      chunk_limit(largest_unit(c.problem, units, converts), team, double(sizeof(DDInterval)));
  bool failed = false;
  std::string error;
  Inputs<DDInterval> in;  // each run's, its storage lent to the next (make_inputs)
  for_each_chunk(c.problem, units, converts, limit, [&](std::size_t first, std::size_t count) {
    if (failed) return;
    in = make_inputs<DDInterval>(c, units.subspan(first, count), converts, std::move(in));
    const auto begin = static_cast<std::int64_t>(first), end = begin + std::int64_t(count);
#pragma omp parallel num_threads(team)
    {
      NearestRounding nearest;
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t u = begin; u < end; ++u) {
        try {
          if (u == 0) check_error_free();
          run_unit(c.problem, in, units[static_cast<std::size_t>(u)],
                   [&](int output, moa::extent_t flat, const DDInterval& x) {
                     sink(static_cast<std::size_t>(u), output, flat, x.lo, x.hi);
                   });
        } catch (const std::exception& e) {
#pragma omp critical(moacert_oracle_dd_error)
          {
            if (!failed) error = e.what();
            failed = true;
          }
        }
      }
    }
  });
  if (failed) throw std::logic_error(error);
}

}  // namespace moacert::oracle::detail
