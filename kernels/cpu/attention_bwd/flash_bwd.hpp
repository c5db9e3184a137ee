// attention.bwd, cpu.flash_bwd: the CPU flash-attention backward passes
// that attention.bwd (cpu.flash_bwd) and attention.fwdbwd (cpu.fused) are
// built from. Vectorised with Highway (runtime dispatch), threaded with
// OpenMP, deterministic: every output element has one owner that sums in a
// fixed order, whatever the thread count. No atomics.
//
// Tensors are logical q, o, do, dq (B,H,N,D), k, v, dk, dv (B,Hkv,M,D),
// lse (B,H,N), in any strides.
#pragma once

#include <vector>

#include "kernels/cpu/attention_fwd/flash.hpp"  // AttentionParams
#include "reference/format.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// The tiles of cpu.flash_bwd. The row-sum pass takes ROW_BLOCK query rows
// per task; the backward runs over key tiles of BLOCK_N = CHUNKS vectors of
// the target's lanes (so BLOCK_N depends on the SIMD width Highway's
// dispatch chose), P and dS in register tiles of ROWS rows, and adds the dK
// and dV terms of ROW_BATCH rows together. One definition for the kernel
// (of(hn::Lanes(d), D) on its target), its cost and its registry entry.
struct FlashBwdTiles {
  static constexpr moa::extent_t row_block = 256;  // 64 made packing a third of the pass
  static constexpr moa::extent_t row_batch = 16;
  static constexpr moa::extent_t chunks = 4;
  static constexpr moa::extent_t rows = 4;
  moa::extent_t lanes = 0, block_n = 0, d_padded = 0;  // rows padded to d_padded elements

  static constexpr FlashBwdTiles of(moa::extent_t lanes, moa::extent_t D) {
    return {lanes, chunks * lanes, (D + lanes - 1) / lanes * lanes};
  }
};

// The tiles cpu.flash_bwd runs in format f (f64 or f32) for head dimension
// D on this machine, with the lanes of Highway's dispatched target.
FlashBwdTiles flash_bwd_tiling(Format f, moa::extent_t D);

// The tile extents cpu.flash_bwd runs in format f on this machine: BLOCK_N,
// ROW_BLOCK and ROW_BATCH.
std::vector<moa::extent_t> flash_bwd_tiles(Format f);

// The backward's scratch beyond inputs and outputs, in bytes, for `threads`
// threads: O((ROW_BATCH + BLOCK_N) D) of tiles per thread, a dQ partial
// (H/Hkv, N, D) per thread, or per task when keys are split (key_splits),
// and one D_i and 1 / l_i per query row. (The forward is cpu.flash's:
// flash_scratch_bytes.)
double attention_bwd_scratch_bytes(int element_bytes, moa::extent_t B, moa::extent_t H,
                                   moa::extent_t Hkv, moa::extent_t N, moa::extent_t M,
                                   moa::extent_t D, int threads);

// dq, dk, dv given lse: P recomputed from it and divided by its row sum
// l_i, D_i = rowsum(P ∘ dP) from that P (a pass of its own before the
// backward's); o is not read (flash_bwd.cpp says why).
template <class T>
void flash_attention_bwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<const T> o, moa::View<const T> lse, moa::View<const T> dout,
                         moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                         const AttentionParams& params);

}  // namespace moacert::kernels::cpu
