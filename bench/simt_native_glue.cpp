// The native.<onf> variants of simt_native_bench: kernels/cuda/'s ONFs
// built for the host without instrumentation (module simt_native_kernels,
// bench/CMakeLists.txt), behind the same host side as the simt.* variants
// (kernels/cuda/backend_glue.hpp), so that the two differ by the
// instrumentation alone.
#define MOACERT_SIMT_UNINSTRUMENTED 1  // host glue, not kernel code
#include "kernels/cuda/cuda_compat.cuh"
// after the CUDA language
#include "kernels/cuda/backend_glue.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {

// The native launches are not the simt.* variants': the traffic law's
// launch log never sees them.
void note_launch(const char*) {}

}  // namespace moacert::kernels::MOACERT_CUDA_NS

namespace moacert::bench {

void register_native_kernels(kernels::Registry& r) {
  kernels::MOACERT_CUDA_NS::register_onfs(r, "native", "host, uninstrumented");
}

}  // namespace moacert::bench
