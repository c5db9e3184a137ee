// block, cpu.composed: the pre-norm transformer block composed from this
// directory's kernels, in the DNF's order (reference/dnf/block.hpp):
//   xn = rmsnorm(x; attn_norm)                      rmsnorm_rows
//   q, k, v = xn Wq, xn Wk, xn Wv                   packed GEMM
//   o = attention(q, k, v), causal                  flash_attention_fwd (cpu.flash)
//   h = x + o Wo                                    GEMM, accumulate epilogue onto a copy of x
//   y = h + mlp(rmsnorm(h; mlp_norm))               rmsnorm_rows, mlp_swiglu_tiled (accumulate)
// The (B·N, heads·D) matrices are seen as (B, heads, N, D) through strided
// views, never copied. Every step is deterministic, so the block is.
#include <span>

#include "kernels/cpu/attention_fwd/flash.hpp"
#include "kernels/cpu/common/causal.hpp"
#include "kernels/cpu/common/formats.hpp"
#include "kernels/cpu/common/gemm.hpp"
#include "kernels/cpu/common/strided.hpp"
#include "kernels/cpu/common/threads.hpp"
#include "kernels/cpu/mlp_swiglu/tiled.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/cpu/rmsnorm/fused.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/block.hpp"

namespace moacert::kernels::cpu {
namespace {

using moa::extent_t;
using moa::Shape;
using moa::Tensor;
using moa::View;

// The DNF's definitions, not copies: the (B·N, heads·D) matrices seen as
// (B, heads, N, D), and the attention scale.
using dnf::as_heads;
using dnf::block_scale;

template <class T>
void block_composed(View<const T> x, View<const T> attn_norm, View<const T> wq, View<const T> wk,
                    View<const T> wv, View<const T> wo, View<const T> mlp_norm, View<const T> w1,
                    View<const T> w3, View<const T> w2, extent_t H, extent_t Hkv, double eps,
                    View<T> y, int threads) {
  const extent_t B = x.shape()[0], N = x.shape()[1], Dm = x.shape()[2], D = wq.shape()[1] / H;
  const extent_t rows = B * N;
  const Strided<const T, 3> x_s = strided<3>(x);  // (B, N, Dm)
  const Strided<T, 3> y_s = strided<3>(y);        // (B, N, Dm)
  // x as (B·N, Dm), row-major, whatever its layout: also the residual h
  Tensor<T> h(Shape{rows, Dm});  // (B·N, Dm)
  T* const h_data = h.storage().data();
  for (extent_t b = 0; b < B; ++b)
    for (extent_t n = 0; n < N; ++n)
      for (extent_t c = 0; c < Dm; ++c) h_data[(b * N + n) * Dm + c] = x_s.at(b, n, c);

  // h = x + attn(rmsnorm(x))
  Tensor<T> xn(Shape{rows, Dm});                               // (B·N, Dm)
  Tensor<T> q(Shape{rows, H * D});                             // (B·N, H·D)
  Tensor<T> k(Shape{rows, Hkv * D}), v(Shape{rows, Hkv * D});  // (B·N, Hkv·D)
  rmsnorm_rows<T>(h.view(), attn_norm, eps, xn.view(), threads);
  gemm<T>(xn.view(), wq, q.view(), threads);
  gemm<T>(xn.view(), wk, k.view(), threads);
  gemm<T>(xn.view(), wv, v.view(), threads);
  Tensor<T> o(Shape{rows, H * D});  // (B·N, H·D)
  Tensor<T> lse(Shape{B, H, N});    // (B, H, N)
  const AttentionParams params{block_scale(D), /*causal=*/true, threads};
  flash_attention_fwd<T>(as_heads<T>(q.view(), B, N, H, D), as_heads<T>(k.view(), B, N, Hkv, D),
                         as_heads<T>(v.view(), B, N, Hkv, D), as_heads<T>(o.view(), B, N, H, D),
                         lse.view(), params);
  gemm<T>(o.view(), wo, h.view(), Epilogue::accumulate, View<const T>(), threads);

  // y = h + mlp(rmsnorm(h))
  Tensor<T> hn(Shape{rows, Dm});  // (B·N, Dm)
  rmsnorm_rows<T>(h.view(), mlp_norm, eps, hn.view(), threads);
  mlp_swiglu_tiled<T>(hn.view(), w1, w3, w2, h.view(), /*accumulate=*/true, threads);
  for (extent_t b = 0; b < B; ++b)
    for (extent_t n = 0; n < N; ++n)
      for (extent_t c = 0; c < Dm; ++c) y_s.at(b, n, c) = h_data[(b * N + n) * Dm + c];
}

Cost block_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double rows = double(d.B * d.N), Dm = double(d.Dm), F = double(d.F);
  const double qd = double(d.H * d.D), kvd = double(d.Hkv * d.D);
  Cost c;
  const double pairs = double(d.B * d.H) * visible_pairs(/*causal=*/true, d.N, d.N);
  c.flops = 2.0 * rows * Dm * (qd + 2 * kvd) + 4.0 * double(d.D) * pairs + 2.0 * rows * qd * Dm +
            6.0 * rows * Dm * F + 5.0 * rows * F + 8.0 * rows * Dm;
  c.bytes_read = bytes * (rows * Dm + 2 * Dm + Dm * (2 * qd + 2 * kvd) + 3 * Dm * F);
  c.bytes_written = bytes * rows * Dm;
  c.atomics = 0;
  Problem attention = p;  // the causal self-attention inside: cpu.flash's
  attention.op = Op::attention_fwd;
  attention.dims.M = d.N;
  attention.params.causal = true;
  // h, xn, hn (rows, Dm); q, o (rows, H·D); k, v (rows, Hkv·D); lse; the MLP's
  // G and H (rows, F); the attention and GEMM scratch.
  c.peak_extra_bytes =
      bytes * (3 * rows * Dm + 2 * rows * qd + 2 * rows * kvd + double(d.B * d.H * d.N) +
               2 * rows * F + gemm_scratch_elements(int(bytes), d.B * d.N, d.F, d.Dm, 0)) +
      flash_scratch_bytes(attention) * thread_count(/*requested=*/0);
  return c;
}

template <class T>
void run(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
         const RunOptions& opt) {
  block_composed<T>(in[0].view<const T>(), in[1].view<const T>(), in[2].view<const T>(),
                    in[3].view<const T>(), in[4].view<const T>(), in[5].view<const T>(),
                    in[6].view<const T>(), in[7].view<const T>(), in[8].view<const T>(),
                    in[9].view<const T>(), p.dims.H, p.dims.Hkv, p.params.eps, out[0].view<T>(),
                    opt.threads);
}

}  // namespace

void register_block_composed(Registry& r) {
  r.add(Variant{
      .name = "cpu.composed",
      .op = Op::block,
      .backend = "cpu",
      .formats = {Format::f64, Format::f32},
      .accepts_strided = true,
      .deterministic = true,
      .summary = "rmsnorm -> q/k/v GEMMs -> tiled online-softmax attention -> Wo GEMM + residual "
                 "-> rmsnorm -> SwiGLU MLP + residual, each step this directory's kernel",
      .cost = block_cost,
      .run = f64_f32_run("block cpu.composed", []<class T>(auto&&... a) { run<T>(a...); }),
  });
}

}  // namespace moacert::kernels::cpu
