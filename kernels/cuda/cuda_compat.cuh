// What every CUDA source of kernels/cuda/ includes first: the CUDA
// language itself, from nvcc for the device or from moacert/simt.h for the
// host emulator, and the namespace its backend's symbols live in (`cuda`
// for the device build, `simt` for the emulated one), so that one binary
// links both builds of the same sources.
#pragma once

// nvcc's runtime and bf16 headers and the launch as `<<<...>>>`, or the
// host emulator (moacert/simt.h's two branches).
#include "include/moacert/simt.h"

#include <cmath>

#ifndef MOACERT_CUDA_NS
#if defined(__CUDACC__)
#define MOACERT_CUDA_NS cuda
#else
#define MOACERT_CUDA_NS simt
#endif
#endif

namespace moacert::kernels::MOACERT_CUDA_NS {
// Called after every launch with the kernel's name: the emulated backend
// keeps each launch's counters (simt_backend.cpp, for the cost-function
// laws of tests/cuda/); the device backend records nothing.
void note_launch(const char* kernel);
}  // namespace moacert::kernels::MOACERT_CUDA_NS

// moacert_launch, then note_launch. A kernel that is a template-id goes in
// parentheses, so that its commas do not split the macro's arguments:
// MOACERT_LAUNCH((kernel<T, true>), grid, block, shared_bytes, args...).
#define MOACERT_LAUNCH(kernel, grid, block, shared_bytes, ...)     \
  (moacert_launch(kernel, grid, block, shared_bytes, __VA_ARGS__), \
   ::moacert::kernels::MOACERT_CUDA_NS::note_launch(#kernel))
