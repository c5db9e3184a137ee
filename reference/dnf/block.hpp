// The DNF of a transformer block (pre-norm, causal self-attention, gated MLP,
// no RoPE), composed from the other DNFs:
//   h = x + attn(rmsnorm(x; attn_norm)),  y = h + mlp(rmsnorm(h; mlp_norm))
//   attn(z) = concat_h(attention(z Wq, z Wk, z Wv)) Wo
// The reshapes between (B·N, H·D) and (B,H,N,D) are layouts, not copies.
#pragma once

#include "reference/dnf/attention.hpp"
#include "reference/dnf/norm_mlp.hpp"

namespace moacert::dnf {

// The (B·N, heads·D) row-major matrix `flat` seen as (B, heads, N, D).
template <class T>
View<T> as_heads(View<T> flat, extent_t B, extent_t N, extent_t heads, extent_t D) {
  return View<T>(flat.data(),
                 moa::Layout::strided({B, heads, N, D}, {N * heads * D, D, heads * D, 1}));
}

// The intermediates of a block's forward up to the MLP's input, rows (b, n)
// as b·N + n: what the regime classifier judges (properties/regimes.hpp).
template <class T>
struct BlockIntermediates {
  moa::Tensor<T> x;         // (B·N, Dm): the input
  moa::Tensor<T> q, k;      // (B·N, H·D), (B·N, Hkv·D): the attention's queries and keys
  moa::Tensor<T> h;         // (B·N, Dm): x + attn(rmsnorm(x))
  moa::Tensor<T> h_normed;  // (B·N, Dm): the MLP's input, rmsnorm(h)
};

// The block's attention scale: 1/sqrt(D), whatever the case's params.
inline double block_scale(extent_t D) {
  return 1.0 / std::sqrt(double(D));
}

// The block up to the MLP's input: x (B,N,Dm), attn_norm (Dm), wq
// (Dm,H·D), wk, wv (Dm,Hkv·D), wo (H·D,Dm), mlp_norm (Dm) -> the
// intermediates, h = x + attn(rmsnorm(x)) and the MLP's input rmsnorm(h)
// among them. The regime classifier judges these alone, so it stops here
// rather than pay for the MLP (block() runs this, then the MLP).
template <class T>
BlockIntermediates<T> block_until_mlp(View<const T> x, View<const T> attn_norm, View<const T> wq,
                                      View<const T> wk, View<const T> wv, View<const T> wo,
                                      View<const T> mlp_norm, extent_t H, extent_t Hkv,
                                      double eps) {
  const extent_t B = x.shape()[0], N = x.shape()[1], Dm = x.shape()[2], D = wq.shape()[1] / H;
  const extent_t rows = B * N;
  using moa::Shape;
  using moa::Tensor;
  Tensor<T> x_rows(Shape{rows, Dm});  // x as (B·N, Dm), whatever its layout
  for (const moa::Index& i : moa::iota(x.shape())) x_rows.view()(i[0] * N + i[1], i[2]) = x(i);
  const View<const T> x2 = x_rows.view();

  // h = x + attn(rmsnorm(x))
  Tensor<T> xn(Shape{rows, Dm}), q(Shape{rows, H * D}), k(Shape{rows, Hkv * D}),
      v(Shape{rows, Hkv * D});
  rmsnorm<T>(x2, attn_norm, eps, xn.view());
  matmul<T>(xn.view(), wq, q.view());
  matmul<T>(xn.view(), wk, k.view());
  matmul<T>(xn.view(), wv, v.view());
  Tensor<T> o(Shape{rows, H * D}), lse(Shape{B, H, N});
  attention_fwd<T>(as_heads<T>(q.view(), B, N, H, D), as_heads<T>(k.view(), B, N, Hkv, D),
                   as_heads<T>(v.view(), B, N, Hkv, D), block_scale(D),
                   /*causal=*/true, as_heads<T>(o.view(), B, N, H, D), lse.view());
  Tensor<T> h(Shape{rows, Dm});
  matmul<T>(o.view(), wo, h.view());
  for (extent_t r = 0; r < rows; ++r)
    for (extent_t c = 0; c < Dm; ++c) h.view()(r, c) += x2(r, c);

  // The MLP's input, rmsnorm(h)
  Tensor<T> hn(Shape{rows, Dm});
  rmsnorm<T>(h.view(), mlp_norm, eps, hn.view());
  return {std::move(x_rows), std::move(q), std::move(k), std::move(h), std::move(hn)};
}

// x (B,N,Dm), attn_norm (Dm), wq (Dm,H·D), wk, wv (Dm,Hkv·D), wo (H·D,Dm),
// mlp_norm (Dm), w1, w3 (Dm,F), w2 (F,Dm) -> y (B,N,Dm); with `keep`, also
// its intermediates.
template <class T>
void block(View<const T> x, View<const T> attn_norm, View<const T> wq, View<const T> wk,
           View<const T> wv, View<const T> wo, View<const T> mlp_norm, View<const T> w1,
           View<const T> w3, View<const T> w2, extent_t H, extent_t Hkv, double eps, View<T> y,
           BlockIntermediates<T>* keep = nullptr) {
  const extent_t N = x.shape()[1], Dm = x.shape()[2], rows = x.shape()[0] * N;
  BlockIntermediates<T> mid =
      block_until_mlp<T>(x, attn_norm, wq, wk, wv, wo, mlp_norm, H, Hkv, eps);

  // y = h + mlp(rmsnorm(h))
  moa::Tensor<T> m(moa::Shape{rows, Dm});
  mlp_swiglu<T>(mid.h_normed.view(), w1, w3, w2, m.view());
  for (extent_t r = 0; r < rows; ++r)
    for (extent_t c = 0; c < Dm; ++c) y(r / N, r % N, c) = mid.h.view()(r, c) + m.view()(r, c);
  if (keep) *keep = std::move(mid);
}

}  // namespace moacert::dnf
