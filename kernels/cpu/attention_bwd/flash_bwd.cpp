// attention.bwd, cpu.flash_bwd: the CPU flash-attention backward passes
// (see flash_bwd.hpp), vectorised with
// Highway's runtime dispatch: this file is compiled once per target by
// foreach_target.h, and HWY_DYNAMIC_DISPATCH picks the best one at run time.
//
// Passes (each an OpenMP loop over independent tasks, each output element
// owned by one task that sums in a fixed order, so results are bitwise equal
// for any thread count; no atomics); the forward is cpu.flash's
// (attention_fwd/flash.cpp):
//   row sums  task (b, h, block of 256 rows): with P~_ij = exp(scale S_ij -
//             LSE_i), l_i = Σ_j P~_ij and D_i = (Σ_j P~_ij dP_ij) / l_i
//   backward  task (b, g, split): the key tiles t ≡ split (mod S) of kv head
//             g, each owning its rows of dK and dV; for every row of every
//             query head of the group, P_ij = P~_ij / l_i and dS_ij =
//             P_ij (dP_ij - D_i) are recomputed once and feed dV, dK and a
//             partial dQ of the task; dQ = the partials summed in split order
// Why the row sums: P from a rounded LSE is off by the same factor in the
// whole row, exp(|LSE| u) (75 ulps at |LSE| = 150), which dV and dK inherit;
// divided by its own row sum, as autograd's softmax is, P is 1 where there
// is one key, 1/n where n keys tie, and the factor cancels. And D_i from the
// kernel's own P and dP (autograd's rowsum(P ∘ dP)) rather than from the
// given O (FlashAttention's dO · O): dS_ij = P_ij (dP_ij - D_i) cancels
// where one key dominates, and only a D consistent with the P and dP it is
// subtracted from cancels to the rounding of those (a given O, correct to
// the last bit, errs against the kernel's perturbed P by u |S|: 4e3 ulps of
// dQ on a large-logits case). The pass costs S and dP once more: 14 D flops
// per pair instead of 10 (docs/performance.md). The given o is not read.
// Inner loops: rows against a key tile are vector "tile dot" products over
// the transposed tile (4 vectors of keys, no horizontal sums), four rows at
// a time so that each tile vector feeds four FMAs; accumulations into dK,
// dV (16 rows a batch) and dQ run on 4 outputs × 4 vectors held in
// registers.
//
// exp: Highway's hwy/contrib/math Exp, documented max error 1 ULP (f32 and
// f64) on [-FLT_MAX, 104] / [-DBL_MAX, 706]; it returns 0 below -104 (f32)
// or -1000 (f64), and exactly 0 for -inf, which masking relies on. The
// arguments here are <= 0 (scores minus their max or their LSE) up to
// rounding, so always in range.

#ifndef MOACERT_ATTENTION_BWD_ONCE
#define MOACERT_ATTENTION_BWD_ONCE

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/attention_bwd/flash_bwd.hpp"
#include "kernels/cpu/attention_bwd/key_splits.hpp"
#include "kernels/cpu/common/causal.hpp"
#include "kernels/cpu/common/strided.hpp"
#include "kernels/cpu/common/threads.hpp"

namespace moacert::kernels::cpu::detail {

using moa::extent_t;

// Everything a pass needs, strides read up front.
template <class T>
struct AttnJob {
  extent_t B, H, Hkv, N, M, D;
  T scale;
  bool causal;
  int threads;
  Strided<const T, 4> q, k, v, dout;
  Strided<const T, 3> lse_in;
  Strided<T, 4> dq, dk, dv;
  T* delta;  // (B, H, N): D_i = Σ_j P_ij dP_ij
  T* inv_l;  // (B, H, N): 1 / l_i, l_i = Σ_j exp(scale S_ij - LSE_i)
};

}  // namespace moacert::kernels::cpu::detail

#endif  // MOACERT_ATTENTION_BWD_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_bwd/flash_bwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// after highway.h, inside the per-target re-inclusion
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using detail::AttnJob;

using moa::extent_t;
// FlashBwdTiles: a key tile is kChunks vectors wide, BLOCK_N = kChunks lanes
constexpr size_t kChunks = size_t(FlashBwdTiles::chunks);
constexpr size_t kRows = size_t(FlashBwdTiles::rows);  // query rows of one register tile (P, dS)
constexpr size_t kRowBatch =
    size_t(FlashBwdTiles::row_batch);  // rows whose dK/dV terms add together

// The tiles on this target: BLOCK_N and the padded row from its lanes.
template <class T>
struct Tiles {
  size_t lanes, block_n, d_padded;
  explicit Tiles(extent_t D) {
    const FlashBwdTiles t = FlashBwdTiles::of(extent_t(hn::Lanes(hn::ScalableTag<T>())), D);
    lanes = size_t(t.lanes);
    block_n = size_t(t.block_n);
    d_padded = size_t(t.d_padded);
  }
};

// A row of a strided tensor into a padded contiguous buffer (the padding
// stays zero).
template <class T>
HWY_INLINE void gather_row(const T* src, extent_t stride, extent_t D, T* HWY_RESTRICT dst) {
  if (stride == 1) {
    std::copy(src, src + D, dst);
  } else {
    for (extent_t e = 0; e < D; ++e) dst[e] = src[e * stride];
  }
}

// Packs keys [j0, j0 + cols) of a (M, D) slice transposed into (D, BLOCK_N),
// the columns past `cols` zero (tail tile).
template <class T>
void pack_transposed(const T* base, extent_t sr, extent_t sd, extent_t j0, extent_t cols,
                     extent_t D, size_t block_n, T* HWY_RESTRICT xt) {
  std::fill(xt, xt + static_cast<size_t>(D) * block_n, T(0));
  for (extent_t c = 0; c < cols; ++c) {
    const T* src = base + (j0 + c) * sr;
    for (extent_t e = 0; e < D; ++e) xt[static_cast<size_t>(e) * block_n + c] = src[e * sd];
  }
}

// Packs keys [j0, j0 + cols) row-major into (BLOCK_N, d_padded).
template <class T>
void pack_rows(const T* base, extent_t sr, extent_t sd, extent_t j0, extent_t cols, extent_t D,
               size_t block_n, size_t dp, T* HWY_RESTRICT x) {
  std::fill(x, x + block_n * dp, T(0));
  for (extent_t c = 0; c < cols; ++c) gather_row(base + (j0 + c) * sr, sd, D, x + c * dp);
}

// The lanes of chunk c that hold visible keys.
template <class D>
HWY_INLINE hn::Mask<D> visible_lanes(D d, size_t c, size_t visible) {
  const size_t L = hn::Lanes(d);
  return hn::FirstN(d, visible > c * L ? visible - c * L : 0);
}

// ---- backward micro-kernels ---------------------------------------------------
// s[r][c] = Σ_e x_r[e] · Xt[e, c·L .. c·L+L) for R rows against a transposed
// tile (D, BLOCK_N): each tile vector loaded once feeds R FMAs. Each element
// sums in ascending e.
template <size_t R, class D, class T = hn::TFromD<D>, class V = hn::Vec<D>>
HWY_INLINE void tile_dots_rows(D d, const T* HWY_RESTRICT x, size_t x_stride,
                               const T* HWY_RESTRICT xt, extent_t depth, size_t block_n,
                               V (&s)[kRows][kChunks]) {
  const size_t L = hn::Lanes(d);
  for (size_t r = 0; r < R; ++r)
    for (size_t c = 0; c < kChunks; ++c) s[r][c] = hn::Zero(d);
  for (extent_t e = 0; e < depth; ++e) {
    const T* t = xt + static_cast<size_t>(e) * block_n;
    V tv[kChunks];
    for (size_t c = 0; c < kChunks; ++c) tv[c] = hn::Load(d, t + c * L);
    for (size_t r = 0; r < R; ++r) {
      const V xr = hn::Set(d, x[r * x_stride + static_cast<size_t>(e)]);
      for (size_t c = 0; c < kChunks; ++c) s[r][c] = hn::MulAdd(xr, tv[c], s[r][c]);
    }
  }
}

// P and dS of R rows against a key tile, recomputed from their LSE and row
// sums: p = exp(scale S - LSE_r) / l_r, dS = p (dP - D_r), zero past
// `visible`.
template <size_t R, class D, class T = hn::TFromD<D>>
HWY_INLINE void p_ds_rows(D d, const T* q_rows, const T* do_rows, size_t dp_stride, const T* kt,
                          const T* vt, extent_t depth, size_t block_n, size_t visible, T scale,
                          const T* lse, const T* inv_l, const T* delta, T* HWY_RESTRICT p,
                          T* HWY_RESTRICT ds) {
  using V = hn::Vec<D>;
  const size_t L = hn::Lanes(d);
  V acc[kRows][kChunks];
  tile_dots_rows<R>(d, q_rows, dp_stride, kt, depth, block_n, acc);  // S / scale  (R, BLOCK_N)
  const V vscale = hn::Set(d, scale);
  for (size_t r = 0; r < R; ++r) {
    const V vlse = hn::Set(d, lse[r]), vinv_l = hn::Set(d, inv_l[r]);
    for (size_t c = 0; c < kChunks; ++c) {
      const V pc =
          hn::IfThenElseZero(visible_lanes(d, c, visible),
                             hn::Mul(hn::Exp(d, hn::MulSub(vscale, acc[r][c], vlse)), vinv_l));
      hn::Store(pc, d, p + r * block_n + c * L);
    }
  }
  tile_dots_rows<R>(d, do_rows, dp_stride, vt, depth, block_n, acc);  // dP = dO V^T  (R, BLOCK_N)
  for (size_t r = 0; r < R; ++r) {
    const V vdelta = hn::Set(d, delta[r]);
    for (size_t c = 0; c < kChunks; ++c) {
      const V pc = hn::Load(d, p + r * block_n + c * L);
      hn::Store(hn::Mul(pc, hn::Sub(acc[r][c], vdelta)), d, ds + r * block_n + c * L);
    }
  }
}

// y_k[e .. e + VB·L) += Σ_{t < n} w[t·w_ts + k·w_ks] · x[t·x_ts + e ..] for
// k < KB: KB outputs, VB vectors wide, held in registers while t runs; each
// x vector loaded once feeds KB FMAs. Each element sums in ascending t.
template <size_t KB, size_t VB, class D, class T = hn::TFromD<D>>
HWY_INLINE void accumulate_block(D d, const T* HWY_RESTRICT w, size_t w_ts, size_t w_ks,
                                 const T* HWY_RESTRICT x, size_t x_ts, size_t n, T* const* y,
                                 size_t e) {
  using V = hn::Vec<D>;
  const size_t L = hn::Lanes(d);
  V a[KB][VB];
  for (size_t k = 0; k < KB; ++k)
    for (size_t v = 0; v < VB; ++v) a[k][v] = hn::Load(d, y[k] + e + v * L);
  for (size_t t = 0; t < n; ++t) {
    V xv[VB];
    for (size_t v = 0; v < VB; ++v) xv[v] = hn::Load(d, x + t * x_ts + e + v * L);
    for (size_t k = 0; k < KB; ++k) {
      const V wk = hn::Set(d, w[t * w_ts + k * w_ks]);
      for (size_t v = 0; v < VB; ++v) a[k][v] = hn::MulAdd(wk, xv[v], a[k][v]);
    }
  }
  for (size_t k = 0; k < KB; ++k)
    for (size_t v = 0; v < VB; ++v) hn::Store(a[k][v], d, y[k] + e + v * L);
}

// The runtime count 1..4 as a compile-time one (1, 2, 3 for tails).
template <class F>
HWY_INLINE void with_count(size_t count, F&& f) {
  switch (count) {
    case 1:
      return f(std::integral_constant<size_t, 1>());
    case 2:
      return f(std::integral_constant<size_t, 2>());
    case 3:
      return f(std::integral_constant<size_t, 3>());
    default:
      return f(std::integral_constant<size_t, 4>());
  }
}

// y_k += Σ_{t < n} w[t·w_ts + k·w_ks] x_t over padded rows of dp elements,
// for k < outs: blocks of 4 outputs × 4 vectors.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void accumulate(D d, const T* w, size_t w_ts, size_t w_ks, const T* x, size_t x_ts,
                           size_t n, T* const* y, size_t outs, size_t dp) {
  const size_t L = hn::Lanes(d);
  for (size_t k0 = 0; k0 < outs; k0 += 4) {
    with_count(std::min<size_t>(4, outs - k0), [&](auto kb) {
      size_t e = 0;
      for (; e + 4 * L <= dp; e += 4 * L)
        accumulate_block<kb.value, 4>(d, w + k0 * w_ks, w_ts, w_ks, x, x_ts, n, y + k0, e);
      for (; e < dp; e += L)
        accumulate_block<kb.value, 1>(d, w + k0 * w_ks, w_ts, w_ks, x, x_ts, n, y + k0, e);
    });
  }
}

// ---- l_i = Σ_j P~_ij and D_i = (Σ_j P~_ij dP_ij) / l_i ---------------------------
// Task (b, h, block of kRowBlock rows): each key tile packed once, then the
// block's rows four at a time with the backward's own tile_dots_rows and
// exp expression, so every P~ and dP is bitwise the one the backward
// recomputes. Per row, the terms of a tile add lane-wise into one vector
// (tiles ascending, chunks ascending), summed across lanes at the end: an
// order fixed by the problem. Stores 1 / l_i and D_i (rows with no visible
// key: 1 and 0).
constexpr extent_t kRowBlock = FlashBwdTiles::row_block;

template <class T, bool kCausal>
void row_sum_pass(const AttnJob<T>& job) {
  using V = hn::Vec<hn::ScalableTag<T>>;
  const hn::ScalableTag<T> d;
  const Tiles<T> tiles(job.D);
  const size_t BN = tiles.block_n, DP = tiles.d_padded, L = tiles.lanes;
  const extent_t D = job.D, N = job.N, M = job.M, group = job.H / job.Hkv;
  const extent_t row_blocks = (N + kRowBlock - 1) / kRowBlock;
  const extent_t tasks = job.B * job.H * row_blocks;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
#pragma omp parallel num_threads(thread_count(job.threads))
  {
    auto kt = hwy::AllocateAligned<T>(D * BN);                    // (D, BLOCK_N)
    auto vt = hwy::AllocateAligned<T>(D * BN);                    // (D, BLOCK_N)
    auto q_rows = hwy::AllocateAligned<T>(kRowBlock * DP);        // (ROW_BLOCK, Dp)
    auto do_rows = hwy::AllocateAligned<T>(kRowBlock * DP);       // (ROW_BLOCK, Dp)
    auto sums = hwy::AllocateAligned<T>(size_t(kRowBlock) * L);   // Σ P~, (ROW_BLOCK, lanes)
    auto dsums = hwy::AllocateAligned<T>(size_t(kRowBlock) * L);  // Σ P~ dP
    std::fill(q_rows.get(), q_rows.get() + kRowBlock * DP, T(0));
    std::fill(do_rows.get(), do_rows.get() + kRowBlock * DP, T(0));
#pragma omp for schedule(dynamic, 1)
    for (extent_t task = 0; task < tasks; ++task) {
      const extent_t rb = task % row_blocks, bh = task / row_blocks;
      const extent_t b = bh / job.H, h = bh % job.H, g = h / group;
      const extent_t i0 = rb * kRowBlock, rows = std::min(kRowBlock, N - i0);
      T lse_r[kRowBlock];
      for (extent_t r = 0; r < rows; ++r) {
        gather_row(job.q.row(b, h, i0 + r), job.q.inner(), D, q_rows.get() + r * DP);
        gather_row(job.dout.row(b, h, i0 + r), job.dout.inner(), D, do_rows.get() + r * DP);
        lse_r[r] = job.lse_in.at(b, h, i0 + r);
      }
      std::fill(sums.get(), sums.get() + size_t(kRowBlock) * L, T(0));
      std::fill(dsums.get(), dsums.get() + size_t(kRowBlock) * L, T(0));
      const extent_t keys = key_end(kCausal, i0 + rows - 1, N, M);  // the block's widest row
      for (extent_t j0 = 0; j0 < keys; j0 += extent_t(BN)) {
        const extent_t cols = std::min<extent_t>(extent_t(BN), M - j0);
        pack_transposed(job.k.row(b, g, 0), job.k.s[2], job.k.inner(), j0, cols, D, BN, kt.get());
        pack_transposed(job.v.row(b, g, 0), job.v.s[2], job.v.inner(), j0, cols, D, BN, vt.get());
        for (extent_t r0 = 0; r0 < rows; r0 += extent_t(kRows)) {
          const size_t count = std::min<size_t>(kRows, size_t(rows - r0));
          with_count(count, [&](auto n_rows) {
            V acc[kRows][kChunks], dp[kRows][kChunks];
            tile_dots_rows<n_rows.value>(d, q_rows.get() + r0 * DP, DP, kt.get(), D, BN, acc);
            tile_dots_rows<n_rows.value>(d, do_rows.get() + r0 * DP, DP, vt.get(), D, BN, dp);
            const V vscale = hn::Set(d, job.scale);
            for (size_t r = 0; r < n_rows.value; ++r) {
              const extent_t i = i0 + r0 + extent_t(r);
              if (lse_r[r0 + r] == neg_inf) continue;
              const size_t visible =
                  static_cast<size_t>(visible_in_tile(kCausal, i, j0, cols, N, M));
              const V vlse = hn::Set(d, lse_r[r0 + r]);
              T* row_sum = sums.get() + (r0 + r) * L;
              T* row_dsum = dsums.get() + (r0 + r) * L;
              V sum = hn::Load(d, row_sum), dsum = hn::Load(d, row_dsum);
              for (size_t c = 0; c < kChunks; ++c) {
                const auto seen = visible_lanes(d, c, visible);
                const V pc =
                    hn::IfThenElseZero(seen, hn::Exp(d, hn::MulSub(vscale, acc[r][c], vlse)));
                sum = hn::Add(sum, pc);
                // P~ dP, zero where P~ is (a key the row does not see, whose
                // dP may be anything)
                dsum = hn::Add(dsum, hn::IfThenElseZero(seen, hn::Mul(pc, dp[r][c])));
              }
              hn::Store(sum, d, row_sum);
              hn::Store(dsum, d, row_dsum);
            }
          });
        }
      }
      for (extent_t r = 0; r < rows; ++r) {
        const T l = hn::GetLane(hn::SumOfLanes(d, hn::Load(d, sums.get() + r * L)));
        const T w = hn::GetLane(hn::SumOfLanes(d, hn::Load(d, dsums.get() + r * L)));
        const bool none = lse_r[r] == neg_inf || l == T(0);
        const T inv_l = none ? T(1) : T(1) / l;
        job.inv_l[bh * N + i0 + r] = inv_l;
        job.delta[bh * N + i0 + r] = none ? T(0) : w * inv_l;
      }
    }
  }
}

// ---- backward: one pass over key tiles -------------------------------------------
// A task (b, g, split) owns the key tiles t ≡ split (mod S) of kv head g:
// their rows of dK and dV, summed over every query row of every query head
// of the group in ascending (h, i), and a partial sum of dQ over those tiles
// for every row of the group. With S = 1 that partial is dQ; otherwise
// dQ = Σ_split partial, splits in ascending order. S depends on the problem
// alone (key_splits), so results are bitwise equal for any thread count.
template <class T, bool kCausal>
void backward_pass(const AttnJob<T>& job) {
  const hn::ScalableTag<T> d;
  const Tiles<T> tiles(job.D);
  const size_t BN = tiles.block_n, DP = tiles.d_padded;
  const extent_t D = job.D, N = job.N, M = job.M, group = job.H / job.Hkv;
  const extent_t k_tiles = (M + extent_t(BN) - 1) / extent_t(BN);
  const extent_t splits = key_splits(job.B, job.Hkv, k_tiles);
  const extent_t tasks = job.B * job.Hkv * splits;
  const size_t part_size = static_cast<size_t>(group * N) * DP;  // (group, N, Dp)
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  // dQ partial sums of every task when keys are split; else each thread's own
  hwy::AlignedFreeUniquePtr<T[]> parts;
  if (splits > 1) parts = hwy::AllocateAligned<T>(static_cast<size_t>(tasks) * part_size);

#pragma omp parallel num_threads(thread_count(job.threads))
  {
    auto kt = hwy::AllocateAligned<T>(D * BN);               // (D, BLOCK_N)
    auto vt = hwy::AllocateAligned<T>(D * BN);               // (D, BLOCK_N)
    auto k_tile = hwy::AllocateAligned<T>(BN * DP);          // (BLOCK_N, Dp)
    auto dk_acc = hwy::AllocateAligned<T>(BN * DP);          // (BLOCK_N, Dp)
    auto dv_acc = hwy::AllocateAligned<T>(BN * DP);          // (BLOCK_N, Dp)
    auto q_rows = hwy::AllocateAligned<T>(kRowBatch * DP);   // (ROW_BATCH, Dp)
    auto do_rows = hwy::AllocateAligned<T>(kRowBatch * DP);  // (ROW_BATCH, Dp)
    auto p = hwy::AllocateAligned<T>(kRowBatch * BN);        // (ROW_BATCH, BLOCK_N)
    auto ds = hwy::AllocateAligned<T>(kRowBatch * BN);       // (ROW_BATCH, BLOCK_N)
    hwy::AlignedFreeUniquePtr<T[]> own_part;                 // (group, N, Dp)
    if (splits == 1) own_part = hwy::AllocateAligned<T>(part_size);
    T lse_b[kRowBatch], inv_l_b[kRowBatch], delta_b[kRowBatch];  // (ROW_BATCH)
    T* dq_rows[kRowBatch];                                       // the batch's rows of the partial
    std::vector<T*> dk_keys(BN), dv_keys(BN);                    // rows of dk_acc, dv_acc
    for (size_t c = 0; c < BN; ++c) {
      dk_keys[c] = dk_acc.get() + c * DP;
      dv_keys[c] = dv_acc.get() + c * DP;
    }
    std::fill(q_rows.get(), q_rows.get() + kRowBatch * DP, T(0));
    std::fill(do_rows.get(), do_rows.get() + kRowBatch * DP, T(0));
    // Rows waiting, all seeing the same number of keys of the tile, so that a
    // key never receives a term (0 · x) from a row that does not see it, nor
    // a row from a key it does not see: a non-finite dO, Q or K there must not
    // reach dK, dV or dQ.
    size_t batch = 0, visible = 0;
    auto flush = [&] {
      // P, dS of the batch, four rows at a time          (ROW_BATCH, BLOCK_N)
      for (size_t r0 = 0; r0 < batch; r0 += kRows) {
        with_count(std::min(kRows, batch - r0), [&](auto rows) {
          p_ds_rows<rows.value>(d, q_rows.get() + r0 * DP, do_rows.get() + r0 * DP, DP, kt.get(),
                                vt.get(), D, BN, visible, job.scale, lse_b + r0, inv_l_b + r0,
                                delta_b + r0, p.get() + r0 * BN, ds.get() + r0 * BN);
        });
      }
      // accumulate: dV_j += Σ_i P_ij dO_i, dK_j += Σ_i dS_ij Q_i (rows ascending)
      accumulate(d, p.get(), BN, 1, do_rows.get(), DP, batch, dv_keys.data(), visible, DP);
      accumulate(d, ds.get(), BN, 1, q_rows.get(), DP, batch, dk_keys.data(), visible, DP);
      // accumulate: dQ_i += Σ_j dS_ij K_j (keys ascending)
      accumulate(d, ds.get(), 1, BN, k_tile.get(), DP, visible, dq_rows, batch, DP);
      batch = visible = 0;
    };
#pragma omp for schedule(dynamic, 1)
    for (extent_t task = 0; task < tasks; ++task) {
      const extent_t split = task % splits, bg = task / splits;
      const extent_t b = bg / job.Hkv, g = bg % job.Hkv;
      T* part = splits > 1 ? parts.get() + static_cast<size_t>(task) * part_size : own_part.get();
      std::fill(part, part + part_size, T(0));
      for (extent_t t = split; t < k_tiles; t += splits) {
        const extent_t j0 = t * extent_t(BN), cols = std::min<extent_t>(extent_t(BN), M - j0);
        pack_transposed(job.k.row(b, g, 0), job.k.s[2], job.k.inner(), j0, cols, D, BN, kt.get());
        pack_transposed(job.v.row(b, g, 0), job.v.s[2], job.v.inner(), j0, cols, D, BN, vt.get());
        pack_rows(job.k.row(b, g, 0), job.k.s[2], job.k.inner(), j0, cols, D, BN, DP, k_tile.get());
        std::fill(dk_acc.get(), dk_acc.get() + BN * DP, T(0));
        std::fill(dv_acc.get(), dv_acc.get() + BN * DP, T(0));
        for (extent_t h = g * group; h < (g + 1) * group; ++h) {
          for (extent_t i = row_begin(kCausal, j0, N, M); i < N; ++i) {
            const T lse_i = job.lse_in.at(b, h, i);
            if (lse_i == neg_inf) continue;  // row with no visible key: contributes nothing
            const size_t row_visible =
                static_cast<size_t>(visible_in_tile(kCausal, i, j0, cols, N, M));
            if (row_visible == 0) continue;
            if (batch > 0 && row_visible != visible) flush();  // near the diagonal (causal)
            gather_row(job.q.row(b, h, i), job.q.inner(), D, q_rows.get() + batch * DP);
            gather_row(job.dout.row(b, h, i), job.dout.inner(), D, do_rows.get() + batch * DP);
            lse_b[batch] = lse_i;
            inv_l_b[batch] = job.inv_l[(b * job.H + h) * N + i];
            delta_b[batch] = job.delta[(b * job.H + h) * N + i];
            dq_rows[batch] = part + static_cast<size_t>((h - g * group) * N + i) * DP;
            visible = row_visible;
            if (++batch == kRowBatch) flush();
          }
        }
        flush();  // the tail batch
        for (extent_t c = 0; c < cols; ++c) {
          T* dk_row = job.dk.row(b, g, j0 + c);
          T* dv_row = job.dv.row(b, g, j0 + c);
          for (extent_t e = 0; e < D; ++e) {
            dk_row[e * job.dk.inner()] = job.scale * dk_acc[c * DP + e];
            dv_row[e * job.dv.inner()] = dv_acc[c * DP + e];
          }
        }
      }
      if (splits == 1) {  // the partial is dQ (a row with no visible key stays 0)
        for (extent_t h = g * group; h < (g + 1) * group; ++h) {
          for (extent_t i = 0; i < N; ++i) {
            const T* acc = part + static_cast<size_t>((h - g * group) * N + i) * DP;
            T* dq_row = job.dq.row(b, h, i);
            for (extent_t e = 0; e < D; ++e) dq_row[e * job.dq.inner()] = job.scale * acc[e];
          }
        }
      }
    }
  }
  if (splits == 1) return;
    // dQ = Σ_split partial, splits ascending
#pragma omp parallel for schedule(static) num_threads(thread_count(job.threads))
  for (extent_t bh = 0; bh < job.B * job.H; ++bh) {
    const extent_t b = bh / job.H, h = bh % job.H, g = h / group;
    const T* first = parts.get() + static_cast<size_t>((b * job.Hkv + g) * splits) * part_size +
                     static_cast<size_t>((h - g * group) * N) * DP;
    for (extent_t i = 0; i < N; ++i) {
      T* dq_row = job.dq.row(b, h, i);
      for (extent_t e = 0; e < D; ++e) {
        const size_t at = static_cast<size_t>(i) * DP + static_cast<size_t>(e);
        T sum = first[at];
        for (extent_t s = 1; s < splits; ++s) sum += first[static_cast<size_t>(s) * part_size + at];
        dq_row[e * job.dq.inner()] = job.scale * sum;
      }
    }
  }
}

// The one place where the runtime `causal` becomes a template parameter.
template <class T, template <class, bool> class Pass>
void with_causal(const AttnJob<T>& job) {
  if (job.causal) {
    Pass<T, /*causal=*/true>::run(job);
  } else {
    Pass<T, /*causal=*/false>::run(job);
  }
}
template <class T, bool kCausal>
struct Backward {
  static void run(const AttnJob<T>& job) {
    row_sum_pass<T, kCausal>(job);
    backward_pass<T, kCausal>(job);
  }
};

void BackwardF32(const AttnJob<float>& job) {
  with_causal<float, Backward>(job);
}
void BackwardF64(const AttnJob<double>& job) {
  with_causal<double, Backward>(job);
}
size_t LanesF32() {
  return hn::Lanes(hn::ScalableTag<float>());
}
size_t LanesF64() {
  return hn::Lanes(hn::ScalableTag<double>());
}

}  // namespace moacert::kernels::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <span>
#include <stdexcept>
#include <string>

#include "kernels/cpu/common/formats.hpp"
#include "kernels/cpu/common/tiles.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {

using moa::extent_t;

HWY_EXPORT(BackwardF32);
HWY_EXPORT(BackwardF64);
HWY_EXPORT(LanesF32);
HWY_EXPORT(LanesF64);

namespace {

using detail::AttnJob;

template <class T>
struct Passes;
template <>
struct Passes<float> {
  static void backward(const AttnJob<float>& j) { HWY_DYNAMIC_DISPATCH(BackwardF32)(j); }
};
template <>
struct Passes<double> {
  static void backward(const AttnJob<double>& j) { HWY_DYNAMIC_DISPATCH(BackwardF64)(j); }
};

template <class T>
AttnJob<T> make_job(const moa::View<const T>& q, const moa::View<const T>& k,
                    const AttentionParams& params) {
  const moa::Shape qs = q.shape(), ks = k.shape();
  AttnJob<T> job{};
  job.B = qs[0];
  job.H = qs[1];
  job.N = qs[2];
  job.D = qs[3];
  job.Hkv = ks[1];
  job.M = ks[2];
  job.scale = static_cast<T>(params.scale);
  job.causal = params.causal;
  job.threads = params.threads;
  job.q = strided<4>(q);
  job.k = strided<4>(k);
  return job;
}

}  // namespace

FlashBwdTiles flash_bwd_tiling(Format f, moa::extent_t D) {
  const size_t lanes =
      f == Format::f64 ? HWY_DYNAMIC_DISPATCH(LanesF64)() : HWY_DYNAMIC_DISPATCH(LanesF32)();
  return FlashBwdTiles::of(moa::extent_t(lanes), D);
}

std::vector<moa::extent_t> flash_bwd_tiles(Format f) {
  return {flash_bwd_tiling(f, /*D=*/1).block_n, FlashBwdTiles::row_block, FlashBwdTiles::row_batch};
}

double attention_bwd_scratch_bytes(int element_bytes, extent_t B, extent_t H, extent_t Hkv,
                                   extent_t N, extent_t M, extent_t D, int threads) {
  const FlashBwdTiles t = flash_bwd_tiling(element_bytes == 8 ? Format::f64 : Format::f32, D);
  const double row_batch = double(FlashBwdTiles::row_batch);
  const double part = double(H / Hkv) * double(N) * double(t.d_padded);  // (group, N, Dp)
  const extent_t k_tiles = (M + t.block_n - 1) / t.block_n;
  const extent_t splits = key_splits(B, Hkv, k_tiles);
  // K^T, V^T (D, BLOCK_N), K, dK, dV tiles (BLOCK_N, Dp), the batch's q, dO
  // rows (ROW_BATCH, Dp), p and dS (ROW_BATCH, BLOCK_N); the thread's own
  // dQ partial when keys are not split, every task's when they are.
  const double per_thread = 2.0 * double(D * t.block_n) + 3.0 * double(t.block_n * t.d_padded) +
                            2.0 * row_batch * double(t.d_padded) +
                            2.0 * row_batch * double(t.block_n) + (splits == 1 ? part : 0.0);
  const double shared = splits == 1 ? 0.0 : double(B * Hkv * splits) * part;
  const double rows = 2.0 * double(B * H * N);  // D_i and 1 / l_i
  const double backward = thread_count(threads) * per_thread + shared;
  // The row-sum pass, before the backward allocates: K^T, V^T tiles, the
  // block's q and dO rows and its two lane-wise sums, per thread.
  const double block = double(FlashBwdTiles::row_block), lanes = double(t.lanes);
  const double row_sums =
      thread_count(threads) *
      (2.0 * double(D * t.block_n) + 2.0 * block * double(t.d_padded) + 2.0 * block * lanes);
  return element_bytes * (std::max(backward, row_sums) + rows);
}

template <class T>
void flash_attention_bwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<const T> o, moa::View<const T> lse, moa::View<const T> dout,
                         moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                         const AttentionParams& params) {
  AttnJob<T> job = make_job(q, k, params);
  std::vector<T> delta(static_cast<size_t>(job.B * job.H * job.N));  // D_i, (B, H, N)
  std::vector<T> inv_l(delta.size());                                // 1 / l_i, (B, H, N)
  job.v = strided<4>(v);
  (void)o;  // D_i comes from the kernel's own P and dP (the row-sum pass)
  job.lse_in = strided<3>(lse);
  job.dout = strided<4>(dout);
  job.dq = strided<4>(dq);
  job.dk = strided<4>(dk);
  job.dv = strided<4>(dv);
  job.delta = delta.data();
  job.inv_l = inv_l.data();
  Passes<T>::backward(job);
}

template void flash_attention_bwd<float>(moa::View<const float>, moa::View<const float>,
                                         moa::View<const float>, moa::View<const float>,
                                         moa::View<const float>, moa::View<const float>,
                                         moa::View<float>, moa::View<float>, moa::View<float>,
                                         const AttentionParams&);
template void flash_attention_bwd<double>(moa::View<const double>, moa::View<const double>,
                                          moa::View<const double>, moa::View<const double>,
                                          moa::View<const double>, moa::View<const double>,
                                          moa::View<double>, moa::View<double>, moa::View<double>,
                                          const AttentionParams&);

// ---- registration: attention.bwd cpu.flash_bwd ------------------------------------
namespace {

Cost attention_bwd_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double heads = double(d.B * d.H);
  const double pairs = heads * visible_pairs(p.causal(), d.N, d.M);
  Cost c;
  // Per visible pair: S and dP for the row sums, then S and dP again, and
  // the dV, dK and dQ updates: 7 products of length D, 2 flops each.
  c.flops = 14.0 * double(d.D) * pairs;
  const double q_like = heads * double(d.N * d.D), kv_like = double(d.B * d.Hkv * d.M * d.D);
  c.bytes_read = bytes * (2 * q_like + 2 * kv_like + heads * double(d.N));  // q do, k v, lse
  c.bytes_written = bytes * (q_like + 2 * kv_like);
  c.atomics = 0;
  c.peak_extra_bytes =
      attention_bwd_scratch_bytes(int(bytes), d.B, d.H, d.Hkv, d.N, d.M, d.D, /*threads=*/0);
  return c;
}

template <class T>
void run_bwd(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
             const RunOptions& opt) {
  const AttentionParams params{p.scale(), p.causal(), opt.threads};
  flash_attention_bwd<T>(in[0].view<const T>(), in[1].view<const T>(), in[2].view<const T>(),
                         in[3].view<const T>(), in[4].view<const T>(), in[5].view<const T>(),
                         out[0].view<T>(), out[1].view<T>(), out[2].view<T>(), params);
}

}  // namespace

void register_attention_bwd_flash_bwd(Registry& r) {
  const std::vector<Format> formats = {Format::f64, Format::f32};
  r.add(Variant{
      .name = "cpu.flash_bwd",
      .op = Op::attention_bwd,
      .backend = "cpu",
      .formats = formats,
      .accepts_strided = true,
      .deterministic = true,
      .summary = "flash backward: a pass for the row sums l_i and D_i = rowsum(P∘dP), then one "
                 "pass with P = exp(S - LSE) / l_i; dK/dV owned per key tile, dQ partials per "
                 "key split summed in order (no atomics); o not read; Highway, OpenMP",
      .cost = attention_bwd_cost,
      .run = f64_f32_run("attention.bwd cpu.flash_bwd",
                         []<class T>(auto&&... a) { run_bwd<T>(a...); }),
      .tiles = tiles_of_formats(formats, flash_bwd_tiles),
      .family_name = "cpu.flash",
      .same_bits_any_layout = false,
  });
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
