// The barrier-only kernel of bench/simt_bench.cpp, compiled for the SIMT
// emulator. The GEMM and the softmax it times are tests/simt/kernels.cu's,
// the very kernels the tests check (built into the bench as well).
#include "moacert/simt.h"

#include "bench/simt_kernels.hpp"

namespace {

// Nothing but barriers: each is one switch per thread.
__global__ void barriers_only(int rounds) {
  for (int r = 0; r < rounds; ++r) __syncthreads();
}

}  // namespace

namespace simt_bench {

void barriers(int threads, int rounds) {
  moacert_launch(barriers_only, 1, threads, 0, rounds);
}

}  // namespace simt_bench
