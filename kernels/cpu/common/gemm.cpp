// The packed, blocked GEMM of gemm.hpp. Compiled once per Highway target
// (foreach_target.h); HWY_DYNAMIC_DISPATCH picks the target at run time.
//
// silu in the epilogue uses Highway's Exp (hwy/contrib/math, documented max
// error 1 ULP) on -|z| only, so its argument never overflows:
//   silu(z) = z / (1 + e),  z >= 0;   z e / (1 + e),  z < 0;   e = exp(-|z|).

#ifndef MOACERT_GEMM_ONCE
#define MOACERT_GEMM_ONCE

#include <algorithm>
#include <cmath>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/common/gemm.hpp"
#include "kernels/cpu/common/strided.hpp"
#include "kernels/cpu/common/threads.hpp"

namespace moacert::kernels::cpu::gemm_detail {

using moa::extent_t;

constexpr extent_t kMR = GemmTiles::mr;           // micro-tile rows
constexpr extent_t kMC = GemmTiles::mc;           // rows of a packed A block (a multiple of MR)
constexpr extent_t kKC = GemmTiles::kc;           // depth of a packed block
constexpr extent_t kNCTask = GemmTiles::nc_task;  // columns of a task's packed B block

template <class T>
struct GemmJob {
  extent_t m, n, k;
  Strided<const T, 2> a, b, gate;  // (m, k), (k, n), (m, n)
  Strided<T, 2> c;                 // (m, n)
  int epilogue;                    // Epilogue
  int threads;
};

}  // namespace moacert::kernels::cpu::gemm_detail

#endif  // MOACERT_GEMM_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/common/gemm.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// after highway.h, inside the per-target re-inclusion
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace gemm_detail;

// tile (MR, NR) = a sliver (kc, MR) · b panel (kc, NR), NR = 2 vectors;
// twelve accumulators held in registers.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void micro_kernel(D d, extent_t kc, const T* HWY_RESTRICT a, const T* HWY_RESTRICT b,
                             T* HWY_RESTRICT tile) {
  using V = hn::Vec<D>;
  const size_t L = hn::Lanes(d);
  V c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  V c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  V c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  for (extent_t p = 0; p < kc; ++p) {
    const V b0 = hn::Load(d, b), b1 = hn::Load(d, b + L);
    V ar = hn::Set(d, a[0]);
    c00 = hn::MulAdd(ar, b0, c00);
    c01 = hn::MulAdd(ar, b1, c01);
    ar = hn::Set(d, a[1]);
    c10 = hn::MulAdd(ar, b0, c10);
    c11 = hn::MulAdd(ar, b1, c11);
    ar = hn::Set(d, a[2]);
    c20 = hn::MulAdd(ar, b0, c20);
    c21 = hn::MulAdd(ar, b1, c21);
    ar = hn::Set(d, a[3]);
    c30 = hn::MulAdd(ar, b0, c30);
    c31 = hn::MulAdd(ar, b1, c31);
    ar = hn::Set(d, a[4]);
    c40 = hn::MulAdd(ar, b0, c40);
    c41 = hn::MulAdd(ar, b1, c41);
    ar = hn::Set(d, a[5]);
    c50 = hn::MulAdd(ar, b0, c50);
    c51 = hn::MulAdd(ar, b1, c51);
    a += kMR;
    b += 2 * L;
  }
  const size_t NR = 2 * L;
  hn::Store(c00, d, tile + 0 * NR);
  hn::Store(c01, d, tile + 0 * NR + L);
  hn::Store(c10, d, tile + 1 * NR);
  hn::Store(c11, d, tile + 1 * NR + L);
  hn::Store(c20, d, tile + 2 * NR);
  hn::Store(c21, d, tile + 2 * NR + L);
  hn::Store(c30, d, tile + 3 * NR);
  hn::Store(c31, d, tile + 3 * NR + L);
  hn::Store(c40, d, tile + 4 * NR);
  hn::Store(c41, d, tile + 4 * NR + L);
  hn::Store(c50, d, tile + 5 * NR);
  hn::Store(c51, d, tile + 5 * NR + L);
}

template <class D, class V>
HWY_INLINE V silu(D d, V z) {
  const V e = hn::Exp(d, hn::Neg(hn::Abs(z)));  // exp(-|z|) in (0, 1]
  const V denom = hn::Add(hn::Set(d, hn::TFromD<D>(1)), e);
  const V num = hn::IfThenElse(hn::Lt(z, hn::Zero(d)), hn::Mul(z, e), z);
  return hn::Div(num, denom);
}

// C[i0.., j0..] (rows × cols of a tile) updated from the tile: the first
// k-block stores (or adds, for `accumulate`), later ones add; the last one
// applies silu_mul.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void update(D d, const GemmJob<T>& job, const T* HWY_RESTRICT tile, size_t NR,
                       extent_t i0, extent_t j0, extent_t rows, extent_t cols, bool first_k,
                       bool last_k) {
  const bool add = !first_k || job.epilogue == int(Epilogue::accumulate);
  const bool silu_mul = last_k && job.epilogue == int(Epilogue::silu_mul);
  const size_t L = hn::Lanes(d);
  const bool full_vectors = job.c.inner() == 1 && (!silu_mul || job.gate.inner() == 1);
  for (extent_t r = 0; r < rows; ++r) {
    const T* t_row = tile + r * NR;
    extent_t j = 0;
    if (full_vectors) {  // contiguous rows of C: whole vectors, then the tail
      T* c_row = &job.c.at(i0 + r, j0);
      for (; j + extent_t(L) <= cols; j += L) {
        auto acc = hn::Load(d, t_row + j);
        if (add) acc = hn::Add(hn::LoadU(d, c_row + j), acc);
        if (silu_mul) acc = hn::Mul(silu(d, hn::LoadU(d, &job.gate.at(i0 + r, j0 + j))), acc);
        hn::StoreU(acc, d, c_row + j);
      }
    }
    for (; j < cols; ++j) {  // strided C, or the tail of a row
      T acc = t_row[j];
      T& c = job.c.at(i0 + r, j0 + j);
      if (add) acc = c + acc;
      if (silu_mul) {
        const auto z = hn::Set(d, job.gate.at(i0 + r, j0 + j));
        acc = hn::GetLane(silu(d, z)) * acc;
      }
      c = acc;
    }
  }
}

// Tasks are (MC rows) × (NC_TASK columns) blocks of C, scheduled
// dynamically; each runs the whole k loop with its own packing, so threads
// never wait on each other inside a GEMM (the machine may be shared, and a
// barrier per k-block would wait for the slowest thread each time).
template <class T>
void gemm_impl(const GemmJob<T>& job) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  const extent_t NR = GemmTiles::nr(extent_t(L));
  const extent_t nc_task = GemmTiles::nc_task_of(NR);
  const extent_t m = job.m, n = job.n, k = job.k;
  const extent_t row_blocks = (m + kMC - 1) / kMC, col_blocks = (n + nc_task - 1) / nc_task;
  const extent_t tasks = row_blocks * col_blocks;

#pragma omp parallel num_threads(thread_count(job.threads))
  {
    auto b_pack = hwy::AllocateAligned<T>(kKC * nc_task);  // (NC_TASK/NR panels, KC, NR)
    auto a_pack = hwy::AllocateAligned<T>(kMC * kKC);      // (MC/MR slivers, KC, MR)
    auto tile = hwy::AllocateAligned<T>(kMR * NR);         // (MR, NR)
#pragma omp for schedule(dynamic, 1)
    for (extent_t task = 0; task < tasks; ++task) {
      const extent_t ic = (task / col_blocks) * kMC, jc = (task % col_blocks) * nc_task;
      const extent_t mc = std::min(kMC, m - ic), nc = std::min(nc_task, n - jc);
      const extent_t panels = (nc + NR - 1) / NR, slivers = (mc + kMR - 1) / kMR;
      for (extent_t pc = 0; pc < k; pc += kKC) {
        const extent_t kc = std::min(kKC, k - pc);
        // pack B: panels of NR columns, zero past the edge (tail tile)
        for (extent_t jp = 0; jp < panels; ++jp) {
          T* dst = b_pack.get() + jp * kc * NR;
          const extent_t j_first = jc + jp * NR, width = std::min(NR, n - j_first);
          for (extent_t p = 0; p < kc; ++p) {
            const T* src = &job.b.at(pc + p, j_first);
            T* out = dst + p * NR;
            if (job.b.inner() == 1) {
              std::copy(src, src + width, out);
            } else {
              for (extent_t c = 0; c < width; ++c) out[c] = src[c * job.b.inner()];
            }
            std::fill(out + width, out + NR, T(0));
          }
        }
        // pack A: slivers of MR rows, zero past the edge
        for (extent_t s = 0; s < slivers; ++s) {
          T* dst = a_pack.get() + s * kc * kMR;
          const extent_t i_first = ic + s * kMR, height = std::min(kMR, m - i_first);
          for (extent_t p = 0; p < kc; ++p) {
            T* out = dst + p * kMR;
            for (extent_t r = 0; r < height; ++r) out[r] = job.a.at(i_first + r, pc + p);
            for (extent_t r = height; r < kMR; ++r) out[r] = T(0);
          }
        }
        // jr over B panels (one stays in L1), ir over A slivers
        for (extent_t jp = 0; jp < panels; ++jp) {
          const extent_t j_first = jc + jp * NR, cols = std::min(NR, n - j_first);
          for (extent_t s = 0; s < slivers; ++s) {
            const extent_t i_first = ic + s * kMR, rows = std::min(kMR, m - i_first);
            micro_kernel(d, kc, a_pack.get() + s * kc * kMR, b_pack.get() + jp * kc * NR,
                         tile.get());
            update(d, job, tile.get(), size_t(NR), i_first, j_first, rows, cols,
                   /*first_k=*/pc == 0, /*last_k=*/pc + kc == k);
          }
        }
      }
    }
  }
}

void GemmF32(const GemmJob<float>& job) {
  gemm_impl(job);
}
void GemmF64(const GemmJob<double>& job) {
  gemm_impl(job);
}
size_t GemmLanesF32() {
  return hn::Lanes(hn::ScalableTag<float>());
}
size_t GemmLanesF64() {
  return hn::Lanes(hn::ScalableTag<double>());
}

}  // namespace moacert::kernels::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::kernels::cpu {

HWY_EXPORT(GemmF32);
HWY_EXPORT(GemmF64);
HWY_EXPORT(GemmLanesF32);
HWY_EXPORT(GemmLanesF64);

template <class T>
void gemm(moa::View<const T> a, moa::View<const T> b, moa::View<T> c, Epilogue epilogue,
          moa::View<const T> gate, int threads) {
  const moa::Shape as = a.shape(), bs = b.shape(), cs = c.shape();
  if (as[1] != bs[0] || cs[0] != as[0] || cs[1] != bs[1]) {
    throw moa::ShapeError("gemm: A " + as.str() + " · B " + bs.str() + " does not fit C " +
                          cs.str());
  }
  if (epilogue == Epilogue::silu_mul && !(gate.data() && gate.shape() == cs)) {
    throw moa::ShapeError("gemm: the silu_mul epilogue needs a gate of shape " + cs.str());
  }
  gemm_detail::GemmJob<T> job{as[0],         bs[1],         as[1],
                              strided<2>(a), strided<2>(b), strided<2>(gate),
                              strided<2>(c), int(epilogue), threads};
  if (job.m == 0 || job.n == 0) return;
  if (job.k == 0) {  // an empty sum: C = 0 (or unchanged, or silu(G) · 0)
    for (moa::extent_t i = 0; i < job.m; ++i)
      for (moa::extent_t j = 0; j < job.n; ++j)
        if (epilogue != Epilogue::accumulate) job.c.at(i, j) = T(0);
    return;
  }
  if constexpr (sizeof(T) == 8) {
    HWY_DYNAMIC_DISPATCH(GemmF64)(job);
  } else {
    HWY_DYNAMIC_DISPATCH(GemmF32)(job);
  }
}

template void gemm<float>(moa::View<const float>, moa::View<const float>, moa::View<float>,
                          Epilogue, moa::View<const float>, int);
template void gemm<double>(moa::View<const double>, moa::View<const double>, moa::View<double>,
                           Epilogue, moa::View<const double>, int);

double gemm_scratch_elements(int element_bytes, moa::extent_t m, moa::extent_t n, moa::extent_t k,
                             int threads) {
  (void)m, (void)n, (void)k;
  const size_t lanes = element_bytes == 8 ? HWY_DYNAMIC_DISPATCH(GemmLanesF64)()
                                          : HWY_DYNAMIC_DISPATCH(GemmLanesF32)();
  const moa::extent_t nr = GemmTiles::nr(moa::extent_t(lanes));
  // Per thread: a packed B block (KC, NC_TASK), a packed A block (MC, KC), a tile.
  const double b_pack = double(GemmTiles::kc) * double(GemmTiles::nc_task_of(nr));
  const double per_thread =
      b_pack + double(GemmTiles::mc * GemmTiles::kc) + double(GemmTiles::mr) * double(nr);
  return thread_count(threads) * per_thread;
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
