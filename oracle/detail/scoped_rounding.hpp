// The rounding mode of the calling thread, set for a scope: the first
// passes compute under round-upward; MPFR's conversions from and to double
// are only promised under the default mode, so calls into MPFR from inside
// a pass run under round-to-nearest.
#pragma once

#include <cfenv>

namespace moacert::oracle::detail {

template <int Mode>
class ScopedRounding {
 public:
  ScopedRounding() : saved_(std::fegetround()) { std::fesetround(Mode); }
  ~ScopedRounding() { std::fesetround(saved_); }
  ScopedRounding(const ScopedRounding&) = delete;
  ScopedRounding& operator=(const ScopedRounding&) = delete;

 private:
  int saved_;
};

using UpwardRounding = ScopedRounding<FE_UPWARD>;
using NearestRounding = ScopedRounding<FE_TONEAREST>;

}  // namespace moacert::oracle::detail
