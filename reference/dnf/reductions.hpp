// The reductions the attention DNF spends its time in (O(M·D) per row),
// and the softmax's normaliser, named so that an enclosure type can
// evaluate them its own way:
//   dots:          out_j = Σ_d a_d · x_jd   (the scores, dP)
//   weighted_sum:  out_d = Σ_j w_j · x_jd   (O = P · V)
//   sum:           Σ_j x_j                 (l = Σ_j exp(S_j - m))
//   shifted_exps:  x_j = exp(x_j - m)      (the numerators; not a reduction,
//                                           but as many operations per row)
// The primary template is the definition read as loops, in the order of
// the formulas (d ascending, j ascending, each sum from zero). The oracle's
// first pass specialises it for FastInterval to run vectorised
// (oracle/fast_reductions.cpp); an interval specialisation may sum in
// another order because every order encloses the same exact sum. The
// double-double pass's (oracle/dd_reductions.cpp) keeps this order, lane by
// lane, so that its enclosures are the plain loops' bit for bit.
#pragma once

#include <algorithm>
#include <span>

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

// out_d += Σ_j w_j · x_jd, j ascending, each sum going on from out_d: the
// loops of plain_weighted_sum, continued over further rows of x. A sum
// taken a block of rows at a time this way is the same operations in the
// same order as taken whole (the MPFI pass reads a kv head's values a
// block at a time: oracle/detail/streamed_attention.hpp).
// @pre w has `rows` elements, x (>= rows, D), out holds D sums
template <class T>
void plain_weighted_sum_onto(const T* w, const moa::View<const T>& x, moa::extent_t rows, T* out) {
  const moa::extent_t D = x.shape()[1];
  for (moa::extent_t d = 0; d < D; ++d) {
    T acc = out[d];
    for (moa::extent_t j = 0; j < rows; ++j) acc += w[j] * x(j, d);
    out[d] = acc;
  }
}

// @pre w has `rows` elements, x (>= rows, D), out has room for D
template <class T>
void plain_weighted_sum(const T* w, const moa::View<const T>& x, moa::extent_t rows, T* out) {
  std::fill(out, out + x.shape()[1], ScalarTraits<T>::zero());
  plain_weighted_sum_onto(w, x, rows, out);
}

// x_j = exp(x_j - shift) for j < n (the softmax's numerators), in place.
template <class T>
void plain_shifted_exps(T* x, moa::extent_t n, const T& shift) {
  using std::exp;
  for (moa::extent_t j = 0; j < n; ++j) x[j] = exp(x[j] - shift);
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
  static void shifted_exps(T* x, moa::extent_t n, const T& shift) {
    plain_shifted_exps(x, n, shift);
  }
};

// The same reductions for several query rows of one head at once, row r
// against the first rows[r] rows of x (the keys it sees), into out[r]:
//   dots:           out[r]_j = Σ_d a[r]_d · x_jd
//   weighted_sums:  out[r]_d = Σ_j w[r]_j · x_jd
// Each row's values are Reductions<T>'s for that row alone, bit for bit;
// a specialisation may only share the reads of x between the rows (the
// first pass's meets a block of keys with every row while it is in cache:
// a row at a time streamed a kv head's keys from memory once per query
// row, which at 16384 keys no cache holds).
//
// Row by row: the definition (and a specialisation's fallback).
template <class T>
void each_row_dots(std::span<const moa::View<const T>> a, const moa::View<const T>& x,
                   const moa::extent_t* rows, T* const* out) {
  for (std::size_t r = 0; r < a.size(); ++r) Reductions<T>::dots(a[r], x, rows[r], out[r]);
}
template <class T>
void each_row_weighted_sums(const T* const* w, const moa::View<const T>& x,
                            const moa::extent_t* rows, moa::extent_t R, T* const* out) {
  for (moa::extent_t r = 0; r < R; ++r) Reductions<T>::weighted_sum(w[r], x, rows[r], out[r]);
}

template <class T>
struct RowReductions {
  static void dots(std::span<const moa::View<const T>> a, const moa::View<const T>& x,
                   const moa::extent_t* rows, T* const* out) {
    each_row_dots(a, x, rows, out);
  }
  static void weighted_sums(const T* const* w, const moa::View<const T>& x,
                            const moa::extent_t* rows, moa::extent_t R, T* const* out) {
    each_row_weighted_sums(w, x, rows, R, out);
  }
};

}  // namespace moacert::dnf
