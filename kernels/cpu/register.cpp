// The CPU variants, in the order `list` shows them. Each ONF's file adds
// itself (register.hpp).
#include "kernels/cpu/register.hpp"

#include "kernels/registry.hpp"

namespace moacert::kernels {

void register_cpu_kernels(Registry& r) {
  Registry cpu;
  cpu::register_dnf(cpu);
  cpu::register_attention_fwd_naive(cpu);
  cpu::register_attention_fwd_flash(cpu);
  cpu::register_attention_decode_split(cpu);
  cpu::register_attention_bwd_flash_bwd(cpu);
  cpu::register_attention_fwdbwd_fused(cpu);
  cpu::register_rmsnorm_fused(cpu);
  cpu::register_mlp_swiglu_tiled(cpu);
  cpu::register_block_composed(cpu);
  // Each runs in this process on OpenMP threads, keeping nothing between
  // calls (Variant::host_threads).
  for (Variant v : cpu.all()) {
    v.host_threads = true;
    r.add(std::move(v));
  }
}

}  // namespace moacert::kernels
