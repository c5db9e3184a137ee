// simt.flash_tc with a fragment loaded in the wrong layout (tests/cuda/
// flash_tc_planted_glue.cpp): the run of a planted variant.
#pragma once

#include <span>

#include "kernels/registry.hpp"

namespace moacert::tests {

void run_planted_flash_tc(const Problem& p, std::span<const TensorRef> in,
                          std::span<const TensorRef> out);

}  // namespace moacert::tests
