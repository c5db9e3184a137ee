// rmsnorm: one block per row. The sum of squares in f32 (each thread over
// its strided share of the row, then the warps' partial sums by shuffles and
// the block's through shared memory, in a fixed order), then
// y_d = x_d * (1 / sqrt(s / D + eps)) * w_d: a correctly rounded sqrt and
// division, not rsqrtf (docs/bounds.md#rmsnorm allows an rsqrt only refined
// to within 2 u).
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/rows_args.hpp"
#include "kernels/cuda/tiles.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

using cuda_tiles::kRmsThreads;  // threads striding a row's D (kernels/cuda/tiles.hpp)

__device__ __forceinline__ long long at2(const Strides2& s, int r, int c) {
  return r * s.r + c * s.c;
}

// The block's sum of v (every thread's value), the same in every thread.
__device__ float block_sum(float v, float* partial /* (kRmsThreads / 32) */) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float sum = 0.f;
  for (int w = 0; w < kRmsThreads / 32; ++w) sum += partial[w];
  return sum;
}

template <class T>
__global__ void rmsnorm_kernel(RmsNormArgs args) {
  __shared__ float partial[kRmsThreads / 32];
  const int t = blockIdx.x;
  const T* x = static_cast<const T*>(args.x.data);
  const T* w = static_cast<const T*>(args.w.data);
  T* y = static_cast<T*>(args.y.data);
  float squares = 0.f;
  for (int d = threadIdx.x; d < args.D; d += blockDim.x) {
    const float xd = to_f32(x[at2(args.x.s, t, d)]);
    squares += xd * xd;
  }
  const float s = block_sum(squares, partial);
  const float inv_rms = 1.f / sqrtf(s / static_cast<float>(args.D) + args.eps);
  for (int d = threadIdx.x; d < args.D; d += blockDim.x)
    y[at2(args.y.s, t, d)] =
        from_f32<T>(to_f32(x[at2(args.x.s, t, d)]) * inv_rms * to_f32(w[d * args.w.s]));
}

}  // namespace

int launch_rmsnorm(const RmsNormArgs& args) {
  if (args.storage == Storage::f32) {
    MOACERT_LAUNCH((rmsnorm_kernel<float>), dim3(args.T), dim3(kRmsThreads), 0, args);
  } else {
    MOACERT_LAUNCH((rmsnorm_kernel<__nv_bfloat16>), dim3(args.T), dim3(kRmsThreads), 0, args);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
