// Registration of the CPU variants of attention.bwd, attention.fwdbwd,
// rmsnorm, mlp.swiglu and block: one function per file, each called once
// from register.cpp.
#pragma once

namespace moacert::kernels {
class Registry;
}

namespace moacert::kernels::cpu {

void register_attention_bwd(Registry& r);  // attention_bwd.cpp: cpu.flash_bwd
void register_fwdbwd(Registry& r);         // fwdbwd.cpp: cpu.fused
void register_rmsnorm(Registry& r);        // rmsnorm.cpp: cpu.fused
void register_mlp(Registry& r);            // mlp.cpp: cpu.tiled
void register_block(Registry& r);          // block.cpp: cpu.composed

}  // namespace moacert::kernels::cpu
