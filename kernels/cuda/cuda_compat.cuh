// What every CUDA source of kernels/cuda/ includes first: the CUDA
// language itself, from nvcc for the device or from moacert/simt.h for the
// host emulator, and the namespace its backend's symbols live in (`cuda`
// for the device build, `simt` for the emulated one), so that one binary
// links both builds of the same sources.
#pragma once

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#ifndef moacert_launch
// The launch: the one concession of user code to the emulator
// (docs/simt.md); under nvcc, the triple-chevron launch.
#define moacert_launch(kernel, grid, block, shared_bytes, ...) \
  kernel<<<(grid), (block), (shared_bytes)>>>(__VA_ARGS__)
#endif
#else
#include "moacert/simt.h"
#endif

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
