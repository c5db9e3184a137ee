// The narrowing pass (docs/oracle.md#narrowing): the DNF instantiated with
// Boost's mpfi_float at a given precision. The only file of the oracle that
// includes Boost.Multiprecision.
//
// Boost 1.74 keeps mpfi_float's default precision in a plain static, shared
// by all threads, so the precision is set once before the parallel region
// and every unit of one call runs at the same precision (the Ziv loop in
// oracle.cpp raises it level by level, between calls); a mutex keeps
// concurrent calls from different threads apart.
#include <cmath>
#include <limits>
#include <mutex>
#include <string>

#include <omp.h>
#include <boost/multiprecision/mpfi.hpp>

#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"

namespace moacert::dnf {

using Mpfi = boost::multiprecision::mpfi_float;

template <>
struct ScalarTraits<Mpfi> {
  static Mpfi from_double(double x) { return Mpfi(x); }  // exact: precision >= 53
  static Mpfi zero() { return Mpfi(0); }
  static Mpfi neg_inf() { return Mpfi(-std::numeric_limits<double>::infinity()); }
  // max is increasing in each argument: the max of the ends. mpfr_max
  // would return the other operand for a NaN; NaN propagates here instead.
  static Mpfi max(const Mpfi& a, const Mpfi& b) {
    mpfi_srcptr x = a.backend().data(), y = b.backend().data();
    Mpfi r;
    mpfi_ptr z = r.backend().data();
    if (mpfi_nan_p(x) || mpfi_nan_p(y)) {
      mpfr_set_nan(&z->left);
      mpfr_set_nan(&z->right);
      return r;
    }
    mpfr_max(&z->left, &x->left, &y->left, MPFR_RNDD);
    mpfr_max(&z->right, &x->right, &y->right, MPFR_RNDU);
    return r;
  }
  // A point of the row max (softmax and LSE are exactly invariant under any
  // finite shift); a point stays itself, so a point infinity behaves as the
  // IEEE DNF does.
  static Mpfi shift(const Mpfi& m) {
    mpfi_srcptr x = m.backend().data();
    if (mpfi_nan_p(x) || mpfr_equal_p(&x->left, &x->right)) return m;
    Mpfi r;
    mpfi_ptr z = r.backend().data();
    if (mpfr_number_p(&x->left)) {
      mpfi_set_fr(z, &x->left);
    } else if (mpfr_number_p(&x->right)) {
      mpfi_set_fr(z, &x->right);
    } else {
      return m;
    }
    return r;
  }
};

}  // namespace moacert::dnf

namespace moacert::oracle::detail {

namespace {

// Boost counts precision in decimal digits: the smallest count whose
// binary precision reaches `bits`.
unsigned digits10_for(int bits) {
  unsigned digits10 = 1;
  while (boost::multiprecision::detail::digits10_2_2(digits10) < static_cast<unsigned long>(bits))
    ++digits10;
  return digits10;
}

}  // namespace

double mpfi_element_bytes(int bits) {
  // The precision Boost initialises an mpfi_float with at that digit count
  // (mpfi.hpp: digits10_2_2), then MPFR's limbs per end: mpfr_init2
  // allocates one size limb before them.
  const double prec = double(boost::multiprecision::detail::digits10_2_2(digits10_for(bits)));
  const double limbs = std::ceil(prec / double(GMP_NUMB_BITS));
  return double(sizeof(dnf::Mpfi)) + 2 * heap_bytes(8 * (limbs + 1));
}

int mpfi_pass(const Case& c, std::span<const Unit> units, int bits, int threads,
              const MpfiSink& sink) {
  using dnf::Mpfi;
  const unsigned digits10 = digits10_for(bits);
  // One MPFI pass at a time in the process: concurrent evaluate() calls
  // (say, certify checking cases in parallel) would otherwise change the
  // precision under each other's feet.
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  const unsigned saved = Mpfi::default_precision();
  Mpfi::default_precision(digits10);
  const int used = static_cast<int>(mpfi_get_prec(Mpfi(0).backend().data()));

  // One run of units at a time (for_each_chunk): their rows converted at
  // kMpfiInputBits, but those the op streams from the case
  // (OracleOp::streamed_at_mpfi), then the run's units spread over the
  // threads at this precision. Converting every pending unit's rows at
  // once would hold a decode sample's kv heads.
  const int team = thread_count(threads);
  const Conversion converts = Conversion::mpfi;  // but the rows the op streams
  const double limit = chunk_limit(largest_unit(c.problem, units, converts), team,
                                   mpfi_element_bytes(kMpfiInputBits));
  bool failed = false;
  std::string error;
  Inputs<Mpfi> in;  // each run's, its storage lent to the next (make_inputs)
  for_each_chunk(c.problem, units, converts, limit, [&](std::size_t first, std::size_t count) {
    if (failed) return;
    Mpfi::default_precision(digits10_for(kMpfiInputBits));
    in = make_inputs<Mpfi>(c, units.subspan(first, count), converts, std::move(in));
    Mpfi::default_precision(digits10);
    const auto begin = static_cast<std::int64_t>(first), end = begin + std::int64_t(count);
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
    for (std::int64_t u = begin; u < end; ++u) {
      try {
        run_unit(c.problem, in, units[static_cast<std::size_t>(u)],
                 [&](int output, moa::extent_t flat, const Mpfi& x) {
                   sink(static_cast<std::size_t>(u), output, flat, x.backend().data());
                 });
      } catch (const std::exception& e) {
#pragma omp critical(moacert_oracle_mpfi_error)
        {
          if (!failed) error = e.what();
          failed = true;
        }
      }
    }
  });
  Mpfi::default_precision(saved);
  if (failed) throw std::logic_error(error);
  return used;
}

}  // namespace moacert::oracle::detail
