// attention.decode on the CPU: cpu.split, split-K over the KV cache with an
// exact log-sum-exp merge of partial (max, sum, acc) triples. Highway-
// vectorised with runtime dispatch, OpenMP over (b, kv head, chunk); each
// task reads its chunk of K and V once for all the query heads of its group
// (GQA/MQA). The scalar form of the loop nest is decode_split_generic
// (split_generic.hpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_decode/split.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "kernels/cpu/attention_decode/split.hpp"
#include "kernels/cpu/common/convert.hpp"
#include "kernels/cpu/common/vec_exp-inl.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace decode_detail {

// One cache row of D elements (element stride s_d) as D compute-type values:
// the row itself when it already is contiguous T, else converted into buf.
template <class T, class S>
HWY_INLINE const T* load_row(const S* row, std::ptrdiff_t s_d, std::size_t D, T* buf) {
  if constexpr (std::is_same_v<S, T>) {
    if (s_d == 1) return row;
  }
  if constexpr (std::is_same_v<S, bf16> || std::is_same_v<S, f16>) {
    if (s_d == 1) {
      using H = std::conditional_t<std::is_same_v<S, bf16>, hwy::bfloat16_t, hwy::float16_t>;
      const hn::ScalableTag<float> df;
      const hn::Rebind<H, decltype(df)> dh;
      const std::size_t L = hn::Lanes(df);
      const H* src = reinterpret_cast<const H*>(row);
      std::size_t d = 0;
      for (; d + L <= D; d += L) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, src + d)), df, buf + d);
      for (; d < D; ++d) buf[d] = static_cast<float>(row[d]);
      return buf;
    }
  }
  for (std::size_t d = 0; d < D; ++d) buf[d] = static_cast<T>(to_accum(row[d * s_d]));
  return buf;
}

// q · k over D (padded with zeros to whole vectors in q; k read to D only).
template <class DF, class T = hn::TFromD<DF>>
HWY_INLINE T dot(DF df, const T* HWY_RESTRICT q, const T* HWY_RESTRICT k, std::size_t D) {
  using V = hn::Vec<DF>;
  const std::size_t L = hn::Lanes(df);
  V a0 = hn::Zero(df), a1 = hn::Zero(df);
  std::size_t d = 0;
  for (; d + 2 * L <= D; d += 2 * L) {
    a0 = hn::MulAdd(hn::LoadU(df, q + d), hn::LoadU(df, k + d), a0);
    a1 = hn::MulAdd(hn::LoadU(df, q + d + L), hn::LoadU(df, k + d + L), a1);
  }
  for (; d + L <= D; d += L) a0 = hn::MulAdd(hn::LoadU(df, q + d), hn::LoadU(df, k + d), a0);
  if (d < D) {  // tail of the row: masked load keeps positions >= D unread
    const auto mask = hn::FirstN(df, D - d);
    a1 = hn::MulAdd(hn::LoadU(df, q + d), hn::MaskedLoad(mask, df, k + d), a1);
  }
  return hn::GetLane(hn::SumOfLanes(df, hn::Add(a0, a1)));
}

}  // namespace decode_detail

// Register slabs: kSlab vectors of D per pass (8 of 16 lanes on AVX-512:
// 2 heads x 8 accumulators + 8 V vectors of 32 registers; 4 on narrower
// targets).
template <class T>
constexpr std::size_t kSlab = HWY_LANES(T) * sizeof(T) >= 64 ? 8 : 4;

// acc (HEADS, NV·L) += P (HEADS, n) · V (n, NV·L): one slab of D columns for
// HEADS query heads, accumulators in registers; the last vector of the slab
// is masked to `tail` lanes (L when full) so no position >= D is read.
template <std::size_t HEADS, std::size_t NV, class DF, class T = hn::TFromD<DF>>
HWY_INLINE void pv_slab(DF df, const T* HWY_RESTRICT v, std::ptrdiff_t v_l, std::size_t n,
                        const T* HWY_RESTRICT p, std::size_t sp, T* HWY_RESTRICT acc,
                        std::size_t dp, std::size_t tail) {
  using V = hn::Vec<DF>;
  const std::size_t L = hn::Lanes(df);
  const auto last = hn::FirstN(df, tail);
  V a[HEADS][NV];
  for (std::size_t h = 0; h < HEADS; ++h)
    for (std::size_t k = 0; k < NV; ++k) a[h][k] = hn::LoadU(df, acc + h * dp + k * L);
  for (std::size_t j = 0; j < n; ++j) {
    const T* row = v + static_cast<std::ptrdiff_t>(j) * v_l;
    V vv[NV];
    for (std::size_t k = 0; k + 1 < NV; ++k) vv[k] = hn::LoadU(df, row + k * L);
    vv[NV - 1] = hn::MaskedLoad(last, df, row + (NV - 1) * L);
    for (std::size_t h = 0; h < HEADS; ++h) {
      const V pb = hn::Set(df, p[h * sp + j]);
      for (std::size_t k = 0; k < NV; ++k) a[h][k] = hn::MulAdd(pb, vv[k], a[h][k]);
    }
  }
  for (std::size_t h = 0; h < HEADS; ++h)
    for (std::size_t k = 0; k < NV; ++k) hn::StoreU(a[h][k], df, acc + h * dp + k * L);
}

// Slabs of kSlab<T> vectors, heads in pairs; the V chunk is re-read from
// cache for each pair, never from memory.
template <class DF, class T = hn::TFromD<DF>>
HWY_INLINE void pv_registers(DF df, const T* v, std::ptrdiff_t v_l, std::size_t n, std::size_t D,
                             std::size_t G, const T* p, std::size_t sp, T* acc, std::size_t dp) {
  const std::size_t L = hn::Lanes(df);
  std::fill_n(acc, G * dp, T(0));
  for (std::size_t d0 = 0; d0 < D;) {
    const std::size_t left = D - d0;
    const bool full = left >= kSlab<T> * L;
    const std::size_t vecs = full ? kSlab<T> : 1;
    const std::size_t tail = full ? L : std::min(L, left);
    for (std::size_t h = 0; h < G; h += 2) {
      const T* ph = p + h * sp;
      T* ah = acc + h * dp + d0;
      if (h + 1 < G) {
        if (full)
          pv_slab<2, kSlab<T>>(df, v + d0, v_l, n, ph, sp, ah, dp, tail);
        else
          pv_slab<2, 1>(df, v + d0, v_l, n, ph, sp, ah, dp, tail);
      } else {
        if (full)
          pv_slab<1, kSlab<T>>(df, v + d0, v_l, n, ph, sp, ah, dp, tail);
        else
          pv_slab<1, 1>(df, v + d0, v_l, n, ph, sp, ah, dp, tail);
      }
    }
    d0 += vecs * L;
  }
}

// Asks for the cache lines of `bytes` bytes at p (a hint: never faults).
HWY_INLINE void prefetch_row(const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (std::size_t off = 0; off < bytes; off += 64) hwy::Prefetch(c + off);
}

// S (HEADS, n) = scale · Q (HEADS, NV·L) K^T for one whole row of D = NV
// vectors (the last masked to `tail` lanes): Q in registers, two keys at a
// time so that four FMA chains run side by side. With `next` (rows of
// `next_bytes` at stride next_l, the V rows of the same keys), those rows
// are prefetched alongside: two streams in flight instead of one.
template <std::size_t HEADS, std::size_t NV, class DF, class T = hn::TFromD<DF>>
HWY_INLINE void qk_slab(DF df, const T* HWY_RESTRICT q, std::size_t dp, const T* HWY_RESTRICT k,
                        std::ptrdiff_t k_l, std::size_t n, std::size_t tail, T scale,
                        T* HWY_RESTRICT s, std::size_t sp, const T* next, std::ptrdiff_t next_l,
                        std::size_t next_bytes) {
  using V = hn::Vec<DF>;
  const std::size_t L = hn::Lanes(df);
  const auto last = hn::FirstN(df, tail);
  V qv[HEADS][NV];
  for (std::size_t h = 0; h < HEADS; ++h)
    for (std::size_t x = 0; x < NV; ++x) qv[h][x] = hn::LoadU(df, q + h * dp + x * L);
  auto load = [&](const T* row, std::size_t x) {
    return x + 1 < NV ? hn::LoadU(df, row + x * L) : hn::MaskedLoad(last, df, row + x * L);
  };
  std::size_t j = 0;
  for (; j + 2 <= n; j += 2) {
    const T* r0 = k + static_cast<std::ptrdiff_t>(j) * k_l;
    const T* r1 = r0 + k_l;
    if (next) {
      prefetch_row(next + static_cast<std::ptrdiff_t>(j) * next_l, next_bytes);
      prefetch_row(next + static_cast<std::ptrdiff_t>(j + 1) * next_l, next_bytes);
    }
    V a0[HEADS], a1[HEADS];
    for (std::size_t h = 0; h < HEADS; ++h) a0[h] = a1[h] = hn::Zero(df);
    for (std::size_t x = 0; x < NV; ++x) {
      const V k0 = load(r0, x), k1 = load(r1, x);
      for (std::size_t h = 0; h < HEADS; ++h) {
        a0[h] = hn::MulAdd(qv[h][x], k0, a0[h]);
        a1[h] = hn::MulAdd(qv[h][x], k1, a1[h]);
      }
    }
    for (std::size_t h = 0; h < HEADS; ++h) {
      s[h * sp + j] = scale * hn::GetLane(hn::SumOfLanes(df, a0[h]));
      s[h * sp + j + 1] = scale * hn::GetLane(hn::SumOfLanes(df, a1[h]));
    }
  }
  if (j < n) {  // odd key count: the last key alone
    const T* r0 = k + static_cast<std::ptrdiff_t>(j) * k_l;
    V a0[HEADS];
    for (std::size_t h = 0; h < HEADS; ++h) a0[h] = hn::Zero(df);
    for (std::size_t x = 0; x < NV; ++x) {
      const V k0 = load(r0, x);
      for (std::size_t h = 0; h < HEADS; ++h) a0[h] = hn::MulAdd(qv[h][x], k0, a0[h]);
    }
    for (std::size_t h = 0; h < HEADS; ++h)
      s[h * sp + j] = scale * hn::GetLane(hn::SumOfLanes(df, a0[h]));
  }
}

// Heads in pairs over qk_slab when a row of D is kSlab<T> or kSlab<T>/2 vectors
// (D = 128 or 64 in f32 on AVX-512); false, computing nothing, otherwise.
template <class DF, class T = hn::TFromD<DF>>
HWY_INLINE bool qk_registers(DF df, const T* q, std::size_t dp, const T* k, std::ptrdiff_t k_l,
                             std::size_t n, std::size_t D, std::size_t G, T scale, T* s,
                             std::size_t sp, const T* v, std::ptrdiff_t v_l) {
  const std::size_t L = hn::Lanes(df), nv = (D + L - 1) / L, tail = D - (nv - 1) * L;
  if (nv != kSlab<T> && nv != kSlab<T> / 2) return false;
  for (std::size_t h = 0; h < G; h += 2) {
    const bool pair = h + 1 < G;
    const T* qh = q + h * dp;
    T* sh = s + h * sp;
    const T* next = h == 0 ? v : nullptr;  // V's rows, prefetched once
    const std::size_t bytes = D * sizeof(T);
    if (nv == kSlab<T>) {
      if (pair)
        qk_slab<2, kSlab<T>>(df, qh, dp, k, k_l, n, tail, scale, sh, sp, next, v_l, bytes);
      else
        qk_slab<1, kSlab<T>>(df, qh, dp, k, k_l, n, tail, scale, sh, sp, next, v_l, bytes);
    } else {
      if (pair)
        qk_slab<2, kSlab<T> / 2>(df, qh, dp, k, k_l, n, tail, scale, sh, sp, next, v_l, bytes);
      else
        qk_slab<1, kSlab<T> / 2>(df, qh, dp, k, k_l, n, tail, scale, sh, sp, next, v_l, bytes);
    }
  }
  return true;
}

// The per-thread tiles of one task: O(G·(split + D)).
template <class T>
struct SplitScratch {
  std::size_t dp;
  hwy::AlignedFreeUniquePtr<T[]> q;    // (G, Dp) the group's query rows
  hwy::AlignedFreeUniquePtr<T[]> s;    // (G, split_p) scores, then probabilities
  hwy::AlignedFreeUniquePtr<T[]> row;  // (Dp) one converted cache row
  std::size_t split_p;
  SplitScratch(std::size_t G, std::size_t D, std::size_t split, std::size_t lanes)
      : dp(round_up(D, lanes)), split_p(round_up(split, lanes)) {
    q = hwy::AllocateAligned<T>(G * dp);
    s = hwy::AllocateAligned<T>(G * split_p);
    row = hwy::AllocateAligned<T>(dp);
    std::fill_n(q.get(), G * dp, T(0));
    std::fill_n(row.get(), dp, T(0));
  }
};

// One task: kv head g of batch b, cache chunk c, for the G query heads of
// the group. Writes the partial triples (m, l, acc) of those heads.
template <class T, class S>
void split_task(const DecodeArgs& a, std::size_t b, std::size_t g, std::size_t c,
                SplitScratch<T>& w, T* part_m, T* part_l, T* part_acc) {
  const hn::ScalableTag<T> df;
  using V = hn::Vec<decltype(df)>;
  const std::size_t L = hn::Lanes(df);
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();

  // settings of this call, strides up front
  const std::size_t D = extent(a.dims.D), dp = w.dp, G = extent(a.dims.H / a.dims.Hkv),
                    split = a.split_len, sp = w.split_p;
  const std::ptrdiff_t q_h = a.q.s[1], q_d = a.q.s[3], k_l = a.k.s[2], k_d = a.k.s[3],
                       v_l = a.v.s[2], v_d = a.v.s[3];
  const std::size_t len = static_cast<std::size_t>(a.lens.at(b));
  const S* q_b = a.q.as<const S>().row(b, g * G, 0);  // (G, D)
  const S* k_bg = a.k.as<const S>().row(b, g, 0);     // (L, D)
  const S* v_bg = a.v.as<const S>().row(b, g, 0);     // (L, D)

  const std::size_t j0 = c * split;
  if (j0 >= len) {  // zero-length chunk (past lens[b]): the neutral triple (-inf, 0, 0)
    for (std::size_t hh = 0; hh < G; ++hh) {
      part_m[hh] = kNegInf;
      part_l[hh] = T(0);
      std::fill_n(part_acc + hh * dp, dp, T(0));
    }
    return;
  }
  const std::size_t j1 = std::min(len, j0 + split), n = j1 - j0;  // keys [j0, j1), all < lens[b]

  T* HWY_RESTRICT q = w.q.get();  // (G, Dp)
  T* HWY_RESTRICT s = w.s.get();  // (G, split_p)
  for (std::size_t hh = 0; hh < G; ++hh) {
    const S* q_row = q_b + static_cast<std::ptrdiff_t>(hh) * q_h;
    for (std::size_t d = 0; d < D; ++d) q[hh * dp + d] = static_cast<T>(to_accum(q_row[d * q_d]));
  }

  // scores: S (G, n) = scale · Q K^T
  const T scale = static_cast<T>(a.scale);
  bool scored = false;
  if constexpr (std::is_same_v<S, T>) {
    if (k_d == 1) {  // contiguous rows of the compute type: Q in registers
      // V's rows of the chunk are prefetched while K's are scored when V
      // too is contiguous in the compute type (then the accumulation below
      // reads them from cache).
      const T* v_next = v_d == 1 ? v_bg + static_cast<std::ptrdiff_t>(j0) * v_l : nullptr;
      scored = qk_registers(df, q, dp, k_bg + static_cast<std::ptrdiff_t>(j0) * k_l, k_l, n, D, G,
                            scale, s, sp, v_next, v_l);
    }
  }
  for (std::size_t j = 0; !scored && j < n; ++j) {  // each K row read once for the group
    const T* k_row = decode_detail::load_row<T>(k_bg + static_cast<std::ptrdiff_t>(j0 + j) * k_l,
                                                k_d, D, w.row.get());
    for (std::size_t hh = 0; hh < G; ++hh)
      s[hh * sp + j] = scale * decode_detail::dot(df, q + hh * dp, k_row, D);
  }

  // row_max, exp, row_sum per query head; padding columns are -inf -> 0
  const V vneg_inf = hn::Set(df, kNegInf);
  for (std::size_t hh = 0; hh < G; ++hh) {
    T* HWY_RESTRICT s_row = s + hh * sp;  // (split_p)
    for (std::size_t j = n; j < round_up(n, L); ++j) s_row[j] = kNegInf;
    V vmax = vneg_inf;
    for (std::size_t j = 0; j < n; j += L) vmax = hn::Max(vmax, hn::LoadU(df, s_row + j));
    const T m = hn::GetLane(hn::MaxOfLanes(df, vmax));  // finite: n >= 1 valid keys
    const V vm = hn::Set(df, m);
    V vsum = hn::Zero(df);
    for (std::size_t j = 0; j < n; j += L) {
      const V p = VecExp(df, hn::Sub(hn::LoadU(df, s_row + j), vm));
      hn::StoreU(p, df, s_row + j);
      vsum = hn::Add(vsum, p);
    }
    part_m[hh] = m;
    part_l[hh] = hn::GetLane(hn::SumOfLanes(df, vsum));
    std::fill_n(part_acc + hh * dp, dp, T(0));
  }

  // accumulate: acc (G, Dp) += P (G, n) · V (n, Dp)
  if constexpr (std::is_same_v<S, T>) {
    if (v_d == 1) {  // contiguous rows of the compute type: accumulators in registers
      pv_registers(df, v_bg + static_cast<std::ptrdiff_t>(j0) * v_l, v_l, n, D, G, s, sp, part_acc,
                   dp);
      return;
    }
  }
  for (std::size_t j = 0; j < n; ++j) {  // each V row read once, converted
    const T* v_row = decode_detail::load_row<T>(v_bg + static_cast<std::ptrdiff_t>(j0 + j) * v_l,
                                                v_d, D, w.row.get());
    for (std::size_t hh = 0; hh < G; ++hh) {
      const V pj = hn::Set(df, s[hh * sp + j]);
      T* HWY_RESTRICT acc = part_acc + hh * dp;
      std::size_t d = 0;
      for (; d + L <= D; d += L)
        hn::StoreU(hn::MulAdd(pj, hn::LoadU(df, v_row + d), hn::LoadU(df, acc + d)), df, acc + d);
      if (d < D) {  // tail: positions >= D of the row are never read
        const auto mask = hn::FirstN(df, D - d);
        hn::StoreU(hn::MulAdd(pj, hn::MaskedLoad(mask, df, v_row + d), hn::LoadU(df, acc + d)), df,
                   acc + d);
      }
    }
  }
}

template <class T, class S>
void split_run(const DecodeArgs& a) {
  const std::size_t B = extent(a.dims.B), H = extent(a.dims.H), Hkv = extent(a.dims.Hkv),
                    cache_length = extent(a.dims.M), D = extent(a.dims.D);
  const std::size_t G = H / Hkv, lanes = hn::Lanes(hn::ScalableTag<T>());
  const std::size_t dp = round_up(D, lanes);
  // The chunk grid depends on L and split_len only, never on the thread
  // count, and the merge runs in ascending chunk order: deterministic.
  const std::size_t chunks = (cache_length + a.split_len - 1) / a.split_len;
  // The partial triples live in a per-calling-thread workspace kept across
  // calls (RunOptions::keep_workspaces): freshly mapped megabytes cost
  // first-touch page faults on every call (about a tenth of the call at the
  // bench shape). Every slot read is written first in this call.
  static thread_local std::vector<T> workspace;
  const std::size_t slots = B * H * chunks;
  if (workspace.size() < slots * (dp + 2)) workspace.resize(slots * (dp + 2));
  T* part_m = workspace.data();  // (B, H, chunks)
  T* part_l = part_m + slots;    // (B, H, chunks)
  T* part_acc = part_l + slots;  // (B, H, chunks, Dp)
  // partial (b, h, c) lives at ((b·Hkv + g)·chunks + c)·G + hh, h = g·G + hh
  const std::int64_t tasks = static_cast<std::int64_t>(B * Hkv * chunks);

  // merge: head h of batch b rescales its chunks' triples to their common
  // max, in ascending chunk order (whichever thread runs it: deterministic).
  auto merge = [&](std::size_t b, std::size_t h, T* acc /*(Dp)*/) {
    const std::size_t g = h / G, hh = h % G;
    const std::size_t len = static_cast<std::size_t>(a.lens.at(b));
    const std::size_t used =
        (len + a.split_len - 1) / a.split_len;  // chunks past lens[b] are empty
    auto slot = [&](std::size_t c) { return ((b * Hkv + g) * chunks + c) * G + hh; };
    T m = part_m[slot(0)];
    for (std::size_t c = 1; c < used; ++c) m = std::max(m, part_m[slot(c)]);
    T l = 0;
    std::fill_n(acc, dp, T(0));
    const hn::ScalableTag<T> df;
    const std::size_t L = hn::Lanes(df);
    for (std::size_t c = 0; c < used; ++c) {
      const T alpha = hn::GetLane(VecExp(df, hn::Set(df, part_m[slot(c)] - m)));
      l += alpha * part_l[slot(c)];
      const auto va = hn::Set(df, alpha);
      const T* pa = &part_acc[slot(c) * dp];
      for (std::size_t d = 0; d < dp; d += L)
        hn::StoreU(hn::MulAdd(va, hn::LoadU(df, pa + d), hn::LoadU(df, acc + d)), df, acc + d);
    }
    // lens[b] >= 1: every decode row sees a key, so l >= 1.
    S* o_row = a.o.as<S>().row(b, h, 0);
    for (std::size_t d = 0; d < D; ++d)
      o_row[static_cast<std::ptrdiff_t>(d) * a.o.inner()] = from_compute<S>(acc[d] / l);
    a.lse.as<S>().at(b, h, 0) = from_compute<S>(m + std::log(l));
  };

  // No barrier between split and merge: the task that completes the last
  // chunk of a (b, kv head) merges its G heads (an acq_rel countdown makes
  // the other tasks' partials visible to it). On an oversubscribed machine a
  // barrier waits for the slowest thread's time slice.
  std::vector<std::atomic<std::size_t>> remaining(B * Hkv);  // (B, Hkv)
  for (auto& r : remaining) r.store(chunks, std::memory_order_relaxed);

#pragma omp parallel num_threads(a.threads)
  {
    SplitScratch<T> w(G, D, a.split_len, lanes);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t t = 0; t < tasks; ++t) {
      const std::size_t task = static_cast<std::size_t>(t);
      const std::size_t c = task % chunks, bg = task / chunks;
      const std::size_t slot = task * G;
      // split
      split_task<T, S>(a, bg / Hkv, bg % Hkv, c, w, &part_m[slot], &part_l[slot],
                       &part_acc[slot * dp]);
      if (remaining[bg].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        const std::size_t b = bg / Hkv, g = bg % Hkv;
        for (std::size_t hh = 0; hh < G; ++hh) merge(b, g * G + hh, w.row.get());
      }
    }
  }
  if (!a.keep_workspace) std::vector<T>().swap(workspace);
}

void SplitF64(const DecodeArgs& a) {
  split_run<double, double>(a);
}
void SplitF32(const DecodeArgs& a) {
  split_run<float, float>(a);
}
void SplitBF16(const DecodeArgs& a) {
  split_run<float, bf16>(a);
}
void SplitF16(const DecodeArgs& a) {
  split_run<float, f16>(a);
}

}  // namespace moacert::kernels::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <span>
#include <string>

#include "kernels/cpu/common/threads.hpp"
#include "kernels/cpu/common/tiles.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {

HWY_EXPORT(SplitF64);
HWY_EXPORT(SplitF32);
HWY_EXPORT(SplitBF16);
HWY_EXPORT(SplitF16);

std::vector<moa::extent_t> split_tiles(Format) {
  return {moa::extent_t(SplitTiles::split_len)};
}

namespace {

using moa::extent_t;

void check_decode(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out) {
  check_tensors(p, in, out);
  const auto& op = info(p.op);
  in[3].check<const std::int64_t>();
  const auto lens = in[3].view<const std::int64_t>();
  for (extent_t b = 0; b < p.dims.B; ++b) {
    if (lens(b) < 1 || lens(b) > p.dims.M) {
      throw std::invalid_argument(std::string(op.name) + ": lens[" + std::to_string(b) + "] is " +
                                  std::to_string(lens(b)) +
                                  ", must be in [1, L=" + std::to_string(p.dims.M) + "]");
    }
  }
}

void run_split(const Problem& p, std::span<const TensorRef> inputs,
               std::span<const TensorRef> outputs, const RunOptions& opt) {
  check_decode(p, inputs, outputs);
  with_flat_layouts(inputs, outputs,
                    [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
                      DecodeArgs a;
                      a.dims = p.dims;
                      a.split_len = SplitTiles::split_len;
                      a.scale = p.scale();
                      a.threads = thread_count(opt.threads);
                      a.keep_workspace = opt.keep_workspaces;
                      a.q = strided_in<4>(in[0]);
                      a.k = strided_in<4>(in[1]);
                      a.v = strided_in<4>(in[2]);
                      a.lens = strided<1>(in[3].view<const std::int64_t>());
                      a.o = strided_out<4>(out[0]);
                      a.lse = strided_out<3>(out[1]);
                      switch (p.format) {
                        case Format::f64:
                          HWY_DYNAMIC_DISPATCH(SplitF64)(a);
                          break;
                        case Format::f32:
                          HWY_DYNAMIC_DISPATCH(SplitF32)(a);
                          break;
                        case Format::bf16:
                          HWY_DYNAMIC_DISPATCH(SplitBF16)(a);
                          break;
                        case Format::f16:
                          HWY_DYNAMIC_DISPATCH(SplitF16)(a);
                          break;
                      }
                    });
}

// Cost at full cache (lens[b] = L): the problem does not carry lens, so this
// is the upper bound; bench runs with lens[b] = L, where it is exact.
Cost split_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double acc_bytes = p.format == Format::f64 ? 8 : 4;
  const double chunks = std::ceil(double(d.M) / double(SplitTiles::split_len));
  const double G = double(d.H) / double(d.Hkv);
  Cost c;
  c.flops = double(d.B) * d.H * d.M * (4.0 * d.D + 5.0);
  c.bytes_read = bytes * (double(d.B) * d.H * d.D + 2.0 * d.B * d.Hkv * d.M * d.D) + 8.0 * d.B;
  c.bytes_written = bytes * (double(d.B) * d.H * d.D + double(d.B) * d.H);
  const double partials = acc_bytes * d.B * d.H * chunks * (double(d.D) + 2);
  const double per_thread = acc_bytes * (G * d.D + G * double(SplitTiles::split_len) + d.D);
  c.peak_extra_bytes = partials + per_thread * thread_count(/*requested=*/0);
  c.atomics = double(d.B) * d.Hkv * chunks;  // one countdown per task
  return c;
}

}  // namespace

void register_attention_decode_split(Registry& r) {
  const std::vector<Format> formats = {Format::f64, Format::f32, Format::bf16, Format::f16};
  r.add(Variant{
      .name = "cpu.split",
      .op = Op::attention_decode,
      .backend = "cpu",
      .formats = formats,
      .accepts_strided = true,
      .deterministic = true,
      .summary = "split-K over the cache (" + std::to_string(SplitTiles::split_len) +
                 "-position chunks) with an exact LSE merge; GQA shares K/V reads",
      .cost = split_cost,
      .run = run_split,
      .tiles = tiles_of_formats(formats, split_tiles),
      .same_bits_any_layout = false,
  });
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
