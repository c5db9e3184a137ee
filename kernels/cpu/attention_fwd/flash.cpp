// attention.fwd, cpu.flash: tiled over keys with an online softmax,
// Highway-vectorised with runtime dispatch, OpenMP over (b, h, query block)
// (flash.hpp). The scalar form of its loop nest is flash_fwd_generic
// (flash_generic.hpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_fwd/flash.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include "kernels/cpu/attention_fwd/flash.hpp"
#include "kernels/cpu/common/causal.hpp"
#include "kernels/cpu/common/convert.hpp"
#include "kernels/cpu/common/vec_exp-inl.h"

#include <algorithm>
#include <cmath>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- settings -------------------------------------------------------------
// Tiles: BLOCK_M query rows against BLOCK_N keys (FlashTiles). Rows are
// register-blocked by kRows, columns by kVecs vectors: 4 x 4 accumulators of
// 16 lanes on AVX-512 (of 32 registers), 4 x 2 of 8 lanes on AVX2 (of 16).
constexpr std::size_t kBlockM = FlashTiles::block_m;
constexpr std::size_t kBlockN = FlashTiles::block_n;
constexpr std::size_t kRows = 4;
template <class T>
constexpr std::size_t kVecs = HWY_LANES(T) * sizeof(T) >= 64 ? 4 : 2;

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
  const std::size_t N = extent(a.dims.N), M = extent(a.dims.M), D = extent(a.dims.D), dp = w.dp,
                    bnp = w.bnp;
  const std::size_t g = h / extent(a.dims.H / a.dims.Hkv);
  const std::ptrdiff_t q_n = a.q.s[2], q_d = a.q.s[3], k_m = a.k.s[2], k_d = a.k.s[3],
                       v_m = a.v.s[2], v_d = a.v.s[3], o_n = a.o.s[2], o_d = a.o.s[3],
                       lse_n = a.lse.s[2];
  const S* q_bh = a.q.as<const S>().row(b, h, 0);  // (N, D)
  const S* k_bg = a.k.as<const S>().row(b, g, 0);  // (M, D)
  const S* v_bg = a.v.as<const S>().row(b, g, 0);  // (M, D)
  S* o_bh = a.o.as<S>().row(b, h, 0);              // (N, D)
  S* lse_bh = a.lse.as<S>().row(b, h);             // (N)
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

  // Causal: keys the last row of the block does not see are invisible to the
  // whole block and are never loaded.
  const std::ptrdiff_t keys =
      key_end(kCausal, moa::extent_t(i0 + bm - 1), moa::extent_t(N), moa::extent_t(M));
  for (std::ptrdiff_t j0 = 0; j0 < keys; j0 += static_cast<std::ptrdiff_t>(kBlockN)) {
    const std::size_t bn = std::min<std::size_t>(kBlockN, static_cast<std::size_t>(keys - j0));
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
      const std::ptrdiff_t visible =
          kCausal ? visible_in_tile(/*causal=*/true, moa::extent_t(i0 + r), j0, moa::extent_t(bn),
                                    moa::extent_t(N), moa::extent_t(M))
                  : static_cast<std::ptrdiff_t>(bn);
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
  const std::size_t B = extent(a.dims.B), H = extent(a.dims.H);
  const std::size_t q_blocks = (extent(a.dims.N) + kBlockM - 1) / kBlockM;
  const std::int64_t tasks = static_cast<std::int64_t>(B * H * q_blocks);
  const std::size_t lanes = hn::Lanes(hn::ScalableTag<T>());
  // Each task owns its output rows and runs in a fixed order, so the result
  // is bitwise the same for every thread count and schedule.
#pragma omp parallel num_threads(a.threads)
  {
    FlashScratch<T> w(extent(a.dims.D), extent(a.dims.M), lanes);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t t = 0; t < tasks; ++t) {
      const std::size_t task = static_cast<std::size_t>(t);
      const std::size_t blk = task % q_blocks, bh = task / q_blocks;
      flash_block<T, S, kCausal>(a, bh / H, bh % H, blk * kBlockM, w);
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
#include <span>
#include <string>
#include <type_traits>

#include "kernels/cpu/common/threads.hpp"
#include "kernels/cpu/common/tiles.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/attention.hpp"

namespace moacert::kernels::cpu {

HWY_EXPORT(FlashF64);
HWY_EXPORT(FlashF32);
HWY_EXPORT(FlashBF16);
HWY_EXPORT(FlashF16);
HWY_EXPORT(FlashLanesF32);
HWY_EXPORT(FlashLanesF64);

std::vector<moa::extent_t> flash_tiles(Format) {
  return {moa::extent_t(FlashTiles::block_m), moa::extent_t(FlashTiles::block_n)};
}

std::size_t flash_lanes(Format f) {
  return f == Format::f64 ? HWY_DYNAMIC_DISPATCH(FlashLanesF64)()
                          : HWY_DYNAMIC_DISPATCH(FlashLanesF32)();
}

double flash_scratch_bytes(const Problem& p) {
  const double lanes = double(flash_lanes(p.format));
  const double elem = p.format == Format::f64 ? 8 : 4;
  const double block_m = double(FlashTiles::block_m), block_n = double(FlashTiles::block_n);
  const double dp = std::ceil(double(p.dims.D) / lanes) * lanes;
  const double bnp = std::ceil(block_n / lanes) * lanes;              // BLOCK_N in whole vectors
  const double mp = std::ceil(double(p.dims.M) / block_n) * block_n;  // M in whole key tiles
  // q, s, acc tiles and m, l, alpha, seen; packed K^T (D, Mp) and V (Mp, Dp)
  const double per_thread = elem * (block_m * dp + block_m * bnp + block_m * dp + 3 * block_m) +
                            block_m + elem * (double(p.dims.D) * mp + mp * dp);
  return per_thread;
}

namespace {

// The dispatched kernel of the format's storage type.
void flash_dispatch(Format f, const FlashArgs& a) {
  switch (f) {
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
}

void run_flash(const Problem& p, std::span<const TensorRef> inputs,
               std::span<const TensorRef> outputs, const RunOptions& opt) {
  check_tensors(p, inputs, outputs);
  with_flat_layouts(inputs, outputs,
                    [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
                      FlashArgs a;
                      a.dims = p.dims;
                      a.scale = p.scale();
                      a.causal = p.causal();
                      a.threads = thread_count(opt.threads);
                      a.q = strided_in<4>(in[0]);
                      a.k = strided_in<4>(in[1]);
                      a.v = strided_in<4>(in[2]);
                      a.o = strided_out<4>(out[0]);
                      a.lse = strided_out<3>(out[1]);
                      flash_dispatch(p.format, a);
                    });
}

}  // namespace

template <class T>
void flash_attention_fwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<T> o, moa::View<T> lse, const AttentionParams& params) {
  FlashArgs a;
  a.dims = dnf::attention_dims(q, k);
  a.scale = params.scale;
  a.causal = params.causal;
  a.threads = thread_count(params.threads);
  a.q = erased(strided<4>(q));
  a.k = erased(strided<4>(k));
  a.v = erased(strided<4>(v));
  a.o = erased(strided<4>(o));
  a.lse = erased(strided<3>(lse));
  flash_dispatch(std::is_same_v<T, double> ? Format::f64 : Format::f32, a);
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
  const double pairs = visible_pairs(p.causal(), d.N, d.M);
  const double bh = double(d.B) * d.H;
  Cost c;
  c.flops = bh * (4.0 * pairs * d.D + 5.0 * pairs);
  // Q once; K and V once per query head (each thread packs a kv head once
  // for all the query blocks it takes of that head; a head shared by two
  // threads is read by each, which this does not count).
  c.bytes_read = bytes * (bh * d.N * d.D + 2.0 * bh * d.M * d.D);
  c.bytes_written = bytes * (bh * d.N * d.D + bh * d.N);
  c.peak_extra_bytes = flash_scratch_bytes(p) * thread_count(/*requested=*/0);
  return c;
}

}  // namespace

void register_attention_fwd_flash(Registry& r) {
  const std::vector<Format> formats = {Format::f64, Format::f32, Format::bf16, Format::f16};
  r.add(Variant{
      .name = "cpu.flash",
      .op = Op::attention_fwd,
      .backend = "cpu",
      .formats = formats,
      .accepts_strided = true,
      .deterministic = true,
      .summary = std::to_string(FlashTiles::block_m) + "x" + std::to_string(FlashTiles::block_n) +
                 " tiles, online softmax, Highway (runtime dispatch) + OpenMP over (b,h,row block)",
      .cost = flash_cost,
      .run = run_flash,
      .tiles = tiles_of_formats(formats, flash_tiles),
  });
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
