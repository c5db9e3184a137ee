// The traffic law of kernels/cuda/'s ONFs (issue #16, docs/cuda.md): for
// every launch of a call and every tensor, the global loads, stores
// (elements and bytes) and atomics the emulator counted equal the cost
// function's model (kernels/cuda/cost.hpp), or lie within its bounds where
// the model is a bound. Written once: tests/cuda checks it on random cases
// of every ONF, and each call of a simt.* variant checks it for the
// certificate. Plain C++: no CUDA, no emulator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cuda/launch_log.hpp"
#include "reference/problem.hpp"

namespace moacert::kernels::cuda_cost {

// Where the launches of one call of `onf` on `p` differ from the model,
// one line each ("launch 1 dv_kernel, tensor k: counted ..., the cost
// function says ..."); empty when the law holds. decode's lens, when
// known, make its model exact (nullptr: its bounds).
std::vector<std::string> traffic_mismatches(std::string_view onf, const Problem& p,
                                            const std::vector<std::int64_t>* lens,
                                            const std::vector<simt::LaunchRecord>& counted);

}  // namespace moacert::kernels::cuda_cost
