// Shared pieces of the attention kernel tests: random inputs in a format and
// a layout, the DNF in double on exactly those values, and tolerances
// derived from the format's unit roundoff.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "reference/moa/moa.hpp"
#include "reference/problem.hpp"
#include "reference/tensor.hpp"

namespace moacert::testing_attn {

using moa::extent_t;
using moa::Layout;
using moa::Shape;

enum class Kind { row_major, col_major, permuted, padded, tiled };
inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::row_major:
      return "row-major";
    case Kind::col_major:
      return "col-major";
    case Kind::permuted:
      return "permuted";
    case Kind::padded:
      return "padded";
    case Kind::tiled:
      return "tiled";
  }
  return "?";
}
inline constexpr Kind kAllKinds[] = {Kind::row_major, Kind::col_major, Kind::permuted, Kind::padded,
                                     Kind::tiled};

// A layout of `shape` of the given kind: permuted stores (B,H,N,D) as
// (B,N,H,D); padded pads the last axis by 3 and the one before by 1; tiled
// cuts every even extent in tiles of 2.
inline Layout make_layout(const Shape& shape, Kind kind) {
  const int r = shape.rank();
  switch (kind) {
    case Kind::row_major:
      return Layout::row_major(shape);
    case Kind::col_major:
      return Layout::col_major(shape);
    case Kind::permuted: {
      std::vector<int> order(r);
      for (int k = 0; k < r; ++k) order[k] = k;
      if (r >= 3) std::swap(order[1], order[2]);
      return Layout::permuted(shape, order);
    }
    case Kind::padded: {
      Shape pad = Shape::filled(r, 0);
      pad[r - 1] = 3;
      if (r >= 2) pad[r - 2] = 1;
      return Layout::padded(shape, pad);
    }
    case Kind::tiled: {
      Shape tile = Shape::filled(r, 1);
      for (int k = 0; k < r; ++k) tile[k] = shape[k] % 2 == 0 ? 2 : 1;
      return Layout::tiled(shape, tile);
    }
  }
  return Layout::row_major(shape);
}

// Values uniform in [-1, 1], rounded to the tensor's format.
inline void fill_uniform(AnyTensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  for (const moa::Index& i : moa::iota(t.shape())) t.set(i, u(rng));
}

// The logical values of a tensor, widened exactly to double, row-major.
inline moa::Tensor<double> to_double(const AnyTensor& t) {
  moa::Tensor<double> out(t.shape());
  for (const moa::Index& i : moa::iota(t.shape())) out.view()(i) = t.get(i);
  return out;
}

inline double unit_roundoff(Format f) {
  return std::ldexp(1.0, -info(f).precision);
}

// Tolerances for comparing a kernel with the DNF evaluated in double on the
// same (already rounded) inputs, with |q|, |k|, |v| <= 1. First-order
// rounding-error analysis (Higham, ch. 3), u_a the unit roundoff of the
// accumulation type (f64 for f64, f32 otherwise), u_s the storage format's:
//   scores:  |S| <= scale·D, a D-term dot product: |δS| <= D·u_a·scale·D
//   P_ij = exp(S_ij - m) / l: relative error <= 2|δS| (S and m) + 2u_a (the
//            exp's 1 ulp) + (M + 2)·u_a (the M-term sum l and the division)
//   O = Σ_j P_ij V_j: |δO| <= (rel(P) + (M + M/16 + 2)·u_a)·max|V| (M-term sum,
//            plus one online rescale per 16-key block at the finest tiling
//            tested, plus the final division)
//   LSE = m + log l: |δLSE| <= |δS| + (M + 2)·u_a + u_a·|LSE|
// The kernel and the double DNF both err (the DNF with u = 2^-53), so the
// sum of the two bounds is the tolerance; rounding the output to the storage
// format adds u_s·|x| (|O| <= max|V| = 1).
struct Tol {
  double o, lse;
};
inline Tol tolerance(Format f, extent_t D, extent_t M, double scale) {
  const double u64 = unit_roundoff(Format::f64);
  const double ua = f == Format::f64 ? u64 : unit_roundoff(Format::f32);
  const double us = unit_roundoff(f);
  auto bound = [&](double u) {
    const double dS = double(D) * u * scale * double(D);
    const double relP = 2 * dS + 2 * u + double(M + 2) * u;
    const double dO = relP + (double(M) + double(M) / 16 + 2) * u;
    const double lse_mag = scale * double(D) + std::log(double(M));
    const double dL = dS + double(M + 2) * u + u * lse_mag;
    return Tol{dO, dL};
  };
  const Tol k = bound(ua), r = bound(u64);
  const double lse_mag = scale * double(D) + std::log(double(M));
  return {k.o + r.o + us, k.lse + r.lse + us * lse_mag};
}

// Compares outputs element by element; -inf LSE must match exactly and a
// row with no visible key must give exactly O = 0.
inline void expect_close(const AnyTensor& got, const moa::Tensor<double>& want, double tol,
                         const std::string& what) {
  int failures = 0;
  for (const moa::Index& i : moa::iota(got.shape())) {
    const double g = got.get(i), w = want.view()(i);
    if (std::isinf(w) || w == 0) {
      if (!(g == w) && !(w == 0 && std::fabs(g) <= tol)) {
        ADD_FAILURE() << what << " at " << i.str() << ": got " << g << ", want " << w;
        if (++failures > 5) return;
      }
      continue;
    }
    if (!(std::fabs(g - w) <= tol)) {
      ADD_FAILURE() << what << " at " << i.str() << ": got " << g << ", want " << w << " (|diff| "
                    << std::fabs(g - w) << " > tol " << tol << ")";
      if (++failures > 5) return;
    }
  }
}

// Bitwise equality of two tensors' logical elements.
inline bool bitwise_equal(const AnyTensor& a, const AnyTensor& b) {
  const int bytes = dtype_bytes(a.dtype());
  for (const moa::Index& i : moa::iota(a.shape())) {
    if (std::memcmp(static_cast<const std::byte*>(a.data()) + a.layout()(i) * bytes,
                    static_cast<const std::byte*>(b.data()) + b.layout()(i) * bytes, bytes) != 0)
      return false;
  }
  return true;
}

}  // namespace moacert::testing_attn
