// attention.fwd, cpu.flash: tiled over keys with an online softmax,
// Highway-vectorised with runtime dispatch, OpenMP over (b, h, query
// block). What its callers share: the tiles (read by the kernel, its cost
// and its registry entry), the argument block, its scratch, and its loop
// nest on views for the variants built from it (attention.fwdbwd cpu.fused,
// block cpu.composed). The scalar form of the loop nest is flash_generic.hpp.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/cpu/common/strided.hpp"
#include "reference/format.hpp"
#include "reference/moa/moa.hpp"
#include "reference/problem.hpp"

namespace moacert::kernels::cpu {

// The tiles of cpu.flash: BLOCK_M query rows against BLOCK_N keys, the same
// on every target. (Inside a tile, rows are register-blocked by 4 and
// columns by 2 or 4 vectors of the target: the kernel's settings.)
struct FlashTiles {
  static constexpr std::size_t block_m = 64;
  static constexpr std::size_t block_n = 64;
};

// The tile extents cpu.flash runs in format f on this machine: BLOCK_M and
// BLOCK_N.
std::vector<moa::extent_t> flash_tiles(Format f);

// The lanes of cpu.flash's compute type (f64 for f64, else f32) on the
// target Highway's dynamic dispatch runs.
std::size_t flash_lanes(Format f);

struct AttentionParams {
  double scale = 0;  // the scale actually used (never 0 here)
  bool causal = false;
  int threads = 0;  // 0: the OpenMP default
};

// One call of cpu.flash: the problem's dimensions (B, H, Hkv, N, M, D of
// reference/problem.hpp's Dims) and the tensors with flat strides (in
// elements) read up front; the data in the storage type of the call's
// format.
struct FlashArgs {
  Dims dims;
  double scale = 1;
  bool causal = false;
  int threads = 1;
  Strided<const void, 4> q, k, v;  // (B, H, N, D), (B, Hkv, M, D) twice
  Strided<void, 4> o;              // (B, H, N, D)
  Strided<void, 3> lse;            // (B, H, N)
};

// cpu.flash's scratch per thread, in bytes: its tiles, O(BLOCK·D), and the
// packed K^T and V of one kv head, O(M·D); independent of N.
double flash_scratch_bytes(const Problem& p);

// o, lse from q, k, v: cpu.flash's loop nest on views with one stride per
// axis, bitwise its result (the forward of cpu.fused and cpu.composed).
template <class T>
void flash_attention_fwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                         moa::View<T> o, moa::View<T> lse, const AttentionParams& params);

}  // namespace moacert::kernels::cpu
