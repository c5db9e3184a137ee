// The cost functions of the CUDA attention ONFs (kernels/cuda/*.cu): for a
// problem, what each kernel launch of a variant does, counted by walking
// the same tile pairs the kernels visit (the visibility rule of
// attention_common.cuh, mirrored in cost.cpp). Exact, not estimated: the
// emulator's counters of every launch must equal these (tests/cuda/), and
// the registry's Cost is their sum. Plain C++: no CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cuda/tiles.hpp"
#include "kernels/registry.hpp"
#include "reference/problem.hpp"

namespace moacert::kernels::cuda_cost {

// The tile extents the kernels run (kernels/cuda/tiles.hpp).
using cuda_tiles::kBlockM;
using cuda_tiles::kBlockN;
using cuda_tiles::kGemmTile;
using cuda_tiles::kMaxD;
using cuda_tiles::kRmsThreads;
using cuda_tiles::kSplitKeys;

// One kernel launch's global-memory traffic and floating-point atomics
// (atomicAdd on f32, global memory), as source-level logical operations.
struct LaunchCost {
  std::string kernel;
  double atomics = 0;
  double load_elements = 0, load_bytes = 0;
  double store_elements = 0, store_bytes = 0;
  double flops = 0;
};

// The ONFs: "fused_v1", "fused_v3", "fused_det", "bwd_atomic", "bwd_fa2",
// "flash", "decode", "rmsnorm", "swiglu". Launches in the order the
// launcher issues them. decode's traffic depends on lens: without it, the
// bound for lens[b] = L (every position read); with it, exact.
std::vector<LaunchCost> launches(std::string_view onf, const Problem& p);
std::vector<LaunchCost> decode_launches(const Problem& p, const std::vector<std::int64_t>& lens);

// Their sum as the registry's Cost (bytes: the modelled global traffic;
// peak_extra_bytes: the f32 scratch the launcher allocates).
Cost total(std::string_view onf, const Problem& p);

double scratch_bytes(std::string_view onf, const Problem& p);

}  // namespace moacert::kernels::cuda_cost
