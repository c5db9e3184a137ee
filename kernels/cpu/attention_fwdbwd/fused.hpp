// attention.fwdbwd, cpu.fused (fused.cpp): cpu.flash's forward, then
// cpu.flash_bwd's backward from its lse.
#pragma once

#include <vector>

#include "reference/format.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// The tile extents cpu.fused runs in format f on this machine: its
// forward's (flash_tiles) and its backward's (flash_bwd_tiles).
std::vector<moa::extent_t> fused_tiles(Format f);

}  // namespace moacert::kernels::cpu
