// What the DNF asks of a scalar type. The DNF is written once as templates
// over T and instantiated with double, float, mpfr_float and the oracle's
// interval types; exp, log and sqrt are found by argument-dependent lookup
// (std:: for built-in types, boost::multiprecision:: for MPFR and MPFI), and
// the few choices that differ between point and interval arithmetic live in
// ScalarTraits, which an interval type specialises.
#pragma once

#include <cmath>
#include <limits>

namespace moacert::dnf {

template <class T>
struct ScalarTraits {
  static T from_double(double x) { return T(x); }
  static T zero() { return T(0); }
  static T neg_inf() { return -std::numeric_limits<T>::infinity(); }
  // The larger of two values (either one when an interval type cannot tell).
  static T max(const T& a, const T& b) { return b > a ? b : a; }
  // The shift of a max-shifted exponential. Softmax and log-sum-exp are
  // exactly invariant under any finite shift, so an interval type may
  // replace the row max by a point inside it to keep its enclosures tight.
  static T shift(const T& row_max) { return row_max; }
};

}  // namespace moacert::dnf
