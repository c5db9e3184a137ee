// Kernel-internal entry points of the CPU flash-attention passes that
// attention.bwd (cpu.flash_bwd), attention.fwdbwd (cpu.fused) and block
// (cpu.composed) are built from. Vectorised with Highway (runtime dispatch),
// threaded with OpenMP, deterministic: every output element has one owner
// that sums in a fixed order, whatever the thread count. No atomics.
//
// Tensors are logical q, o, do, dq (B,H,N,D), k, v, dk, dv (B,Hkv,M,D),
// lse (B,H,N), in any strides.
#pragma once

#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

struct AttentionParams {
  double scale = 0;  // the scale actually used (never 0 here)
  bool causal = false;
  int threads = 0;  // 0: the OpenMP default
};

// The backward's key tile on the dispatched target: BLOCK_N keys, rows
// padded to d_padded elements. For cost functions and docs.
struct AttentionTiles {
  moa::extent_t block_n, d_padded;
};
AttentionTiles attention_tiles(int element_bytes, moa::extent_t D);

// The backward's scratch beyond inputs and outputs, in bytes, for `threads`
// threads: O((ROW_BATCH + BLOCK_N) D) of tiles per thread, a dQ partial
// (H/Hkv, N, D) per thread, or per task when keys are split (key_splits),
// and one D_i and 1 / l_i per query row. (The forward is cpu.flash's:
// flash_scratch_bytes.)
double attention_bwd_scratch_bytes(int element_bytes, moa::extent_t B, moa::extent_t H,
                                   moa::extent_t Hkv, moa::extent_t N, moa::extent_t M,
                                   moa::extent_t D, int threads);

// o, lse from q, k, v: cpu.flash's tiled online softmax (attention_fwd.cpp),
// bitwise its result. Views with one stride per axis.
template <class T>
void flash_attention_fwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<T> o, moa::View<T> lse, const AttentionParams& params);

// dq, dk, dv given lse: P recomputed from it and divided by its row sum
// l_i, D_i = rowsum(P ∘ dP) from that P (a pass of its own before the
// backward's); o is not read (attention_bwd.cpp says why).
template <class T>
void flash_attention_bwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<const T> o, moa::View<const T> lse, moa::View<const T> dout,
                         moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                         const AttentionParams& params);

// The fused forward+backward: o, lse by flash_attention_fwd, then dq, dk,
// dv by flash_attention_bwd from that lse. No N×M intermediate.
template <class T>
void flash_attention_fwdbwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                            moa::View<const T> dout, moa::View<T> o, moa::View<T> lse,
                            moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                            const AttentionParams& params);

// The number of (query row, key) pairs a head sees: N·M, or fewer with causal.
double visible_pairs(bool causal, moa::extent_t N, moa::extent_t M);

}  // namespace moacert::kernels::cpu
