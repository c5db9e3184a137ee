// ULP arithmetic (docs/design.md, "Error, rounding and bounds"):
//   ulp_F(x) = 2^(max(e, emin) - p + 1),  e = floor(log2 |x|)
// (the MPFR/Goldberg definition), with p and emin of format F; for x = 0 it
// is the smallest subnormal 2^(emin - p + 1). The error of a result y
// against the exact x is |y - x| / ulp_F(x), computed exactly (to double's
// accuracy in the quotient): a correctly rounded y has error <= 0.5.
//
// Non-finite values: NaN or an infinity where x is finite is an unbounded
// error (+inf), except the infinity that x rounds to in the format when x
// lies past its overflow threshold (the correctly rounded result: 0); y == x
// for an infinite x (same sign) is 0, and y NaN for an x that is NaN (an
// undefined exact value) is 0; anything else against an infinite or NaN x
// is +inf.
#pragma once

#include <span>

#include <mpfr.h>

#include "oracle/oracle.hpp"
#include "reference/format.hpp"

namespace moacert::oracle {

// This file is the one definition of the error: the judge
// (properties/check.cpp), the certificate and the tests all use it.

// ulp_F(x) as a double (a power of two; +inf for x infinite or NaN).
double ulp(Format f, const DD& x);
double ulp(Format f, mpfr_srcptr x);

// |y - x|, with the non-finite rules above (0 or +inf). For a DD x it is
// computed in double with an error-free difference: exact when y and x.hi
// are within a factor of two of each other, and otherwise within a few units
// of double's roundoff of |y - x| (far below any format's ulp).
double abs_error(double y, const DD& x);
// The same in format f: 0 also for the infinity a finite x rounds to in f
// (|x| at or past f's overflow threshold, (2 - 2^-p) 2^emax, where rounding
// to nearest gives the infinity of x's sign). What the judge measures.
double abs_error(Format f, double y, const DD& x);

// |y - x| / ulp_F(x), rounded to nearest (the DD form: abs_error over a power
// of two, so to double's accuracy).
double ulp_error(Format f, double y, const DD& x);
double ulp_error(Format f, double y, mpfr_srcptr x);

// ||y - x||_2 / ||x||_2 / u with u = 2^-p: the normwise relative error in
// units of the format's unit roundoff. +inf when some y is not finite where
// x is, or when x = 0 and y != x; 0 when y == x everywhere. Differences are
// exact (MPFR), the norms accurate to about 2^-100.
double normwise_error(Format f, std::span<const double> y, std::span<const DD> x);

}  // namespace moacert::oracle
