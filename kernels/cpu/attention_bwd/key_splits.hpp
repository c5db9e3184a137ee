// How cpu.flash_bwd deals the key tiles of one (batch, kv head) to tasks;
// shared by the vectorised backward (flash_bwd.cpp) and the scalar form of
// the fused ONF (attention_fwdbwd/fused_generic.hpp). Includes only
// reference/.
#pragma once

#include <algorithm>

#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// How many splits share the key tiles of one (batch, kv head): enough that
// there are at least kMinTasks backward tasks, at most one split per tile.
// A function of the problem alone, never of the thread count, so that the
// order of every sum (and so every bit of dQ) is the same on any machine.
inline moa::extent_t key_splits(moa::extent_t B, moa::extent_t Hkv, moa::extent_t k_tiles) {
  constexpr moa::extent_t kMinTasks = 8;
  const moa::extent_t pairs = std::max<moa::extent_t>(B * Hkv, 1);
  return std::clamp<moa::extent_t>((kMinTasks + pairs - 1) / pairs, 1,
                                   std::max<moa::extent_t>(k_tiles, 1));
}

}  // namespace moacert::kernels::cpu
