// The CPU variants. Each op's kernels live in their own file and add
// themselves here.
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_kernels_rest.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels {

void register_dnf_kernels(Registry& r);

void register_cpu_kernels(Registry& r) {
  register_dnf_kernels(r);
  cpu::register_attention_fwd(r);
  cpu::register_attention_decode(r);
  cpu::register_attention_bwd(r);
  cpu::register_fwdbwd(r);
  cpu::register_rmsnorm(r);
  cpu::register_mlp(r);
  cpu::register_block(r);
}

}  // namespace moacert::kernels
