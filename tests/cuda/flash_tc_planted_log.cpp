// The planted flash_tc's launch log (kernels/cuda/cuda_compat.cuh): none. Its
// launches are not the simt.* variants', whose laws the traffic law checks.
#define MOACERT_SIMT_UNINSTRUMENTED 1  // host glue, not kernel code
#include "kernels/cuda/cuda_compat.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

void note_launch(const char*) {}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
