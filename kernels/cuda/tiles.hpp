// The tile extents of the CUDA ONFs, defined once: the kernels (*.cu) run
// them, their cost functions (cost.cpp) count with them, and their registry
// entries (backend_glue.hpp) declare them, so that certify's generators
// straddle the tiles the kernels really use. Plain constants: nvcc and g++
// read this header alike.
#pragma once

#include <string_view>
#include <vector>

namespace moacert::kernels::cuda_tiles {

constexpr int kBlockM = 16;      // attention: query rows per tile
constexpr int kBlockN = 16;      // attention: keys per tile
constexpr int kMaxD = 128;       // attention: head width the shared tiles are sized for
constexpr int kSplitKeys = 64;   // decode: keys per split (= threads per block)
constexpr int kRmsThreads = 64;  // rmsnorm: threads striding a row's D
constexpr int kGemmTile = 16;    // swiglu: output tile (kGemmTile, kGemmTile) and K-chunk

// The tiles an ONF runs ("flash", "fused_v1", ..., "decode", "rmsnorm",
// "swiglu"): what its registry entry declares.
inline std::vector<long long> tiles_of(std::string_view onf) {
  if (onf == "decode") return {kSplitKeys};
  if (onf == "rmsnorm") return {kRmsThreads};
  if (onf == "swiglu") return {kGemmTile};
  if (kBlockM == kBlockN) return {kBlockM};
  return {kBlockM, kBlockN};
}

}  // namespace moacert::kernels::cuda_tiles
