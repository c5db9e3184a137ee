// An mpfr_t owned by a scope: initialised at a precision, freed on exit.
#pragma once

#include <mpfr.h>

namespace moacert::oracle::detail {

struct Mpfr {
  mpfr_t v;
  explicit Mpfr(mpfr_prec_t prec) { mpfr_init2(v, prec); }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

}  // namespace moacert::oracle::detail
