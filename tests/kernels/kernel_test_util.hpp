// Shared machinery of the kernel tests: layouts of every kind, random inputs
// in a format, running a registered variant, and the DNF in double on the
// exact values the kernel received.
//
// Tolerances. A kernel in format F (unit roundoff u = 2^-p) and the DNF in
// double (u_ref = 2^-53) each compute every output as sums of products. For
// a sum of n terms computed in any order, |computed - exact| <= γ_n Σ|terms|
// with γ_n = n u / (1 - n u) (Higham, Accuracy and Stability, Lemma 3.4 and
// eq. 3.5), and errors already in the terms add their own size times their
// weight. Each test derives, from bounds on Σ|terms| that follow from the
// inputs' range, an absolute bound per output tensor; it allows the sum of
// the kernel's bound (u of F) and the reference's (u of double).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "reference/problem.hpp"
#include "reference/tensor.hpp"

namespace moacert::kernels::testing {

using moa::extent_t;
using moa::Layout;
using moa::Shape;

inline double unit_roundoff(Format f) {
  return std::ldexp(1.0, -info(f).precision);
}
inline double gamma(double n, double u) {
  return n * u / (1.0 - n * u);
}

// The layouts a kernel must honour.
enum class LayoutKind { row_major, col_major, permuted, padded };
inline const char* layout_name(LayoutKind k) {
  switch (k) {
    case LayoutKind::row_major:
      return "row_major";
    case LayoutKind::col_major:
      return "col_major";
    case LayoutKind::permuted:
      return "permuted";
    case LayoutKind::padded:
      return "padded";
  }
  return "?";
}

inline Layout make_layout(const Shape& s, LayoutKind kind) {
  const int r = s.rank();
  switch (kind) {
    case LayoutKind::row_major:
      return Layout::row_major(s);
    case LayoutKind::col_major:
      return Layout::col_major(s);
    case LayoutKind::permuted: {
      // rank 4: (B,H,N,D) stored as BNHD; rank 3: axes 1 and 0 swapped;
      // rank 2: transposed; rank 1: reversed is itself, so row-major.
      std::vector<int> order(r);
      for (int k = 0; k < r; ++k) order[k] = k;
      if (r == 4) order = {0, 2, 1, 3};
      if (r == 3) order = {1, 0, 2};
      if (r == 2) order = {1, 0};
      return Layout::permuted(s, order);
    }
    case LayoutKind::padded: {
      Shape pad = Shape::filled(r, 1);
      if (r > 0) pad[r - 1] = 3;  // a row pitch that is not a multiple of any vector
      std::vector<int> order(r);
      for (int k = 0; k < r; ++k) order[k] = k;
      return Layout::padded(s, order, pad);
    }
  }
  return Layout::row_major(s);
}

// A tensor of `shape` in `layout` holding uniform values in [lo, hi],
// rounded to the dtype.
inline AnyTensor random_tensor(DType dt, const Shape& shape, LayoutKind kind, std::mt19937& rng,
                               double lo = -1, double hi = 1) {
  AnyTensor t(dt, make_layout(shape, kind));
  std::uniform_real_distribution<double> u(lo, hi);
  for (const moa::Index& i : moa::iota(shape)) t.set(i, u(rng));
  return t;
}

// The values of any tensor, exactly, as a row-major double tensor.
inline moa::Tensor<double> to_double(const AnyTensor& t) {
  moa::Tensor<double> out(t.shape());
  for (const moa::Index& i : moa::iota(t.shape())) out.view()(i) = t.get(i);
  return out;
}

inline AnyTensor from_double(DType dt, const moa::Tensor<double>& x, LayoutKind kind) {
  AnyTensor t(dt, make_layout(x.shape(), kind));
  for (const moa::Index& i : moa::iota(x.shape())) t.set(i, x.view()(i));
  return t;
}

// Runs a variant; outputs in layout `kind` (NaN-filled first, so an output
// element the kernel forgets shows).
inline std::vector<AnyTensor> run_variant(const Variant& v, const Problem& p,
                                          const std::vector<AnyTensor>& inputs, LayoutKind kind,
                                          int threads = 0) {
  std::vector<AnyTensor> outs;
  for (const Shape& s : output_shapes(p)) {
    AnyTensor t(dtype_of(p.format), make_layout(s, kind));
    for (const moa::Index& i : moa::iota(s)) t.set(i, std::nan(""));
    outs.push_back(std::move(t));
  }
  std::vector<TensorRef> in_refs, out_refs;
  for (const AnyTensor& t : inputs) in_refs.push_back(t.ref());
  for (AnyTensor& t : outs) out_refs.push_back(t.ref());
  v.run(p, in_refs, out_refs, RunOptions{threads});
  return outs;
}

inline const Variant& variant(Op op, const std::string& name) {
  const Variant* v = Registry::builtin().find(op, name);
  if (!v) throw std::logic_error("variant " + name + " is not registered");
  return *v;
}

// Every element of `got` within `tol` of `want` (both finite, or equal
// infinities); reports the worst element.
inline ::testing::AssertionResult near_all(const AnyTensor& got, const moa::Tensor<double>& want,
                                           double tol, const std::string& what) {
  double worst = 0;
  moa::Index worst_at;
  for (const moa::Index& i : moa::iota(want.shape())) {
    const double g = got.get(i), w = want.view()(i);
    if (std::isinf(w) || std::isinf(g)) {
      if (g != w) {
        return ::testing::AssertionFailure()
               << what << " at " << i.str() << ": got " << g << ", want " << w;
      }
      continue;
    }
    const double err = std::fabs(g - w);
    if (!(err <= worst)) {  // NaN counts as the worst
      worst = std::isnan(err) ? INFINITY : err;
      worst_at = i;
    }
  }
  if (std::getenv("MOACERT_TEST_VERBOSE"))  // how close to the bound a case comes
    std::printf("  %s: max error %.3g, bound %.3g\n", what.c_str(), worst, tol);
  if (worst <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": max error " << worst << " at "
                                       << worst_at.str() << " exceeds the bound " << tol;
}

// Bitwise equality of two outputs of the same layout.
inline bool bitwise_equal(const AnyTensor& a, const AnyTensor& b) {
  return a.storage_bytes() == b.storage_bytes() &&
         std::memcmp(a.data(), b.data(), a.storage_bytes()) == 0;
}

}  // namespace moacert::kernels::testing
