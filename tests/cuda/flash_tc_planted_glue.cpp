// The host side of the planted build of kernels/cuda/flash_tc.cu
// (libflash_tc_planted.so, namespace simt_planted): backend_glue.hpp's run,
// which test_flash_tc_planted certifies.
#define MOACERT_SIMT_UNINSTRUMENTED 1  // host glue, not kernel code
#include "kernels/cuda/cuda_compat.cuh"
// after the CUDA language
#include "kernels/cuda/backend_glue.hpp"
#include "tests/cuda/flash_tc_planted.hpp"

namespace moacert::tests {

void run_planted_flash_tc(const Problem& p, std::span<const TensorRef> in,
                          std::span<const TensorRef> out) {
  using namespace kernels::simt_planted;
  kernels::check_tensors(p, in, out);
  run_on_device("simt.flash_tc_planted", p, in, out, &fwd_tc);
}

}  // namespace moacert::tests
