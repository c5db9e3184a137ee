// The tile extents of the CUDA ONFs, defined once: the kernels (*.cu) run
// them, their cost functions (cost.cpp) count with them, and their registry
// entries (backend_glue.hpp) declare them, so that certify's generators
// straddle the tiles the kernels really use. Plain constants: nvcc and g++
// read this header alike.
#pragma once

#include <string_view>
#include <vector>

#include "reference/causal.hpp"

namespace moacert::kernels::cuda_tiles {

constexpr int kBlockM = 16;      // attention: query rows per tile
constexpr int kBlockN = 16;      // attention: keys per tile
constexpr int kMaxD = 128;       // attention: head width the shared tiles are sized for
constexpr int kSplitKeys = 64;   // decode: keys per split (= threads per block)
constexpr int kRmsThreads = 64;  // rmsnorm: threads striding a row's D
constexpr int kGemmTile = 16;    // swiglu: output tile (kGemmTile, kGemmTile) and K-chunk
constexpr int kTcBlockM = 64;    // flash_tc: query rows per tile (4 warps of 16 rows)
constexpr int kTcBlockN = 32;    // flash_tc: keys per tile (one cp.async stage; 48 KiB at D = 128)

// bwd_tc: one block of 4 warps per key tile, each warp a (16 keys, 8
// queries) block of S^T; 34 KiB of shared memory at D = 128.
constexpr int kTcBwdBlockM = 16;  // query rows per tile (two 8-column mma n-tiles)
constexpr int kTcBwdBlockN = 32;  // keys per tile (two 16-row mma m-tiles)
// The fused tensor-core ONFs' query-block kernel: one block per 32 query
// rows, two 16-row sub-steps of bwd_tc's pair per key tile, dK and dV
// added by atomics once per (block, key, d). Equal to kTcBwdBlockN, so
// that their atomics are exactly twice bwd_tc's (docs/cuda.md).
constexpr int kTcFusedBlockM = 32;
static_assert(kTcFusedBlockM == kTcBwdBlockN && kTcFusedBlockM % kTcBwdBlockM == 0,
              "fused_v1_tc's atomics twice bwd_tc's: 2 kTcBwdBlockN / kTcFusedBlockM = 2");

// A (query tile, key tile) pair is visited unless every entry is masked:
// the tile's last row sees the most keys. One rule for query-major and
// key-major loops, so that both visit the same pairs, and for the kernels
// (int) and their cost functions (int64, cost.cpp), which count them.
// The tiles are (block_m rows, block_n keys): kBlockM, kBlockN unless given.
template <class I>
MOACERT_HOST_DEVICE constexpr bool tile_visible(bool causal, int q_tile, int k_tile, I N, I M,
                                                int block_m = kBlockM, int block_n = kBlockN) {
  if (!causal) return true;
  const I rows_end = I(q_tile + 1) * block_m;
  const I i_last = (rows_end < N ? rows_end : N) - 1;
  return I(k_tile) * block_n <= causal::last_key(i_last, N, M);
}

// The tiles an ONF runs ("flash", "fused_v1", ..., "decode", "rmsnorm",
// "swiglu"): what its registry entry declares.
inline std::vector<long long> tiles_of(std::string_view onf) {
  if (onf == "decode") return {kSplitKeys};
  if (onf == "rmsnorm") return {kRmsThreads};
  if (onf == "swiglu") return {kGemmTile};
  if (onf == "flash_tc") return {kTcBlockN, kTcBlockM};  // ascending, as the registry keeps them
  if (onf == "bwd_tc") return {kTcBwdBlockM, kTcBwdBlockN};
  if (onf == "fused_v1_tc" || onf == "fused_v3_tc" || onf == "fused_det_tc")
    return {kTcBwdBlockM, kTcBwdBlockN, kTcBlockM};  // kTcFusedBlockM = kTcBwdBlockN; flash_tc's
  if (kBlockM == kBlockN) return {kBlockM};
  return {kBlockM, kBlockN};
}

}  // namespace moacert::kernels::cuda_tiles
