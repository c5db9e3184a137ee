// The CPU variants, in the order `list` shows them. Each ONF's file adds
// itself (register.hpp).
#include "kernels/cpu/register.hpp"

#include "kernels/registry.hpp"

namespace moacert::kernels {

void register_cpu_kernels(Registry& r) {
  cpu::register_dnf(r);
  cpu::register_attention_fwd_naive(r);
  cpu::register_attention_fwd_flash(r);
  cpu::register_attention_decode_split(r);
  cpu::register_attention_bwd_flash_bwd(r);
  cpu::register_attention_fwdbwd_fused(r);
  cpu::register_rmsnorm_fused(r);
  cpu::register_mlp_swiglu_tiled(r);
  cpu::register_block_composed(r);
}

}  // namespace moacert::kernels
