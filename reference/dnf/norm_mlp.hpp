// The DNF of RMSNorm and the SwiGLU MLP, over the scalar type T.
//   rmsnorm:    y_td = x_td / sqrt(mean_d(x_td²) + eps) · w_d
//   mlp.swiglu: y = (silu(x W1) ∘ (x W3)) W2,  silu(z) = z / (1 + exp(-z))
#pragma once

#include <vector>

#include "reference/dnf/scalar.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::dnf {

using moa::extent_t;
using moa::View;

// One row of rmsnorm over d < D: x(d) and w(d) give the row's elements and
// the weight's; y(d, value) takes each element of the output (value may be
// an expression of T, evaluated where y assigns it). The oracle's MPFI pass
// runs it on rows read from the case rather than converted, handing each
// element on (oracle/detail/streamed_norm.hpp): the same operations in
// this order.
template <class T, class X, class W, class Y>
void rmsnorm_row(extent_t D, double eps_d, X&& x, W&& w, Y&& y) {
  using Tr = ScalarTraits<T>;
  using std::sqrt;
  const T eps = Tr::from_double(eps_d);
  T sum_sq = Tr::zero();
  for (extent_t d = 0; d < D; ++d) sum_sq += x(d) * x(d);
  const T rms = sqrt(sum_sq / Tr::from_double(double(D)) + eps);
  for (extent_t d = 0; d < D; ++d) y(d, x(d) / rms * w(d));
}

// x (T,D), w (D) -> y (T,D)
template <class T>
void rmsnorm(View<const T> x, View<const T> w, double eps_d, View<T> y) {
  const extent_t rows = x.shape()[0], D = x.shape()[1];
  for (extent_t t = 0; t < rows; ++t)
    rmsnorm_row<T>(
        D, eps_d, [&](extent_t d) -> const T& { return x(t, d); },
        [&](extent_t d) -> const T& { return w(d); },
        [&](extent_t d, const auto& value) { y(t, d) = value; });
}

template <class T>
T silu(const T& z) {
  using std::exp;
  return z / (ScalarTraits<T>::from_double(1) + exp(-z));
}

// C (m,n) = A (m,k) B (k,n), the plain triple loop.
template <class T>
void matmul(View<const T> a, View<const T> b, View<T> c) {
  const extent_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  for (extent_t i = 0; i < m; ++i) {
    for (extent_t j = 0; j < n; ++j) {
      T acc = ScalarTraits<T>::zero();
      for (extent_t p = 0; p < k; ++p) acc += a(i, p) * b(p, j);
      c(i, j) = acc;
    }
  }
}

// x (T,Dm), w1, w3 (Dm,F), w2 (F,Dm) -> y (T,Dm)
template <class T>
void mlp_swiglu(View<const T> x, View<const T> w1, View<const T> w3, View<const T> w2, View<T> y) {
  const extent_t rows = x.shape()[0], F = w1.shape()[1];
  moa::Tensor<T> gate(moa::Shape{rows, F}), up(moa::Shape{rows, F});  // (T, F)
  matmul<T>(x, w1, gate.view());
  matmul<T>(x, w3, up.view());
  for (const moa::Index& idx : moa::iota(gate.shape()))
    gate.view()(idx) = silu(gate.view()(idx)) * up.view()(idx);
  matmul<T>(gate.view(), w2, y);
}

}  // namespace moacert::dnf
