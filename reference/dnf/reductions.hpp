// The reductions the attention DNF spends its time in (O(M·D) per row),
// and the softmax's normaliser, named so that an enclosure type can
// evaluate them its own way:
//   dots:          out_j = Σ_d a_d · x_jd   (the scores, dP)
//   weighted_sum:  out_d = Σ_j w_j · x_jd   (O = P · V)
//   sum:           Σ_j x_j                 (l = Σ_j exp(S_j - m))
// The primary template is the definition read as loops, in the order of
// the formulas (d ascending, j ascending, each sum from zero). The oracle's
// first pass specialises it for FastInterval to run vectorised
// (oracle/fast_reductions.cpp); an interval specialisation may sum in
// another order because every order encloses the same exact sum. The
// double-double pass's (oracle/dd_reductions.cpp) keeps this order, lane by
// lane, so that its enclosures are the plain loops' bit for bit.
#pragma once

#include "reference/dnf/scalar.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::dnf {

// Whether a view's last axis is contiguous, as the oracle's vectorised
// reductions need (always, for its row-major inputs).
template <class T>
bool contiguous_rows(const moa::View<T>& v) {
  return v.layout().is_flat() && v.layout().stride(v.rank() - 1) == 1;
}

// The loops of the definition, for any T (and a specialisation's fallback
// on layouts it does not handle).
// @pre a (D), x (>= rows, D), out has room for `rows`
template <class T>
void plain_dots(const moa::View<const T>& a, const moa::View<const T>& x, moa::extent_t rows,
                T* out) {
  const moa::extent_t D = a.shape()[0];
  for (moa::extent_t j = 0; j < rows; ++j) {
    T dot = ScalarTraits<T>::zero();
    for (moa::extent_t d = 0; d < D; ++d) dot += a(d) * x(j, d);
    out[j] = dot;
  }
}

// @pre w has `rows` elements, x (>= rows, D), out has room for D
template <class T>
void plain_weighted_sum(const T* w, const moa::View<const T>& x, moa::extent_t rows, T* out) {
  const moa::extent_t D = x.shape()[1];
  for (moa::extent_t d = 0; d < D; ++d) {
    T acc = ScalarTraits<T>::zero();
    for (moa::extent_t j = 0; j < rows; ++j) acc += w[j] * x(j, d);
    out[d] = acc;
  }
}

// @pre x has n elements
template <class T>
T plain_sum(const T* x, moa::extent_t n) {
  T acc = ScalarTraits<T>::zero();
  for (moa::extent_t j = 0; j < n; ++j) acc += x[j];
  return acc;
}

template <class T>
struct Reductions {
  static void dots(const moa::View<const T>& a, const moa::View<const T>& x, moa::extent_t rows,
                   T* out) {
    plain_dots(a, x, rows, out);
  }
  static void weighted_sum(const T* w, const moa::View<const T>& x, moa::extent_t rows, T* out) {
    plain_weighted_sum(w, x, rows, out);
  }
  static T sum(const T* x, moa::extent_t n) { return plain_sum(x, n); }
};

}  // namespace moacert::dnf
