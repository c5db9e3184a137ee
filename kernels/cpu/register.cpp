// The CPU variants. Each op's kernels live in their own file and add
// themselves here.
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels {

void register_dnf_kernels(Registry& r);

void register_cpu_kernels(Registry& r) {
  register_dnf_kernels(r);
  cpu::register_attention_fwd(r);
  cpu::register_attention_decode(r);
}

}  // namespace moacert::kernels
