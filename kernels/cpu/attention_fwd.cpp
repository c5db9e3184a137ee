// attention.fwd on the CPU: cpu.naive (the DNF read as loops, S and P
// materialised per (b, h)) and cpu.flash (tiled over keys with an online
// softmax, Highway-vectorised with runtime dispatch, OpenMP over
// (b, h, query block)). The scalar form of cpu.flash's loop nest is
// flash_fwd_generic (attention_fwd_generic.hpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_fwd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include "kernels/cpu/attention_fwd_kernel.hpp"
#include "kernels/cpu/vec_exp-inl.h"

#include <algorithm>
#include <cmath>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- settings -------------------------------------------------------------
// Tiles: BLOCK_M query rows against BLOCK_N keys. Rows are register-blocked
// by kRows, columns by kVecs vectors: 4 x 4 accumulators of 16 lanes on
// AVX-512 (of 32 registers), 4 x 2 of 8 lanes on AVX2 (of 16).
constexpr std::size_t kBlockM = 64;
constexpr std::size_t kBlockN = 64;
constexpr std::size_t kRows = 4;
template <class T>
constexpr std::size_t kVecs = HWY_LANES(T) * sizeof(T) >= 64 ? 4 : 2;

inline std::size_t round_up(std::size_t x, std::size_t to) {
  return (x + to - 1) / to * to;
}

template <class T, class S>
HWY_INLINE T to_compute(S x) {
  return static_cast<T>(static_cast<accum_of_t<S>>(x));
}

// ---- packing: strided storage -> contiguous compute-type tiles ------------

// rows x D elements at src (row stride s_row, element stride s_d) into dst
// (rows, ld), converted to T.
template <class T, class S>
void pack_rows(const S* src, std::ptrdiff_t s_row, std::ptrdiff_t s_d, std::size_t rows,
               std::size_t D, T* dst, std::size_t ld) {
  for (std::size_t r = 0; r < rows; ++r) {
    const S* row = src + static_cast<std::ptrdiff_t>(r) * s_row;
    T* out = dst + r * ld;
    if (s_d == 1) {
      for (std::size_t d = 0; d < D; ++d) out[d] = to_compute<T>(row[d]);
    } else {
      for (std::size_t d = 0; d < D; ++d) out[d] = to_compute<T>(row[d * s_d]);
    }
  }
}

// The transpose: rows x D elements into dst (D, ld), dst[d * ld + r].
template <class T, class S>
void pack_transposed(const S* src, std::ptrdiff_t s_row, std::ptrdiff_t s_d, std::size_t rows,
                     std::size_t D, T* dst, std::size_t ld) {
  for (std::size_t r = 0; r < rows; ++r) {
    const S* row = src + static_cast<std::ptrdiff_t>(r) * s_row;
    for (std::size_t d = 0; d < D; ++d) dst[d * ld + r] = to_compute<T>(row[d * s_d]);
  }
}

// ---- micro-kernels ----------------------------------------------------------

// S (R, NV·L) = Q (R, D) · Kt (D, NV·L): S[r][c] = Σ_d Q[r][d] Kt[d][c].
template <std::size_t R, std::size_t NV, class DF, class T = hn::TFromD<DF>>
HWY_INLINE void qk_micro(DF df, const T* HWY_RESTRICT q, std::size_t ldq, const T* HWY_RESTRICT kt,
                         std::size_t ldk, std::size_t D, T* HWY_RESTRICT s, std::size_t lds) {
  using V = hn::Vec<DF>;
  const std::size_t L = hn::Lanes(df);
  V acc[R][NV];
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t n = 0; n < NV; ++n) acc[r][n] = hn::Zero(df);
  for (std::size_t d = 0; d < D; ++d) {
    V kv[NV];
    for (std::size_t n = 0; n < NV; ++n) kv[n] = hn::LoadU(df, kt + d * ldk + n * L);
    for (std::size_t r = 0; r < R; ++r) {
      const V qb = hn::Set(df, q[r * ldq + d]);
      for (std::size_t n = 0; n < NV; ++n) acc[r][n] = hn::MulAdd(qb, kv[n], acc[r][n]);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t n = 0; n < NV; ++n) hn::StoreU(acc[r][n], df, s + r * lds + n * L);
}

// acc (R, NV·L) = alpha ⊙ acc + P (R, bn) · V (bn, NV·L).
template <std::size_t R, std::size_t NV, class DF, class T = hn::TFromD<DF>>
HWY_INLINE void pv_micro(DF df, const T* HWY_RESTRICT p, std::size_t ldp, const T* HWY_RESTRICT v,
                         std::size_t ldv, std::size_t bn, const T* HWY_RESTRICT alpha,
                         T* HWY_RESTRICT acc, std::size_t lda) {
  using V = hn::Vec<DF>;
  const std::size_t L = hn::Lanes(df);
  V a[R][NV];
  for (std::size_t r = 0; r < R; ++r) {
    const V ar = hn::Set(df, alpha[r]);
    for (std::size_t n = 0; n < NV; ++n)
      a[r][n] = hn::Mul(ar, hn::LoadU(df, acc + r * lda + n * L));
  }
  for (std::size_t c = 0; c < bn; ++c) {
    V vv[NV];
    for (std::size_t n = 0; n < NV; ++n) vv[n] = hn::LoadU(df, v + c * ldv + n * L);
    for (std::size_t r = 0; r < R; ++r) {
      const V pb = hn::Set(df, p[r * ldp + c]);
      for (std::size_t n = 0; n < NV; ++n) a[r][n] = hn::MulAdd(pb, vv[n], a[r][n]);
    }
  }
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t n = 0; n < NV; ++n) hn::StoreU(a[r][n], df, acc + r * lda + n * L);
}

// ---- one (b, h, query block) --------------------------------------------------

// The per-thread scratch (cost: flash_scratch_bytes): the tiles, O(BLOCK·D),
// and the packed K^T and V of the (b, kv head) the thread works on, O(M·D).
// Tasks run in (b, h, query block) order, so a thread packs a kv head once
// for the many query blocks it then takes, not once per block.
template <class T>
struct FlashScratch {
  std::size_t dp, bnp, mp;            // D, BLOCK_N, M rounded up to whole vectors/tiles
  hwy::AlignedFreeUniquePtr<T[]> q;   // (BLOCK_M, Dp)
  hwy::AlignedFreeUniquePtr<T[]> kt;  // (Mp / BLOCK_N, D, BLOCK_Np): K^T tiles of one (b, kv head)
  hwy::AlignedFreeUniquePtr<T[]> v;   // (Mp, Dp): V of one (b, kv head)
  std::size_t packed_b = ~std::size_t{0}, packed_g = ~std::size_t{0};  // whose K, V are packed
  hwy::AlignedFreeUniquePtr<T[]> s;            // (BLOCK_M, BLOCK_Np): scores, then probabilities
  hwy::AlignedFreeUniquePtr<T[]> acc;          // (BLOCK_M, Dp)
  hwy::AlignedFreeUniquePtr<T[]> m, l, alpha;  // (BLOCK_M)
  hwy::AlignedFreeUniquePtr<bool[]> seen;      // (BLOCK_M) a visible key so far

  FlashScratch(std::size_t D, std::size_t M, std::size_t lanes)
      : dp(round_up(D, lanes)), bnp(round_up(kBlockN, lanes)), mp(round_up(M, kBlockN)) {
    q = hwy::AllocateAligned<T>(kBlockM * dp);
    kt = hwy::AllocateAligned<T>(mp / kBlockN * D * bnp);
    v = hwy::AllocateAligned<T>(mp * dp);
    s = hwy::AllocateAligned<T>(kBlockM * bnp);
    acc = hwy::AllocateAligned<T>(kBlockM * dp);
    m = hwy::AllocateAligned<T>(kBlockM);
    l = hwy::AllocateAligned<T>(kBlockM);
    alpha = hwy::AllocateAligned<T>(kBlockM);
    seen = hwy::AllocateAligned<bool>(kBlockM);
    std::fill_n(kt.get(), mp / kBlockN * D * bnp, T(0));  // the padding keys M..Mp stay 0
    std::fill_n(v.get(), mp * dp, T(0));                  // the padding columns D..Dp stay 0
  }
};

template <class T, class S, bool kCausal>
void flash_block(const FlashArgs& a, std::size_t b, std::size_t h, std::size_t i0,
                 FlashScratch<T>& w) {
  const hn::ScalableTag<T> df;
  using V = hn::Vec<decltype(df)>;
  const std::size_t L = hn::Lanes(df);
  constexpr std::size_t NV = kVecs<T>;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();

  // settings of this call, strides up front
  const std::size_t N = a.N, M = a.M, D = a.D, dp = w.dp, bnp = w.bnp;
  const std::ptrdiff_t shift_mn = static_cast<std::ptrdiff_t>(M) - static_cast<std::ptrdiff_t>(N);
  const std::size_t g = h / (a.H / a.Hkv);
  const std::ptrdiff_t q_n = a.q.n, q_d = a.q.d, k_m = a.k.n, k_d = a.k.d, v_m = a.v.n, v_d = a.v.d,
                       o_n = a.o.n, o_d = a.o.d, lse_n = a.lse.n;
  const S* q_bh = static_cast<const S*>(a.q_data) + b * a.q.b + h * a.q.h;  // (N, D)
  const S* k_bg = static_cast<const S*>(a.k_data) + b * a.k.b + g * a.k.h;  // (M, D)
  const S* v_bg = static_cast<const S*>(a.v_data) + b * a.v.b + g * a.v.h;  // (M, D)
  S* o_bh = static_cast<S*>(a.o_data) + b * a.o.b + h * a.o.h;              // (N, D)
  S* lse_bh = static_cast<S*>(a.lse_data) + b * a.lse.b + h * a.lse.h;      // (N)
  const T scale = static_cast<T>(a.scale);

  const std::size_t bm = std::min(kBlockM, N - i0);  // tail tile: bm < BLOCK_M
  T* HWY_RESTRICT q = w.q.get();                     // (BLOCK_M, Dp)
  T* HWY_RESTRICT kt = w.kt.get();                   // (Mp / BLOCK_N, D, BLOCK_Np)
  T* HWY_RESTRICT vt = w.v.get();                    // (Mp, Dp)
  T* HWY_RESTRICT s = w.s.get();                     // (BLOCK_M, BLOCK_Np)
  T* HWY_RESTRICT acc = w.acc.get();                 // (BLOCK_M, Dp)
  T* HWY_RESTRICT m = w.m.get();                     // (BLOCK_M)
  T* HWY_RESTRICT l = w.l.get();                     // (BLOCK_M)
  T* HWY_RESTRICT alpha = w.alpha.get();             // (BLOCK_M)
  bool* seen = w.seen.get();                         // (BLOCK_M)

  if (w.packed_b != b || w.packed_g != g) {  // K^T (D, M) and V (M, Dp) of this kv head
    // K^T tile-major, each (D, BLOCK_N) tile contiguous: a row stride of M
    // would put the D rows of a tile in the same L1 sets when M is a power of 2.
    for (std::size_t t0 = 0; t0 < M; t0 += kBlockN) {
      pack_transposed(k_bg + static_cast<std::ptrdiff_t>(t0) * k_m, k_m, k_d,
                      std::min(kBlockN, M - t0), D, kt + t0 / kBlockN * D * bnp, bnp);
    }
    pack_rows(v_bg, v_m, v_d, M, D, vt, dp);
    w.packed_b = b;
    w.packed_g = g;
  }
  pack_rows(q_bh + static_cast<std::ptrdiff_t>(i0) * q_n, q_n, q_d, bm, D, q, dp);
  std::fill_n(acc, kBlockM * dp, T(0));
  std::fill_n(m, kBlockM, kNegInf);
  std::fill_n(l, kBlockM, T(0));
  std::fill_n(seen, kBlockM, false);

  // Causal: keys past the last row's horizon i0 + bm - 1 + (M - N) are
  // invisible to the whole block and are never loaded.
  std::ptrdiff_t key_end = static_cast<std::ptrdiff_t>(M);
  if (kCausal) {
    key_end = std::min<std::ptrdiff_t>(key_end, static_cast<std::ptrdiff_t>(i0 + bm) + shift_mn);
  }
  for (std::ptrdiff_t j0 = 0; j0 < key_end; j0 += static_cast<std::ptrdiff_t>(kBlockN)) {
    const std::size_t bn = std::min<std::size_t>(kBlockN, static_cast<std::size_t>(key_end - j0));
    const std::size_t bn_vec = round_up(bn, L);  // tail tile: columns bn..bn_vec are padding
    const T* kt_j = kt + static_cast<std::size_t>(j0) / kBlockN * D * bnp;  // (D, BLOCK_Np)
    const T* v_j = vt + j0 * dp;                                            // (bn, Dp)

    // scores: S (bm, bn_vec) = Q · K^T
    std::size_t r = 0;
    for (; r + kRows <= bm; r += kRows) {
      std::size_t c = 0;
      for (; c + NV * L <= bn_vec; c += NV * L)
        qk_micro<kRows, NV>(df, q + r * dp, dp, kt_j + c, bnp, D, s + r * bnp + c, bnp);
      for (; c < bn_vec; c += L)
        qk_micro<kRows, 1>(df, q + r * dp, dp, kt_j + c, bnp, D, s + r * bnp + c, bnp);
    }
    for (; r < bm; ++r) {
      std::size_t c = 0;
      for (; c + NV * L <= bn_vec; c += NV * L)
        qk_micro<1, NV>(df, q + r * dp, dp, kt_j + c, bnp, D, s + r * bnp + c, bnp);
      for (; c < bn_vec; c += L)
        qk_micro<1, 1>(df, q + r * dp, dp, kt_j + c, bnp, D, s + r * bnp + c, bnp);
    }

    // softmax step per row: scale and mask, row_max, rescale, exp, row_sum
    for (r = 0; r < bm; ++r) {
      T* HWY_RESTRICT s_row = s + r * bnp;  // (BLOCK_Np)
      // Visible keys of row i in this block form a prefix [0, visible).
      std::ptrdiff_t visible = static_cast<std::ptrdiff_t>(bn);
      if (kCausal) {
        const std::ptrdiff_t horizon =
            static_cast<std::ptrdiff_t>(i0 + r) + shift_mn;  // last visible j
        visible = std::clamp<std::ptrdiff_t>(horizon + 1 - j0, 0, static_cast<std::ptrdiff_t>(bn));
      }
      if (visible == 0) {  // -inf max: no visible key in this block, the row's triple stays
        std::fill_n(s_row, bn_vec, T(0));
        alpha[r] = T(1);
        continue;
      }
      const V vscale = hn::Set(df, scale);
      const V vneg_inf = hn::Set(df, kNegInf);
      V vmax = vneg_inf;
      for (std::size_t c = 0; c < bn_vec; c += L) {
        V x = hn::Mul(hn::LoadU(df, s_row + c), vscale);
        if (c + L > static_cast<std::size_t>(visible)) {  // masked or padded columns: -inf
          const auto keep =
              hn::FirstN(df, static_cast<std::size_t>(visible) - std::min<std::size_t>(c, visible));
          x = hn::IfThenElse(keep, x, vneg_inf);
        }
        hn::StoreU(x, df, s_row + c);
        vmax = hn::Max(vmax, x);  // row_max
      }
      const T block_max = hn::GetLane(hn::MaxOfLanes(df, vmax));
      // rescale: alpha = exp(m - m'); a row that saw nothing yet has m = -inf
      // and alpha = 0 (named so that -inf - -inf never happens)
      const T m_new = seen[r] ? std::max(m[r], block_max) : block_max;
      const V vm_new = hn::Set(df, m_new);
      alpha[r] = seen[r] ? hn::GetLane(VecExp(df, hn::Set(df, m[r] - m_new))) : T(0);
      // exp and row_sum: masked columns are -inf and give exactly 0
      V vsum = hn::Zero(df);
      for (std::size_t c = 0; c < bn_vec; c += L) {
        const V p = VecExp(df, hn::Sub(hn::LoadU(df, s_row + c), vm_new));
        hn::StoreU(p, df, s_row + c);
        vsum = hn::Add(vsum, p);
      }
      l[r] = alpha[r] * l[r] + hn::GetLane(hn::SumOfLanes(df, vsum));
      m[r] = m_new;
      seen[r] = true;
    }

    // accumulate: acc (bm, Dp) = alpha ⊙ acc + P (bm, bn) · V (bn, Dp)
    for (r = 0; r < bm; r += kRows) {
      const std::size_t rows = std::min(kRows, bm - r);
      std::size_t c = 0;
      if (rows == kRows) {
        for (; c + NV * L <= dp; c += NV * L)
          pv_micro<kRows, NV>(df, s + r * bnp, bnp, v_j + c, dp, bn, alpha + r, acc + r * dp + c,
                              dp);
        for (; c < dp; c += L)
          pv_micro<kRows, 1>(df, s + r * bnp, bnp, v_j + c, dp, bn, alpha + r, acc + r * dp + c,
                             dp);
      } else {
        for (std::size_t rr = r; rr < r + rows; ++rr) {
          for (c = 0; c + NV * L <= dp; c += NV * L)
            pv_micro<1, NV>(df, s + rr * bnp, bnp, v_j + c, dp, bn, alpha + rr, acc + rr * dp + c,
                            dp);
          for (; c < dp; c += L)
            pv_micro<1, 1>(df, s + rr * bnp, bnp, v_j + c, dp, bn, alpha + rr, acc + rr * dp + c,
                           dp);
        }
      }
    }
  }

  // O = acc / l, LSE = m + log l, each rounded once to the storage format
  for (std::size_t r = 0; r < bm; ++r) {
    S* o_row = o_bh + static_cast<std::ptrdiff_t>(i0 + r) * o_n;
    S& lse_out = lse_bh[static_cast<std::ptrdiff_t>(i0 + r) * lse_n];
    if (!seen[r]) {  // row with no visible key: O = 0, LSE = -inf
      for (std::size_t d = 0; d < D; ++d) o_row[d * o_d] = from_compute<S>(T(0));
      lse_out = from_compute<S>(kNegInf);
      continue;
    }
    for (std::size_t d = 0; d < D; ++d) o_row[d * o_d] = from_compute<S>(acc[r * dp + d] / l[r]);
    lse_out = from_compute<S>(m[r] + std::log(l[r]));
  }
}

template <class T, class S, bool kCausal>
void flash_run(const FlashArgs& a) {
  const std::size_t q_blocks = (a.N + kBlockM - 1) / kBlockM;
  const std::int64_t tasks = static_cast<std::int64_t>(a.B * a.H * q_blocks);
  const std::size_t lanes = hn::Lanes(hn::ScalableTag<T>());
  // Each task owns its output rows and runs in a fixed order, so the result
  // is bitwise the same for every thread count and schedule.
#pragma omp parallel num_threads(a.threads)
  {
    FlashScratch<T> w(a.D, a.M, lanes);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t t = 0; t < tasks; ++t) {
      const std::size_t task = static_cast<std::size_t>(t);
      const std::size_t blk = task % q_blocks, bh = task / q_blocks;
      flash_block<T, S, kCausal>(a, bh / a.H, bh % a.H, blk * kBlockM, w);
    }
  }
}

// Runtime choices become compile-time ones here, once.
template <class T, class S>
void flash_dispatch(const FlashArgs& a) {
  if (a.causal) {
    flash_run<T, S, /*causal=*/true>(a);
  } else {
    flash_run<T, S, /*causal=*/false>(a);
  }
}

void FlashF64(const FlashArgs& a) {
  flash_dispatch<double, double>(a);
}
void FlashF32(const FlashArgs& a) {
  flash_dispatch<float, float>(a);
}
void FlashBF16(const FlashArgs& a) {
  flash_dispatch<float, bf16>(a);
}
void FlashF16(const FlashArgs& a) {
  flash_dispatch<float, f16>(a);
}

std::size_t FlashLanesF32() {
  return hn::Lanes(hn::ScalableTag<float>());
}
std::size_t FlashLanesF64() {
  return hn::Lanes(hn::ScalableTag<double>());
}

}  // namespace moacert::kernels::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <omp.h>

#include "kernels/cpu/attention_bwd.hpp"
#include "kernels/cpu/attention_fwd_flat.hpp"
#include "kernels/cpu/attention_fwd_generic.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "reference/dnf/attention.hpp"

namespace moacert::kernels::cpu {

HWY_EXPORT(FlashF64);
HWY_EXPORT(FlashF32);
HWY_EXPORT(FlashBF16);
HWY_EXPORT(FlashF16);
HWY_EXPORT(FlashLanesF32);
HWY_EXPORT(FlashLanesF64);

namespace {

int threads_of(const RunOptions& opt) {
  return opt.threads > 0 ? opt.threads : omp_get_max_threads();
}

// ---- cpu.naive --------------------------------------------------------------

// The DNF read as loops, in the accumulation type A, with S and P of one
// (b, h) materialised as (N, M) matrices. Single-threaded and deterministic.
template <class S>
void naive_fwd(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out) {
  using A = accum_of_t<S>;
  const moa::View<const S> q = in[0].view<const S>(), k = in[1].view<const S>(),
                           v = in[2].view<const S>();
  const moa::View<S> o = out[0].view<S>(), lse = out[1].view<S>();
  const Dims& d = p.dims;
  const extent_t N = d.N, M = d.M, D = d.D, group = d.H / d.Hkv;
  const A scale = static_cast<A>(p.scale());
  const bool causal = p.causal();
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  std::vector<A> s_mat(static_cast<std::size_t>(N * M));  // (N, M)
  std::vector<A> p_mat(static_cast<std::size_t>(N * M));  // (N, M)
  for (extent_t b = 0; b < d.B; ++b) {
    for (extent_t h = 0; h < d.H; ++h) {
      const extent_t g = h / group;
      // scores: S = scale · Q K^T, -inf where invisible
      for (extent_t i = 0; i < N; ++i) {
        for (extent_t j = 0; j < M; ++j) {
          A dot = 0;
          if (dnf::visible(causal, i, j, N, M)) {
            for (extent_t x = 0; x < D; ++x)
              dot +=
                  static_cast<A>(to_accum(q(b, h, i, x))) * static_cast<A>(to_accum(k(b, g, j, x)));
            s_mat[i * M + j] = scale * dot;
          } else {
            s_mat[i * M + j] = kNegInf;
          }
        }
      }
      // row_max, exp, row_sum, normalise: P = softmax(S)
      for (extent_t i = 0; i < N; ++i) {
        A* s_row = &s_mat[i * M];
        A* p_row = &p_mat[i * M];
        A row_max = kNegInf;
        for (extent_t j = 0; j < M; ++j) row_max = std::max(row_max, s_row[j]);
        if (row_max == kNegInf) {  // row with no visible key: P = 0, O = 0, LSE = -inf
          std::fill_n(p_row, M, A(0));
          lse(b, h, i) = from_accum<S>(kNegInf);
          continue;
        }
        A row_sum = 0;
        for (extent_t j = 0; j < M; ++j) {
          p_row[j] = s_row[j] == kNegInf ? A(0) : std::exp(s_row[j] - row_max);
          row_sum += p_row[j];
        }
        for (extent_t j = 0; j < M; ++j) p_row[j] /= row_sum;
        lse(b, h, i) = from_accum<S>(row_max + std::log(row_sum));
      }
      // accumulate: O = P V
      for (extent_t i = 0; i < N; ++i) {
        for (extent_t x = 0; x < D; ++x) {
          A acc = 0;
          for (extent_t j = 0; j < M; ++j)
            acc += p_mat[i * M + j] * static_cast<A>(to_accum(v(b, g, j, x)));
          o(b, h, i, x) = from_accum<S>(acc);
        }
      }
    }
  }
}

void run_naive(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
               const RunOptions&) {
  check_tensors(p, in, out);
  switch (p.format) {
    case Format::f64:
      naive_fwd<double>(p, in, out);
      break;
    case Format::f32:
      naive_fwd<float>(p, in, out);
      break;
    case Format::bf16:
      naive_fwd<bf16>(p, in, out);
      break;
    case Format::f16:
      naive_fwd<f16>(p, in, out);
      break;
  }
}

Cost naive_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double acc_bytes = p.format == Format::f64 ? 8 : 4;
  Cost c;
  const double nm = double(d.B) * d.H * d.N * d.M;
  c.flops = 4.0 * nm * d.D + 5.0 * nm;  // QK^T and PV (2 flops each per d), softmax
  c.bytes_read = bytes * (double(d.B) * d.H * d.N * d.D + 2.0 * d.B * d.Hkv * d.M * d.D);
  c.bytes_written = bytes * (double(d.B) * d.H * d.N * d.D + double(d.B) * d.H * d.N);
  c.peak_extra_bytes = 2.0 * acc_bytes * d.N * d.M;  // S and P of one (b, h)
  return c;
}

// ---- cpu.flash --------------------------------------------------------------

void run_flash(const Problem& p, std::span<const TensorRef> inputs,
               std::span<const TensorRef> outputs, const RunOptions& opt) {
  check_tensors(p, inputs, outputs);
  with_flat_layouts(inputs, outputs,
                    [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
                      const Dims& d = p.dims;
                      FlashArgs a;
                      a.B = d.B;
                      a.H = d.H;
                      a.Hkv = d.Hkv;
                      a.N = d.N;
                      a.M = d.M;
                      a.D = d.D;
                      a.scale = p.scale();
                      a.causal = p.causal();
                      a.threads = threads_of(opt);
                      a.q = strides_of(in[0].layout);
                      a.k = strides_of(in[1].layout);
                      a.v = strides_of(in[2].layout);
                      a.o = strides_of(out[0].layout);
                      a.lse = strides_of(out[1].layout);
                      a.q_data = in[0].data;
                      a.k_data = in[1].data;
                      a.v_data = in[2].data;
                      a.o_data = out[0].data;
                      a.lse_data = out[1].data;
                      switch (p.format) {
                        case Format::f64:
                          HWY_DYNAMIC_DISPATCH(FlashF64)(a);
                          break;
                        case Format::f32:
                          HWY_DYNAMIC_DISPATCH(FlashF32)(a);
                          break;
                        case Format::bf16:
                          HWY_DYNAMIC_DISPATCH(FlashBF16)(a);
                          break;
                        case Format::f16:
                          HWY_DYNAMIC_DISPATCH(FlashF16)(a);
                          break;
                      }
                    });
}

}  // namespace

double flash_scratch_bytes(const Problem& p) {
  const bool f64 = p.format == Format::f64;
  const double lanes =
      double(f64 ? HWY_DYNAMIC_DISPATCH(FlashLanesF64)() : HWY_DYNAMIC_DISPATCH(FlashLanesF32)());
  const double elem = f64 ? 8 : 4;
  const double dp = std::ceil(double(p.dims.D) / lanes) * lanes;
  const double bm = 64, bn = std::ceil(64 / lanes) * lanes;  // kBlockM, kBlockN
  const double mp = std::ceil(double(p.dims.M) / 64) * 64;   // M in whole key tiles
  // q, s, acc tiles and m, l, alpha, seen; packed K^T (D, Mp) and V (Mp, Dp)
  const double per_thread =
      elem * (bm * dp + bm * bn + bm * dp + 3 * bm) + bm + elem * (double(p.dims.D) * mp + mp * dp);
  return per_thread;
}

// cpu.flash's loop nest on views with one stride per axis: the forward of
// cpu.fused and of block's cpu.composed, so that their o and lse are
// bitwise cpu.flash's.
template <class T>
void flash_attention_fwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<T> o, moa::View<T> lse, const AttentionParams& params) {
  const moa::Shape qs = q.shape(), ks = k.shape();
  FlashArgs a;
  a.B = static_cast<std::size_t>(qs[0]);
  a.H = static_cast<std::size_t>(qs[1]);
  a.N = static_cast<std::size_t>(qs[2]);
  a.D = static_cast<std::size_t>(qs[3]);
  a.Hkv = static_cast<std::size_t>(ks[1]);
  a.M = static_cast<std::size_t>(ks[2]);
  a.scale = params.scale;
  a.causal = params.causal;
  a.threads = params.threads > 0 ? params.threads : omp_get_max_threads();
  a.q = strides_of(q.layout());
  a.k = strides_of(k.layout());
  a.v = strides_of(v.layout());
  a.o = strides_of(o.layout());
  a.lse = strides_of(lse.layout());
  a.q_data = q.data();
  a.k_data = k.data();
  a.v_data = v.data();
  a.o_data = o.data();
  a.lse_data = lse.data();
  if constexpr (std::is_same_v<T, double>) {
    HWY_DYNAMIC_DISPATCH(FlashF64)(a);
  } else {
    HWY_DYNAMIC_DISPATCH(FlashF32)(a);
  }
}
template void flash_attention_fwd<float>(moa::View<const float>, moa::View<const float>,
                                         moa::View<const float>, moa::View<float>, moa::View<float>,
                                         const AttentionParams&);
template void flash_attention_fwd<double>(moa::View<const double>, moa::View<const double>,
                                          moa::View<const double>, moa::View<double>,
                                          moa::View<double>, const AttentionParams&);

namespace {

Cost flash_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  // Work actually done: causal blocks past a row block's horizon are skipped,
  // so count the visible (i, j) pairs.
  double pairs = double(d.N) * d.M;
  if (p.causal()) {
    pairs = 0;
    for (extent_t i = 0; i < d.N; ++i)
      pairs += double(std::clamp<extent_t>(i + d.M - d.N + 1, 0, d.M));
  }
  const double bh = double(d.B) * d.H;
  Cost c;
  c.flops = bh * (4.0 * pairs * d.D + 5.0 * pairs);
  // Q once; K and V once per query head (each thread packs a kv head once
  // for all the query blocks it takes of that head; a head shared by two
  // threads is read by each, which this does not count).
  c.bytes_read = bytes * (bh * d.N * d.D + 2.0 * bh * d.M * d.D);
  c.bytes_written = bytes * (bh * d.N * d.D + bh * d.N);
  c.peak_extra_bytes = flash_scratch_bytes(p) * omp_get_max_threads();
  return c;
}

}  // namespace

void register_attention_fwd(Registry& r) {
  const std::vector<Format> all = {Format::f64, Format::f32, Format::bf16, Format::f16};
  r.add({"cpu.naive", Op::attention_fwd, "cpu", all, /*accepts_strided=*/true,
         /*deterministic=*/true,
         "the DNF as loops: S and P (N, M) materialised per (b, h), single thread", naive_cost,
         run_naive});
  r.add({"cpu.flash", Op::attention_fwd, "cpu", all, /*accepts_strided=*/true,
         /*deterministic=*/true,
         "64x64 tiles, online softmax, Highway (runtime dispatch) + OpenMP over (b,h,row block)",
         flash_cost, run_flash, /*tiles=*/{64}});  // kBlockM = kBlockN = 64
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
