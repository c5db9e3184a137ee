// The registration functions of the CPU variants, one per ONF file, called
// once each by register.cpp (one line each, so that files added in parallel
// merge trivially).
//
// Layout of kernels/cpu/ (kernels/cpu/README.md): one file per ONF,
// `<op>/<onf>.cpp` with the op's enum name (Op::attention_fwd ->
// attention_fwd/) and the variant's name without "cpu." (cpu.flash ->
// flash.cpp); its header `<onf>.hpp` when other variants build on it, its
// scalar form `<onf>_generic.hpp`. dnf.cpp is cpu.dnf, the DNF of every op.
// common/ holds what several ONFs share, each concern once.
#pragma once

namespace moacert::kernels {
class Registry;
}

namespace moacert::kernels::cpu {

void register_dnf(Registry& r);                      // dnf.cpp: cpu.dnf, every op
void register_attention_fwd_naive(Registry& r);      // attention_fwd/naive.cpp: cpu.naive
void register_attention_fwd_flash(Registry& r);      // attention_fwd/flash.cpp: cpu.flash
void register_attention_decode_split(Registry& r);   // attention_decode/split.cpp: cpu.split
void register_attention_bwd_flash_bwd(Registry& r);  // attention_bwd/flash_bwd.cpp: cpu.flash_bwd
void register_attention_fwdbwd_fused(Registry& r);   // attention_fwdbwd/fused.cpp: cpu.fused
void register_rmsnorm_fused(Registry& r);            // rmsnorm/fused.cpp: cpu.fused
void register_mlp_swiglu_tiled(Registry& r);         // mlp_swiglu/tiled.cpp: cpu.tiled
void register_block_composed(Registry& r);           // block/composed.cpp: cpu.composed

}  // namespace moacert::kernels::cpu
