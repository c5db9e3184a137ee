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
using cuda_tiles::tile_visible;

// One tensor's share of a launch's global traffic: source-level loads and
// stores of its elements, and float atomics (atomicAdd on f32) into it.
// `tensor` is the op's name for it ("q", "dk", reference/ops.hpp) or a
// scratch buffer's (kernels/cuda/scratch.hpp): the name the emulator
// counts the buffer's traffic under.
struct TensorTraffic {
  std::string tensor;
  double load_elements = 0, load_bytes = 0;
  double store_elements = 0, store_bytes = 0;
  double atomics = 0;
  TensorTraffic& operator+=(const TensorTraffic& o);
};

// One kernel launch: its traffic per tensor (the tensors it touches, in
// the order the model first meets them) and its flops.
struct LaunchCost {
  std::string kernel;
  std::vector<TensorTraffic> tensors;
  double flops = 0;
  // The launch's totals: the sum over its tensors (tensor "").
  TensorTraffic total() const;
  // The tensor's traffic, zero if the launch does not touch it.
  TensorTraffic of(std::string_view tensor) const;
};

// The ONFs: "fused_v1", "fused_v3", "fused_det", "bwd_atomic", "bwd_fa2",
// "flash", "decode", "rmsnorm", "swiglu"; on tensor cores "flash_tc",
// "bwd_tc", "fused_v1_tc", "fused_v3_tc", "fused_det_tc". Launches in the
// order the launcher issues them. Every ONF's traffic is a function of the
// problem alone (no schedule changes it) except decode's, which depends on
// lens: `launches` gives its upper bound, every position read (lens[b] =
// L); decode_launches(p, lens) the exact count for those lens.
std::vector<LaunchCost> launches(std::string_view onf, const Problem& p);
std::vector<LaunchCost> decode_launches(const Problem& p, const std::vector<std::int64_t>& lens);

// The bounds of an ONF's traffic on a problem, launch by launch: equal for
// an exact model; for decode without lens (lens == nullptr), the traffic
// of lens[b] = 1 (the least the op allows) and of lens[b] = L, between
// which every count lies (a split's loads grow with its visible keys).
struct TrafficBounds {
  std::vector<LaunchCost> least, most;
};
TrafficBounds traffic_bounds(std::string_view onf, const Problem& p,
                             const std::vector<std::int64_t>* lens);

// Their sum as the registry's Cost (bytes: the modelled global traffic;
// peak_extra_bytes: the f32 scratch the launcher allocates).
Cost total(std::string_view onf, const Problem& p);

double scratch_bytes(std::string_view onf, const Problem& p);

}  // namespace moacert::kernels::cuda_cost
