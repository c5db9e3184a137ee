// Correct rounding to a target format: nearest, ties to even, with the
// format's subnormal range (gradual underflow) and overflow to infinity, as
// IEEE 754 rounds. Results are exact in double, so they travel as double.
#pragma once

#include <mpfr.h>

#include "reference/format.hpp"

namespace moacert::oracle {

// x rounded to f. Exact logic on MPFR numbers of any precision: no global
// exponent range is changed, so it is safe in any thread and leaves other
// MPFR computations alone. A zero keeps its sign; NaN gives NaN.
double round_to_format(mpfr_srcptr x, Format f);

// The same for a double (f64 is the identity).
double round_to_format(double x, Format f);

}  // namespace moacert::oracle
