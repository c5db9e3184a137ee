// The ONF of attention.fwd as a plain scalar template: the flash loop nest
// (query blocks × key blocks, online softmax) with nothing but +, -, *, /,
// exp, log, comparisons and dnf::ScalarTraits<T>. It includes neither
// Highway nor OpenMP, so the property engine can instantiate it with
// mpfr_float and prove the rewrite DNF -> ONF algorithmically equivalent;
// cpu.flash (flash.cpp) is the same loop nest vectorised.
//
// For each (b, h) and each query block [i0, i0 + BLOCK_M), every row keeps a
// running triple (m, l, acc): the max of the scores seen so far, the sum of
// exp(S - m), and Σ exp(S - m) V. A key block updates it exactly:
//   m' = max(m, max_j S_ij),  alpha = exp(m - m'),
//   l' = alpha l + Σ_j exp(S_ij - m'),  acc' = alpha acc + Σ_j exp(S_ij - m') V_j,
// and at the end O = acc / l, LSE = m + log l.
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/cpu/common/causal.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

using moa::extent_t;
using moa::View;

// @pre q (B,H,N,D), k and v (B,Hkv,M,D), o (B,H,N,D), lse (B,H,N);
//      H % Hkv == 0; block_m, block_n >= 1
// @post o and lse equal dnf::attention_fwd in exact arithmetic
template <class T>
void flash_fwd_generic(View<const T> q, View<const T> k, View<const T> v, double scale_d,
                       bool causal, View<T> o, View<T> lse, extent_t block_m, extent_t block_n) {
  using Tr = dnf::ScalarTraits<T>;
  using std::exp;
  using std::log;
  const Dims s = dnf::attention_dims(q, k);
  const extent_t B = s.B, H = s.H, N = s.N, M = s.M, D = s.D, group = s.H / s.Hkv;
  const T scale = Tr::from_double(scale_d);
  const T neg_inf = Tr::neg_inf();

  std::vector<T> m_run(block_m), l_run(block_m);  // (BLOCK_M)
  std::vector<T> acc(block_m * D);                // (BLOCK_M, D)
  std::vector<T> s_tile(block_m * block_n);       // (BLOCK_M, BLOCK_N)
  std::vector<char> seen(block_m);                // (BLOCK_M) a finite max so far

  for (extent_t b = 0; b < B; ++b) {
    for (extent_t h = 0; h < H; ++h) {
      const View<const T> qh = q.sub({b, h});                                      // (N, D)
      const View<const T> kh = k.sub({b, h / group}), vh = v.sub({b, h / group});  // (M, D)
      for (extent_t i0 = 0; i0 < N; i0 += block_m) {
        const extent_t bm = std::min(block_m, N - i0);  // tail tile: bm < BLOCK_M
        for (extent_t r = 0; r < bm; ++r) {
          m_run[r] = neg_inf;
          l_run[r] = Tr::zero();
          seen[r] = 0;
          for (extent_t d = 0; d < D; ++d) acc[r * D + d] = Tr::zero();
        }
        // Causal: keys the last row of the block does not see are invisible to
        // the whole block.
        const extent_t keys = key_end(causal, i0 + bm - 1, N, M);
        for (extent_t j0 = 0; j0 < keys; j0 += block_n) {
          const extent_t bn = std::min(block_n, keys - j0);  // tail tile
          for (extent_t r = 0; r < bm; ++r) {
            const extent_t i = i0 + r;
            // scores: S_ij = scale · Σ_d Q_id K_jd, -inf where invisible
            T row_max = neg_inf;
            bool any = false;
            for (extent_t c = 0; c < bn; ++c) {
              const extent_t j = j0 + c;
              if (!dnf::visible(causal, i, j, N, M)) {
                s_tile[r * block_n + c] = neg_inf;
                continue;
              }
              T dot = Tr::zero();
              for (extent_t d = 0; d < D; ++d) dot += qh(i, d) * kh(j, d);
              s_tile[r * block_n + c] = scale * dot;
              // row_max
              row_max = any ? Tr::max(row_max, s_tile[r * block_n + c]) : s_tile[r * block_n + c];
              any = true;
            }
            if (!any) continue;  // -inf max: nothing visible in this block, the triple stays
            // rescale: alpha = exp(m - m'), 0 when the row had seen nothing (m = -inf)
            const T m_new = seen[r] ? Tr::max(m_run[r], row_max) : row_max;
            const T shift = Tr::shift(m_new);
            const T alpha = seen[r] ? exp(Tr::shift(m_run[r]) - shift) : Tr::zero();
            l_run[r] = alpha * l_run[r];
            for (extent_t d = 0; d < D; ++d) acc[r * D + d] = alpha * acc[r * D + d];
            for (extent_t c = 0; c < bn; ++c) {
              const extent_t j = j0 + c;
              if (!dnf::visible(causal, i, j, N, M)) continue;
              // exp, row_sum, accumulate
              const T p = exp(s_tile[r * block_n + c] - shift);
              l_run[r] += p;
              for (extent_t d = 0; d < D; ++d) acc[r * D + d] += p * vh(j, d);
            }
            m_run[r] = m_new;
            seen[r] = 1;
          }
        }
        for (extent_t r = 0; r < bm; ++r) {
          const extent_t i = i0 + r;
          if (!seen[r]) {  // row with no visible key: O = 0, LSE = -inf
            for (extent_t d = 0; d < D; ++d) o(b, h, i, d) = Tr::zero();
            lse(b, h, i) = neg_inf;
            continue;
          }
          for (extent_t d = 0; d < D; ++d) o(b, h, i, d) = acc[r * D + d] / l_run[r];
          lse(b, h, i) = Tr::shift(m_run[r]) + log(l_run[r]);
        }
      }
    }
  }
}

}  // namespace moacert::kernels::cpu
