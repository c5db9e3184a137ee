// The CPU flash-attention passes (see attention_bwd.hpp), vectorised with
// Highway's runtime dispatch: this file is compiled once per target by
// foreach_target.h, and HWY_DYNAMIC_DISPATCH picks the best one at run time.
//
// Passes (each an OpenMP loop over independent tasks, each output element
// owned by one task that sums in a fixed order, so results are bitwise equal
// for any thread count; no atomics):
//   forward  task (b, h, query block): online softmax over key tiles
//   delta    task (b, h): D_i = dO_i · O_i
//   dK, dV   task (b, g, key tile): loops over all rows of every query head
//            of the group, recomputing P_ij = exp(scale S_ij - LSE_i)
//   dQ       task (b, h, query block): loops over key tiles, recomputing P
// Inner loops: a row against a key tile is a pair of vector "tile dot"
// products over the transposed tile (4 vectors of keys, no horizontal sums),
// then accumulations over the padded head dimension held in registers
// (dK/dV: a batch of 8 rows at a time per key).
//
// exp: Highway's hwy/contrib/math Exp, documented max error 1 ULP (f32 and
// f64) on [-FLT_MAX, 104] / [-DBL_MAX, 706]; it returns 0 below -104 (f32)
// or -1000 (f64), and exactly 0 for -inf, which masking relies on. The
// arguments here are <= 0 (scores minus their max or their LSE) up to
// rounding, so always in range.

#ifndef MOACERT_ATTENTION_BWD_ONCE
#define MOACERT_ATTENTION_BWD_ONCE

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/attention_bwd.hpp"
#include "kernels/cpu/cpu_kernels_rest.hpp"
#include "kernels/cpu/fwdbwd_generic.hpp"  // key_end, row_begin
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu::detail {

// A logical (B, heads, rows, D) tensor as a pointer and four strides.
template <class P>
struct Strided4 {
  P* p = nullptr;
  extent_t sb = 0, sh = 0, sr = 0, sd = 0;
  P* row(extent_t b, extent_t h, extent_t r) const { return p + b * sb + h * sh + r * sr; }
};
template <class P>
struct Strided3 {
  P* p = nullptr;
  extent_t sb = 0, sh = 0, sr = 0;
  P& at(extent_t b, extent_t h, extent_t r) const { return p[b * sb + h * sh + r * sr]; }
};
template <class P>
Strided4<P> strided4(const moa::View<P>& x) {
  const moa::Layout& l = x.layout();
  return {x.data(), l.stride(0), l.stride(1), l.stride(2), l.stride(3)};
}
template <class P>
Strided3<P> strided3(const moa::View<P>& x) {
  const moa::Layout& l = x.layout();
  return {x.data(), l.stride(0), l.stride(1), l.stride(2)};
}

// Everything a pass needs, strides read up front.
template <class T>
struct AttnJob {
  extent_t B, H, Hkv, N, M, D;
  T scale;
  bool causal;
  int threads;
  Strided4<const T> q, k, v, dout, o_in;
  Strided3<const T> lse_in;
  Strided4<T> o, dq, dk, dv;
  Strided3<T> lse;
  T* delta;         // (B, H, N): D_i
  bool want_delta;  // forward: also compute D_i from its O
};

inline int thread_count(int requested) {
  return requested > 0 ? requested : omp_get_max_threads();
}

}  // namespace moacert::kernels::cpu::detail

#endif  // MOACERT_ATTENTION_BWD_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_bwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// after highway.h, inside the per-target re-inclusion
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using detail::AttnJob;

constexpr size_t kChunks = 4;  // a key tile is kChunks vectors wide: BLOCK_N = 4 lanes
constexpr extent_t kBlockM = 64;
constexpr size_t kRowBatch = 8;  // query rows whose dK/dV terms are added together

template <class T>
struct Tiles {
  size_t lanes, block_n, d_padded;
  explicit Tiles(extent_t D) {
    const hn::ScalableTag<T> d;
    lanes = hn::Lanes(d);
    block_n = kChunks * lanes;
    d_padded = (static_cast<size_t>(D) + lanes - 1) / lanes * lanes;
  }
};

// s[c] = Σ_d x_d · Xt[d, c·L .. c·L+L): one row against a transposed tile
// (D, BLOCK_N). Two accumulator sets (even and odd d) keep 8 FMA chains in
// flight; their sum is in a fixed order.
template <class D, class T = hn::TFromD<D>, class V = hn::Vec<D>>
HWY_INLINE void tile_dots(D d, const T* HWY_RESTRICT x, const T* HWY_RESTRICT xt, extent_t depth,
                          size_t block_n, V (&s)[kChunks]) {
  const size_t L = hn::Lanes(d);
  V even[kChunks], odd[kChunks];
  for (size_t c = 0; c < kChunks; ++c) even[c] = odd[c] = hn::Zero(d);
  extent_t e = 0;
  for (; e + 1 < depth; e += 2) {
    const V x0 = hn::Set(d, x[e]), x1 = hn::Set(d, x[e + 1]);
    const T* r0 = xt + static_cast<size_t>(e) * block_n;
    const T* r1 = r0 + block_n;
    for (size_t c = 0; c < kChunks; ++c) {
      even[c] = hn::MulAdd(x0, hn::Load(d, r0 + c * L), even[c]);
      odd[c] = hn::MulAdd(x1, hn::Load(d, r1 + c * L), odd[c]);
    }
  }
  if (e < depth) {  // odd head dimension: the last d
    const V x0 = hn::Set(d, x[e]);
    const T* r0 = xt + static_cast<size_t>(e) * block_n;
    for (size_t c = 0; c < kChunks; ++c) even[c] = hn::MulAdd(x0, hn::Load(d, r0 + c * L), even[c]);
  }
  for (size_t c = 0; c < kChunks; ++c) s[c] = hn::Add(even[c], odd[c]);
}

// y += Σ_{c < n} w[c · w_stride] X[c, :] over a padded row, y held in up
// to four vector registers while c runs (no store per term). Each element
// sums its terms in ascending c, as n successive axpys would.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void accumulate_rows(D d, const T* HWY_RESTRICT w, size_t w_stride,
                                const T* HWY_RESTRICT x, size_t x_stride, size_t n,
                                T* HWY_RESTRICT y, size_t dp) {
  using V = hn::Vec<D>;
  const size_t L = hn::Lanes(d);
  size_t e = 0;
  for (; e + 4 * L <= dp; e += 4 * L) {
    V a0 = hn::Load(d, y + e), a1 = hn::Load(d, y + e + L);
    V a2 = hn::Load(d, y + e + 2 * L), a3 = hn::Load(d, y + e + 3 * L);
    for (size_t c = 0; c < n; ++c) {
      const V wc = hn::Set(d, w[c * w_stride]);
      const T* xc = x + c * x_stride + e;
      a0 = hn::MulAdd(wc, hn::Load(d, xc), a0);
      a1 = hn::MulAdd(wc, hn::Load(d, xc + L), a1);
      a2 = hn::MulAdd(wc, hn::Load(d, xc + 2 * L), a2);
      a3 = hn::MulAdd(wc, hn::Load(d, xc + 3 * L), a3);
    }
    hn::Store(a0, d, y + e);
    hn::Store(a1, d, y + e + L);
    hn::Store(a2, d, y + e + 2 * L);
    hn::Store(a3, d, y + e + 3 * L);
  }
  for (; e < dp; e += L) {  // the last vectors of a row not a multiple of four
    V a0 = hn::Load(d, y + e);
    for (size_t c = 0; c < n; ++c)
      a0 = hn::MulAdd(hn::Set(d, w[c * w_stride]), hn::Load(d, x + c * x_stride + e), a0);
    hn::Store(a0, d, y + e);
  }
}

template <class D, class T = hn::TFromD<D>>
HWY_INLINE void scale_row(D d, T a, T* HWY_RESTRICT y, size_t n) {
  const auto va = hn::Set(d, a);
  for (size_t e = 0; e < n; e += hn::Lanes(d)) hn::Store(hn::Mul(va, hn::Load(d, y + e)), d, y + e);
}

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

// P_ij and dS_ij of one row against a key tile, recomputed from LSE_i:
// p = exp(scale S - LSE), dS = p (dP - D_i), zero past `visible`.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void recompute_p_ds(D d, const T* q_row, const T* do_row, const T* kt, const T* vt,
                               extent_t depth, size_t block_n, size_t visible, T scale, T lse_i,
                               T delta_i, T* HWY_RESTRICT p_out, T* HWY_RESTRICT ds_out) {
  using V = hn::Vec<D>;
  const size_t L = hn::Lanes(d);
  V s[kChunks], dp[kChunks];
  tile_dots(d, q_row, kt, depth, block_n, s);    // S / scale    (BLOCK_N)
  tile_dots(d, do_row, vt, depth, block_n, dp);  // dP = dO · V  (BLOCK_N)
  const V vscale = hn::Set(d, scale), vlse = hn::Set(d, lse_i), vdelta = hn::Set(d, delta_i);
  for (size_t c = 0; c < kChunks; ++c) {
    const V p = hn::IfThenElseZero(visible_lanes(d, c, visible),
                                   hn::Exp(d, hn::MulSub(vscale, s[c], vlse)));
    hn::Store(p, d, p_out + c * L);
    hn::Store(hn::Mul(p, hn::Sub(dp[c], vdelta)), d, ds_out + c * L);
  }
}

// ---- forward ----------------------------------------------------------------
template <class T, bool kCausal>
void forward_pass(const AttnJob<T>& job) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const Tiles<T> tiles(job.D);
  const size_t L = tiles.lanes, BN = tiles.block_n, DP = tiles.d_padded;
  const extent_t D = job.D, N = job.N, M = job.M, group = job.H / job.Hkv;
  const extent_t q_blocks = (N + kBlockM - 1) / kBlockM;
  const extent_t tasks = job.B * job.H * q_blocks;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();

#pragma omp parallel num_threads(detail::thread_count(job.threads))
  {
    auto q_blk = hwy::AllocateAligned<T>(kBlockM * DP);  // (BLOCK_M, Dp)
    auto acc = hwy::AllocateAligned<T>(kBlockM * DP);    // (BLOCK_M, Dp)
    auto kt = hwy::AllocateAligned<T>(D * BN);           // (D, BLOCK_N)
    auto v_tile = hwy::AllocateAligned<T>(BN * DP);      // (BLOCK_N, Dp)
    auto p = hwy::AllocateAligned<T>(BN);                // (BLOCK_N)
    std::vector<T> m(kBlockM), l(kBlockM);               // (BLOCK_M)
#pragma omp for schedule(dynamic, 1)
    for (extent_t task = 0; task < tasks; ++task) {
      const extent_t blk = task % q_blocks, bh = task / q_blocks;
      const extent_t b = bh / job.H, h = bh % job.H, g = h / group;
      const extent_t i0 = blk * kBlockM, rows = std::min(kBlockM, N - i0);
      std::fill(q_blk.get(), q_blk.get() + kBlockM * DP, T(0));
      std::fill(acc.get(), acc.get() + kBlockM * DP, T(0));
      std::fill(m.begin(), m.end(), neg_inf);
      std::fill(l.begin(), l.end(), T(0));
      for (extent_t r = 0; r < rows; ++r)
        gather_row(job.q.row(b, h, i0 + r), job.q.sd, D, q_blk.get() + r * DP);
      const extent_t keys = key_end(kCausal, i0 + rows - 1, N, M);  // keys any row sees
      const T* k_base = job.k.row(b, g, 0);
      const T* v_base = job.v.row(b, g, 0);
      for (extent_t j0 = 0; j0 < keys; j0 += extent_t(BN)) {
        const extent_t cols = std::min<extent_t>(extent_t(BN), M - j0);  // tail tile
        pack_transposed(k_base, job.k.sr, job.k.sd, j0, cols, D, BN, kt.get());
        pack_rows(v_base, job.v.sr, job.v.sd, j0, cols, D, BN, DP, v_tile.get());
        for (extent_t r = 0; r < rows; ++r) {
          const size_t visible = static_cast<size_t>(
              std::clamp<extent_t>(key_end(kCausal, i0 + r, N, M) - j0, 0, cols));
          if (visible == 0) continue;  // no visible key in this tile
          // scores, masked; the tile's row max
          V s[kChunks];
          tile_dots(d, q_blk.get() + r * DP, kt.get(), D, BN, s);  // (BLOCK_N)
          V vmax = hn::Set(d, neg_inf);
          for (size_t c = 0; c < kChunks; ++c) {
            s[c] = hn::IfThenElse(visible_lanes(d, c, visible),
                                  hn::Mul(hn::Set(d, job.scale), s[c]), hn::Set(d, neg_inf));
            vmax = hn::Max(vmax, s[c]);
          }
          const T tile_max = hn::GetLane(hn::MaxOfLanes(d, vmax));
          // rescale: the running max moves from m to m_new (finite: a key is visible)
          const T m_new = std::max(m[r], tile_max);
          const bool first_tile = m[r] == neg_inf;  // -inf max so far: nothing to rescale
          const T alpha = first_tile ? T(0) : std::exp(m[r] - m_new);
          // exp, row_sum
          V vsum = hn::Zero(d);
          const V vm = hn::Set(d, m_new);
          for (size_t c = 0; c < kChunks; ++c) {
            const V pc =
                hn::IfThenElseZero(visible_lanes(d, c, visible), hn::Exp(d, hn::Sub(s[c], vm)));
            vsum = hn::Add(vsum, pc);
            hn::Store(pc, d, p.get() + c * L);
          }
          l[r] = l[r] * alpha + hn::GetLane(hn::SumOfLanes(d, vsum));
          T* acc_r = acc.get() + r * DP;  // (Dp)
          if (alpha != T(1)) scale_row(d, alpha, acc_r, DP);
          // accumulate: acc += P V
          accumulate_rows(d, p.get(), 1, v_tile.get(), DP, visible, acc_r, DP);
          m[r] = m_new;
        }
      }
      // normalise; LSE; D_i = dO_i · O_i
      for (extent_t r = 0; r < rows; ++r) {
        const extent_t i = i0 + r;
        T* o_row = job.o.row(b, h, i);
        if (key_end(kCausal, i, N, M) == 0) {  // row with no visible key: O = 0, LSE = -inf
          for (extent_t e = 0; e < D; ++e) o_row[e * job.o.sd] = T(0);
          job.lse.at(b, h, i) = neg_inf;
          if (job.want_delta) job.delta[(b * job.H + h) * N + i] = T(0);
          continue;
        }
        const T* acc_r = acc.get() + r * DP;
        for (extent_t e = 0; e < D; ++e) o_row[e * job.o.sd] = acc_r[e] / l[r];
        job.lse.at(b, h, i) = m[r] + std::log(l[r]);
        if (job.want_delta) {
          const T* do_row = job.dout.row(b, h, i);
          T dsum = 0;
          for (extent_t e = 0; e < D; ++e) dsum += do_row[e * job.dout.sd] * o_row[e * job.o.sd];
          job.delta[(b * job.H + h) * N + i] = dsum;
        }
      }
    }
  }
}

// ---- D_i = dO_i · O_i from a given O ----------------------------------------
template <class T>
void delta_pass(const AttnJob<T>& job) {
  const extent_t D = job.D, N = job.N, tasks = job.B * job.H;
#pragma omp parallel for schedule(static) num_threads(detail::thread_count(job.threads))
  for (extent_t bh = 0; bh < tasks; ++bh) {
    const extent_t b = bh / job.H, h = bh % job.H;
    for (extent_t i = 0; i < N; ++i) {
      const T* o_row = job.o_in.row(b, h, i);
      const T* do_row = job.dout.row(b, h, i);
      T dsum = 0;
      for (extent_t e = 0; e < D; ++e) dsum += do_row[e * job.dout.sd] * o_row[e * job.o_in.sd];
      job.delta[bh * N + i] = dsum;
    }
  }
}

// ---- dK, dV: each key tile owns its rows --------------------------------------
template <class T, bool kCausal>
void dkdv_pass(const AttnJob<T>& job) {
  const hn::ScalableTag<T> d;
  const Tiles<T> tiles(job.D);
  const size_t BN = tiles.block_n, DP = tiles.d_padded;
  const extent_t D = job.D, N = job.N, M = job.M, group = job.H / job.Hkv;
  const extent_t k_tiles = (M + extent_t(BN) - 1) / extent_t(BN);
  const extent_t tasks = job.B * job.Hkv * k_tiles;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();

#pragma omp parallel num_threads(detail::thread_count(job.threads))
  {
    auto kt = hwy::AllocateAligned<T>(D * BN);               // (D, BLOCK_N)
    auto vt = hwy::AllocateAligned<T>(D * BN);               // (D, BLOCK_N)
    auto dk_acc = hwy::AllocateAligned<T>(BN * DP);          // (BLOCK_N, Dp)
    auto dv_acc = hwy::AllocateAligned<T>(BN * DP);          // (BLOCK_N, Dp)
    auto q_rows = hwy::AllocateAligned<T>(kRowBatch * DP);   // (ROW_BATCH, Dp)
    auto do_rows = hwy::AllocateAligned<T>(kRowBatch * DP);  // (ROW_BATCH, Dp)
    auto p = hwy::AllocateAligned<T>(kRowBatch * BN);        // (ROW_BATCH, BLOCK_N)
    auto ds = hwy::AllocateAligned<T>(kRowBatch * BN);       // (ROW_BATCH, BLOCK_N)
    std::fill(q_rows.get(), q_rows.get() + kRowBatch * DP, T(0));
    std::fill(do_rows.get(), do_rows.get() + kRowBatch * DP, T(0));
    // Rows waiting, all seeing the same number of keys of the tile, so that a
    // key never receives a term (0 · x) from a row that does not see it: a
    // non-finite dO or Q in such a row must not reach that key's dK, dV.
    size_t batch = 0, batch_visible = 0;
    // accumulate: dV_j += Σ_i P_ij dO_i, dK_j += Σ_i dS_ij Q_i over the batch,
    // rows in ascending order
    auto flush = [&] {
      for (size_t c = 0; c < batch_visible; ++c) {
        accumulate_rows(d, p.get() + c, BN, do_rows.get(), DP, batch, dv_acc.get() + c * DP, DP);
        accumulate_rows(d, ds.get() + c, BN, q_rows.get(), DP, batch, dk_acc.get() + c * DP, DP);
      }
      batch = batch_visible = 0;
    };
#pragma omp for schedule(dynamic, 1)
    for (extent_t task = 0; task < tasks; ++task) {
      const extent_t t = task % k_tiles, bg = task / k_tiles;
      const extent_t b = bg / job.Hkv, g = bg % job.Hkv;
      const extent_t j0 = t * extent_t(BN), cols = std::min<extent_t>(extent_t(BN), M - j0);
      pack_transposed(job.k.row(b, g, 0), job.k.sr, job.k.sd, j0, cols, D, BN, kt.get());
      pack_transposed(job.v.row(b, g, 0), job.v.sr, job.v.sd, j0, cols, D, BN, vt.get());
      std::fill(dk_acc.get(), dk_acc.get() + BN * DP, T(0));
      std::fill(dv_acc.get(), dv_acc.get() + BN * DP, T(0));
      for (extent_t h = g * group; h < (g + 1) * group; ++h) {
        for (extent_t i = row_begin(kCausal, j0, N, M); i < N; ++i) {
          const T lse_i = job.lse_in.at(b, h, i);
          if (lse_i == neg_inf) continue;  // row with no visible key: contributes nothing
          const size_t visible =
              static_cast<size_t>(std::clamp<extent_t>(key_end(kCausal, i, N, M) - j0, 0, cols));
          if (visible == 0) continue;
          if (batch > 0 && visible != batch_visible) flush();  // near the diagonal (causal)
          T* q_row = q_rows.get() + batch * DP;                // (Dp)
          T* do_row = do_rows.get() + batch * DP;              // (Dp)
          gather_row(job.q.row(b, h, i), job.q.sd, D, q_row);
          gather_row(job.dout.row(b, h, i), job.dout.sd, D, do_row);
          recompute_p_ds(d, q_row, do_row, kt.get(), vt.get(), D, BN, visible, job.scale, lse_i,
                         job.delta[(b * job.H + h) * N + i], p.get() + batch * BN,
                         ds.get() + batch * BN);
          batch_visible = visible;
          if (++batch == kRowBatch) flush();
        }
      }
      flush();  // the tail batch
      for (extent_t c = 0; c < cols; ++c) {
        T* dk_row = job.dk.row(b, g, j0 + c);
        T* dv_row = job.dv.row(b, g, j0 + c);
        for (extent_t e = 0; e < D; ++e) {
          dk_row[e * job.dk.sd] = job.scale * dk_acc[c * DP + e];
          dv_row[e * job.dv.sd] = dv_acc[c * DP + e];
        }
      }
    }
  }
}

// ---- dQ: each query block owns its rows -----------------------------------------
template <class T, bool kCausal>
void dq_pass(const AttnJob<T>& job) {
  const hn::ScalableTag<T> d;
  const Tiles<T> tiles(job.D);
  const size_t BN = tiles.block_n, DP = tiles.d_padded;
  const extent_t D = job.D, N = job.N, M = job.M, group = job.H / job.Hkv;
  const extent_t q_blocks = (N + kBlockM - 1) / kBlockM;
  const extent_t tasks = job.B * job.H * q_blocks;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();

#pragma omp parallel num_threads(detail::thread_count(job.threads))
  {
    auto q_blk = hwy::AllocateAligned<T>(kBlockM * DP);   // (BLOCK_M, Dp)
    auto do_blk = hwy::AllocateAligned<T>(kBlockM * DP);  // (BLOCK_M, Dp)
    auto dq_acc = hwy::AllocateAligned<T>(kBlockM * DP);  // (BLOCK_M, Dp)
    auto kt = hwy::AllocateAligned<T>(D * BN);            // (D, BLOCK_N)
    auto vt = hwy::AllocateAligned<T>(D * BN);            // (D, BLOCK_N)
    auto k_tile = hwy::AllocateAligned<T>(BN * DP);       // (BLOCK_N, Dp)
    auto p = hwy::AllocateAligned<T>(BN);                 // (BLOCK_N)
    auto ds = hwy::AllocateAligned<T>(BN);                // (BLOCK_N)
#pragma omp for schedule(dynamic, 1)
    for (extent_t task = 0; task < tasks; ++task) {
      const extent_t blk = task % q_blocks, bh = task / q_blocks;
      const extent_t b = bh / job.H, h = bh % job.H, g = h / group;
      const extent_t i0 = blk * kBlockM, rows = std::min(kBlockM, N - i0);
      std::fill(q_blk.get(), q_blk.get() + kBlockM * DP, T(0));
      std::fill(do_blk.get(), do_blk.get() + kBlockM * DP, T(0));
      std::fill(dq_acc.get(), dq_acc.get() + kBlockM * DP, T(0));
      for (extent_t r = 0; r < rows; ++r) {
        gather_row(job.q.row(b, h, i0 + r), job.q.sd, D, q_blk.get() + r * DP);
        gather_row(job.dout.row(b, h, i0 + r), job.dout.sd, D, do_blk.get() + r * DP);
      }
      const extent_t keys = key_end(kCausal, i0 + rows - 1, N, M);
      for (extent_t j0 = 0; j0 < keys; j0 += extent_t(BN)) {
        const extent_t cols = std::min<extent_t>(extent_t(BN), M - j0);  // tail tile
        pack_transposed(job.k.row(b, g, 0), job.k.sr, job.k.sd, j0, cols, D, BN, kt.get());
        pack_transposed(job.v.row(b, g, 0), job.v.sr, job.v.sd, j0, cols, D, BN, vt.get());
        pack_rows(job.k.row(b, g, 0), job.k.sr, job.k.sd, j0, cols, D, BN, DP, k_tile.get());
        for (extent_t r = 0; r < rows; ++r) {
          const extent_t i = i0 + r;
          const T lse_i = job.lse_in.at(b, h, i);
          if (lse_i == neg_inf) continue;  // row with no visible key: dQ_i = 0
          const size_t visible =
              static_cast<size_t>(std::clamp<extent_t>(key_end(kCausal, i, N, M) - j0, 0, cols));
          if (visible == 0) continue;
          recompute_p_ds(d, q_blk.get() + r * DP, do_blk.get() + r * DP, kt.get(), vt.get(), D, BN,
                         visible, job.scale, lse_i, job.delta[(b * job.H + h) * N + i], p.get(),
                         ds.get());
          // accumulate: dQ_i += dS_ij K_j
          accumulate_rows(d, ds.get(), 1, k_tile.get(), DP, visible, dq_acc.get() + r * DP, DP);
        }
      }
      for (extent_t r = 0; r < rows; ++r) {
        T* dq_row = job.dq.row(b, h, i0 + r);
        for (extent_t e = 0; e < D; ++e) dq_row[e * job.dq.sd] = job.scale * dq_acc[r * DP + e];
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
struct Forward {
  static void run(const AttnJob<T>& job) { forward_pass<T, kCausal>(job); }
};
template <class T, bool kCausal>
struct DkDv {
  static void run(const AttnJob<T>& job) { dkdv_pass<T, kCausal>(job); }
};
template <class T, bool kCausal>
struct Dq {
  static void run(const AttnJob<T>& job) { dq_pass<T, kCausal>(job); }
};

void ForwardF32(const AttnJob<float>& job) {
  with_causal<float, Forward>(job);
}
void ForwardF64(const AttnJob<double>& job) {
  with_causal<double, Forward>(job);
}
void DeltaF32(const AttnJob<float>& job) {
  delta_pass(job);
}
void DeltaF64(const AttnJob<double>& job) {
  delta_pass(job);
}
void DkDvF32(const AttnJob<float>& job) {
  with_causal<float, DkDv>(job);
}
void DkDvF64(const AttnJob<double>& job) {
  with_causal<double, DkDv>(job);
}
void DqF32(const AttnJob<float>& job) {
  with_causal<float, Dq>(job);
}
void DqF64(const AttnJob<double>& job) {
  with_causal<double, Dq>(job);
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
namespace moacert::kernels::cpu {

HWY_EXPORT(ForwardF32);
HWY_EXPORT(ForwardF64);
HWY_EXPORT(DeltaF32);
HWY_EXPORT(DeltaF64);
HWY_EXPORT(DkDvF32);
HWY_EXPORT(DkDvF64);
HWY_EXPORT(DqF32);
HWY_EXPORT(DqF64);
HWY_EXPORT(LanesF32);
HWY_EXPORT(LanesF64);

namespace {

using detail::AttnJob;
using detail::strided3;
using detail::strided4;

template <class T>
struct Passes;
template <>
struct Passes<float> {
  static void forward(const AttnJob<float>& j) { HWY_DYNAMIC_DISPATCH(ForwardF32)(j); }
  static void delta(const AttnJob<float>& j) { HWY_DYNAMIC_DISPATCH(DeltaF32)(j); }
  static void dkdv(const AttnJob<float>& j) { HWY_DYNAMIC_DISPATCH(DkDvF32)(j); }
  static void dq(const AttnJob<float>& j) { HWY_DYNAMIC_DISPATCH(DqF32)(j); }
};
template <>
struct Passes<double> {
  static void forward(const AttnJob<double>& j) { HWY_DYNAMIC_DISPATCH(ForwardF64)(j); }
  static void delta(const AttnJob<double>& j) { HWY_DYNAMIC_DISPATCH(DeltaF64)(j); }
  static void dkdv(const AttnJob<double>& j) { HWY_DYNAMIC_DISPATCH(DkDvF64)(j); }
  static void dq(const AttnJob<double>& j) { HWY_DYNAMIC_DISPATCH(DqF64)(j); }
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
  job.q = strided4(q);
  job.k = strided4(k);
  return job;
}

}  // namespace

AttentionTiles attention_tiles(int element_bytes, extent_t D) {
  const size_t lanes =
      element_bytes == 8 ? HWY_DYNAMIC_DISPATCH(LanesF64)() : HWY_DYNAMIC_DISPATCH(LanesF32)();
  const extent_t L = static_cast<extent_t>(lanes);
  return {64, 4 * L, (D + L - 1) / L * L};
}

double attention_scratch_bytes(int element_bytes, extent_t B, extent_t H, extent_t N, extent_t D,
                               int threads) {
  const AttentionTiles t = attention_tiles(element_bytes, D);
  // The largest pass (dQ): q, dO, dQ blocks (BLOCK_M, Dp), K^T, V^T (D,
  // BLOCK_N), a K tile (BLOCK_N, Dp), p and dS (BLOCK_N); plus D_i.
  const double per_thread = 3.0 * double(t.block_m * t.d_padded) + 2.0 * double(D * t.block_n) +
                            double(t.block_n * t.d_padded) + 2.0 * double(t.block_n) +
                            2.0 * double(t.block_m);
  return element_bytes * (detail::thread_count(threads) * per_thread + double(B * H * N));
}

double visible_pairs(bool causal, extent_t N, extent_t M) {
  double pairs = 0;
  for (extent_t i = 0; i < N; ++i) pairs += double(key_end(causal, i, N, M));
  return pairs;
}

template <class T>
void flash_attention_fwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<T> o, moa::View<T> lse, const AttentionParams& params) {
  AttnJob<T> job = make_job(q, k, params);
  job.v = strided4(v);
  job.o = strided4(o);
  job.lse = strided3(lse);
  job.want_delta = false;
  Passes<T>::forward(job);
}

template <class T>
void flash_attention_bwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<const T> o, moa::View<const T> lse, moa::View<const T> dout,
                         moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                         const AttentionParams& params) {
  AttnJob<T> job = make_job(q, k, params);
  std::vector<T> delta(static_cast<size_t>(job.B * job.H * job.N));  // D_i, (B, H, N)
  job.v = strided4(v);
  job.o_in = strided4(o);
  job.lse_in = strided3(lse);
  job.dout = strided4(dout);
  job.dq = strided4(dq);
  job.dk = strided4(dk);
  job.dv = strided4(dv);
  job.delta = delta.data();
  Passes<T>::delta(job);
  Passes<T>::dkdv(job);
  Passes<T>::dq(job);
}

template <class T>
void flash_attention_fwdbwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                            moa::View<const T> dout, moa::View<T> o, moa::View<T> lse,
                            moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                            const AttentionParams& params) {
  AttnJob<T> job = make_job(q, k, params);
  std::vector<T> delta(static_cast<size_t>(job.B * job.H * job.N));  // D_i, (B, H, N)
  job.v = strided4(v);
  job.dout = strided4(dout);
  job.o = strided4(o);
  job.lse = strided3(lse);
  job.lse_in = strided3(moa::View<const T>(lse));
  job.dq = strided4(dq);
  job.dk = strided4(dk);
  job.dv = strided4(dv);
  job.delta = delta.data();
  job.want_delta = true;
  Passes<T>::forward(job);  // o, lse, D_i
  Passes<T>::dkdv(job);     // dK, dV: key tiles own their rows
  Passes<T>::dq(job);       // dQ: query blocks own their rows
}

#define MOACERT_INSTANTIATE(T)                                                                     \
  template void flash_attention_fwd<T>(moa::View<const T>, moa::View<const T>, moa::View<const T>, \
                                       moa::View<T>, moa::View<T>, const AttentionParams&);        \
  template void flash_attention_bwd<T>(moa::View<const T>, moa::View<const T>, moa::View<const T>, \
                                       moa::View<const T>, moa::View<const T>, moa::View<const T>, \
                                       moa::View<T>, moa::View<T>, moa::View<T>,                   \
                                       const AttentionParams&);                                    \
  template void flash_attention_fwdbwd<T>(moa::View<const T>, moa::View<const T>,                  \
                                          moa::View<const T>, moa::View<const T>, moa::View<T>,    \
                                          moa::View<T>, moa::View<T>, moa::View<T>, moa::View<T>,  \
                                          const AttentionParams&);
MOACERT_INSTANTIATE(float)
MOACERT_INSTANTIATE(double)
#undef MOACERT_INSTANTIATE

// ---- registration: attention.bwd cpu.flash_bwd ------------------------------------
namespace {

Cost attention_bwd_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double heads = double(d.B * d.H);
  const double pairs = heads * visible_pairs(p.causal(), d.N, d.M);
  Cost c;
  // Per visible pair: S and dP in the dK/dV pass and again in the dQ pass,
  // dV, dK and dQ updates: 7 products of length D, 2 flops each; plus D_i.
  c.flops = 14.0 * double(d.D) * pairs + 2.0 * heads * double(d.N * d.D);
  const double q_like = heads * double(d.N * d.D), kv_like = double(d.B * d.Hkv * d.M * d.D);
  c.bytes_read = bytes * (3 * q_like + 2 * kv_like + heads * double(d.N));  // q o do, k v, lse
  c.bytes_written = bytes * (q_like + 2 * kv_like);
  c.atomics = 0;
  c.peak_extra_bytes = attention_scratch_bytes(int(bytes), d.B, d.H, d.N, d.D, 0);
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

void register_attention_bwd(Registry& r) {
  r.add({"cpu.flash_bwd",
         Op::attention_bwd,
         "cpu",
         {Format::f64, Format::f32},
         /*accepts_strided=*/true,
         /*deterministic=*/true,
         "flash backward: P recomputed from the given LSE; dK/dV owned per key tile, dQ per "
         "query block (no atomics); Highway-vectorised, OpenMP",
         attention_bwd_cost,
         [](const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
            const RunOptions& opt) {
           if (p.format == Format::f64) return run_bwd<double>(p, in, out, opt);
           if (p.format == Format::f32) return run_bwd<float>(p, in, out, opt);
           throw std::invalid_argument("attention.bwd cpu.flash_bwd: format " +
                                       std::string(name(p.format)) + " is not supported");
         },
         /*tiles=*/{64, 32}, /*family_name=*/{},
         /*same_bits_any_layout=*/false});  // BLOCK_M = 64, BLOCK_N = 4 vectors (64 f32, 32 f64 on AVX-512)
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
