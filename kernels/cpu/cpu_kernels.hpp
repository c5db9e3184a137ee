// The CPU kernel files' registration functions, called by register.cpp
// (one line each, so that files added in parallel merge trivially).
#pragma once

#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {

void register_attention_fwd(Registry& r);     // attention_fwd.cpp: cpu.naive, cpu.flash
void register_attention_decode(Registry& r);  // decode.cpp: cpu.split

// cpu.flash's scratch per thread, in bytes: its tiles, O(BLOCK·D), and the
// packed K^T and V of one kv head, O(M·D); independent of N.
double flash_scratch_bytes(const Problem& p);

}  // namespace moacert::kernels::cpu
