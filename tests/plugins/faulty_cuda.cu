// A CUDA plugin (rmsnorm, f32) for the SIMT emulator with one planted
// fault, chosen by a macro (tests/plugins/CMakeLists.txt):
//   FAULT_RACE   the block's sum of squares is read before the barrier
//                that orders it: a shared race, a counterexample
//   FAULT_STACK  a register array too large for a fiber's stack: the
//                worker dies, and the emulator's message names the kernel
//   FAULT_NONE   correct (row-major tensors: accepts_strided = 0)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "moacert/plugin.h"
#include "moacert/simt.h"

namespace {

constexpr int THREADS = 32;

__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, int D, long long xs,
                               long long ys, long long ws, float eps) {
  __shared__ float partial[THREADS];  // (THREADS)
  const int t = blockIdx.x;
  float ss = 0.0f;
  for (int d = threadIdx.x; d < D; d += THREADS) {
    const float v = x[t * xs + d];
    ss += v * v;
  }
#if defined(FAULT_RACE)
  // Written once before, so that the planted race is a race in every
  // schedule (not, when a reader runs first, an uninitialised read).
  partial[threadIdx.x] = 0.0f;
  __syncthreads();
  partial[threadIdx.x] = ss;  // planted: no barrier between this and the reads
#else
  partial[threadIdx.x] = ss;
  __syncthreads();
#endif
  float total = 0.0f;
  for (int k = 0; k < THREADS; ++k) total += partial[k];
#if defined(FAULT_STACK)
  volatile float spill[1 << 17];  // 512 KiB: beyond the 256 KiB fiber stack
  for (int k = 0; k < (1 << 17); k += 512) spill[k] = total;
  total = spill[threadIdx.x];
#endif
  const float r = rsqrtf(total / float(D) + eps);
  for (int d = threadIdx.x; d < D; d += THREADS) y[t * ys + d] = x[t * xs + d] * r * w[d * ws];
}

int rmsnorm_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                const char* params, char* err, std::size_t err_len) {
  if (n_in != 2 || n_out != 1) {
    std::snprintf(err, err_len, "rmsnorm: expected 2 inputs and 1 output");
    return 1;
  }
  const DLTensor *x = in[0], *w = in[1];  // row-major contiguous (accepts_strided = 0)
  DLTensor* y = out[0];
  const char* at = std::strstr(params, "\"eps\":");
  const float eps = at ? float(std::strtod(at + 6, nullptr)) : 1e-6f;
  const int T = int(x->shape[0]), D = int(x->shape[1]);
  if (T == 0) return 0;
  try {
    moacert_launch(rmsnorm_kernel, T, THREADS, 0, static_cast<const float*>(x->data),
                   static_cast<const float*>(w->data), static_cast<float*>(y->data), D,
                   (long long)x->strides[0], (long long)y->strides[0], (long long)w->strides[0],
                   eps);
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
  return 0;
}

const moacert_kernel kernels[] = {{"rmsnorm", "rmsnorm_cuda", "f32", 0, rmsnorm_f32}};

}  // namespace

extern "C" const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = 1;
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
