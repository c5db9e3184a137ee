// The fused forward+backward ONF of attention (attention.fwdbwd, cpu.fused)
// as a plain scalar template over T: the same loop nest, tiles and
// owner-computes structure as the vectorised kernel in attention_bwd/flash_bwd.cpp,
// with none of its machinery. It includes neither Highway nor OpenMP, uses
// only + - * /, exp and log by unqualified calls, comparisons and
// dnf::ScalarTraits<T>, so the property engine can instantiate it with
// boost::multiprecision::mpfr_float to prove the ONF rewrite right against
// the DNF (reference/dnf/attention.hpp).
//
// The ONF, for batch b, query head h (kv head g = h / (H / Hkv)):
//   forward   cpu.flash's (flash_fwd_generic): for each query block, for
//             each key tile, online softmax (running max m, running sum l,
//             unnormalised acc), then O = acc / l, LSE = m + log l
//   row sums  with P~_ij = exp(S_ij - LSE_i): l_i = Σ_j P~_ij (1 up to the
//             LSE's rounding, which it cancels) and D_i = (Σ_j P~_ij dP_ij)
//             / l_i, keys ascending
//   backward  one pass over key tiles. The tiles of kv head g are dealt to
//             S splits (tile t to split t mod S; S = key_splits, a function
//             of the problem alone). A key tile owns its rows of dK and dV:
//             it loops over every query row of every query head of its
//             group in ascending (h, i), recomputing P_ij = exp(S_ij -
//             LSE_i) · (1 / l_i) and dS_ij = P_ij (dP_ij - D_i) once; each
//             dS_ij K_j goes to the split's partial dQ_i (tiles ascending);
//             dQ = Σ_split partial, splits ascending
// No N×M intermediate exists; scratch is O((BLOCK_M + BLOCK_N) D) per task
// plus a partial dQ (H/Hkv, N, D) per split and D_i and 1 / l_i, two
// scalars per query row. No atomics: every output element has one owner, which sums in a
// fixed order.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/attention_bwd/key_splits.hpp"
#include "kernels/cpu/attention_fwd/flash_generic.hpp"
#include "kernels/cpu/common/causal.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

using moa::extent_t;
using moa::View;

template <class T>
void fused_fwdbwd_generic(View<const T> q, View<const T> k, View<const T> v, View<const T> dout,
                          double scale_d, bool causal, View<T> o, View<T> lse, View<T> dq,
                          View<T> dk, View<T> dv, extent_t block_m, extent_t block_n) {
  using Tr = dnf::ScalarTraits<T>;
  using std::exp;
  const moa::Shape qs = q.shape(), ks = k.shape();
  const extent_t B = qs[0], H = qs[1], N = qs[2], D = qs[3], Hkv = ks[1], M = ks[2];
  if (block_m <= 0 || block_n <= 0)
    throw std::invalid_argument("fused_fwdbwd_generic: block sizes must be positive");
  const extent_t group = H / Hkv;
  const T scale = Tr::from_double(scale_d);
  const T zero = Tr::zero();
  std::vector<T> delta(static_cast<std::size_t>(B * H * N), zero);  // D_i, (B, H, N)
  auto delta_at = [&](extent_t b, extent_t h, extent_t i) -> T& {
    return delta[static_cast<std::size_t>((b * H + h) * N + i)];
  };

  // ---- forward: cpu.flash's loop nest (attention_fwd/flash_generic.hpp) ----------
  flash_fwd_generic<T>(q, k, v, scale_d, causal, o, lse, block_m, block_n);

  // One unnormalised weight P~_ij = exp(S_ij - LSE_i), and dP_ij.
  auto weight = [&](extent_t b, extent_t h, extent_t g, extent_t i, extent_t j) {
    T dot = zero;
    for (extent_t d = 0; d < D; ++d) dot += q(b, h, i, d) * k(b, g, j, d);
    return T(exp(scale * dot - T(lse(b, h, i))));
  };
  auto dp_at = [&](extent_t b, extent_t h, extent_t g, extent_t i, extent_t j) {
    T dp = zero;
    for (extent_t d = 0; d < D; ++d) dp += dout(b, h, i, d) * v(b, g, j, d);
    return dp;
  };
  // ---- row sums: 1 / l_i and D_i (1 and 0 for a row with no visible key) --
  std::vector<T> inv_l(delta.size(), Tr::from_double(1));
  for (extent_t b = 0; b < B; ++b)
    for (extent_t h = 0; h < H; ++h)
      for (extent_t i = 0; i < N; ++i) {
        const extent_t end = key_end(causal, i, N, M);
        if (end == 0) continue;
        T l = zero, w = zero;
        for (extent_t j = 0; j < end; ++j) {
          const T p = weight(b, h, h / group, i, j);
          l += p;
          w += p * dp_at(b, h, h / group, i, j);
        }
        const T il = Tr::from_double(1) / l;
        inv_l[static_cast<std::size_t>((b * H + h) * N + i)] = il;
        delta_at(b, h, i) = w * il;
      }
  // One recomputed element: P_ij and dS_ij from the scores, LSE, l_i and D_i.
  auto recompute = [&](extent_t b, extent_t h, extent_t g, extent_t i, extent_t j, T& p, T& ds) {
    p = weight(b, h, g, i, j) * inv_l[static_cast<std::size_t>((b * H + h) * N + i)];
    ds = p * (dp_at(b, h, g, i, j) - delta_at(b, h, i));
  };

  // ---- backward: one pass over key tiles -------------------------------------
  const extent_t k_tiles = (M + block_n - 1) / block_n;
  const extent_t splits = key_splits(B, Hkv, k_tiles);
  // partial dQ of each split, (S, B, H, N, D)
  std::vector<T> dq_part(static_cast<std::size_t>(splits * B * H * N * D), zero);
  auto part_at = [&](extent_t s, extent_t b, extent_t h, extent_t i, extent_t d) -> T& {
    return dq_part[static_cast<std::size_t>((((s * B + b) * H + h) * N + i) * D + d)];
  };
  for (extent_t b = 0; b < B; ++b) {
    for (extent_t g = 0; g < Hkv; ++g) {
      for (extent_t split = 0; split < splits; ++split) {
        for (extent_t t = split; t < k_tiles; t += splits) {
          const extent_t j0 = t * block_n, cols = std::min(block_n, M - j0);
          std::vector<T> dk_acc(static_cast<std::size_t>(cols * D), zero),  // (BLOCK_N, D)
              dv_acc(static_cast<std::size_t>(cols * D), zero);             // (BLOCK_N, D)
          for (extent_t h = g * group; h < (g + 1) * group; ++h) {
            for (extent_t i = row_begin(causal, j0, N, M); i < N; ++i) {
              const extent_t visible = visible_in_tile(causal, i, j0, cols, N, M);
              for (extent_t c = 0; c < visible; ++c) {
                T p, ds;
                recompute(b, h, g, i, j0 + c, p, ds);
                for (extent_t d = 0; d < D; ++d) {
                  dv_acc[c * D + d] += p * dout(b, h, i, d);
                  dk_acc[c * D + d] += ds * q(b, h, i, d);
                  part_at(split, b, h, i, d) += ds * k(b, g, j0 + c, d);
                }
              }
            }
          }
          for (extent_t c = 0; c < cols; ++c) {
            for (extent_t d = 0; d < D; ++d) {
              dk(b, g, j0 + c, d) = scale * dk_acc[c * D + d];
              dv(b, g, j0 + c, d) = dv_acc[c * D + d];
            }
          }
        }
      }
    }
  }
  // dQ = Σ_split partial, splits ascending
  for (extent_t b = 0; b < B; ++b)
    for (extent_t h = 0; h < H; ++h)
      for (extent_t i = 0; i < N; ++i)
        for (extent_t d = 0; d < D; ++d) {
          T sum = part_at(0, b, h, i, d);
          for (extent_t s = 1; s < splits; ++s) sum += part_at(s, b, h, i, d);
          dq(b, h, i, d) = scale * sum;
        }
}

}  // namespace moacert::kernels::cpu
