// mlp.swiglu: two tiled GEMMs. The first computes G = x W1 and U = x W3 on
// the same 16x16 output tile (x's tile shared by both), with
// h = silu(G) * U fused into its epilogue and h kept in f32 (T, F); the
// second computes y = h W2. Tiles of the operands in shared memory,
// K-chunks of 16, tails loaded as zeros without reading memory.
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/rows_args.hpp"
#include "kernels/cuda/tiles.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

constexpr int kTile = cuda_tiles::kGemmTile;  // output tile (kTile, kTile), K-chunk kTile
constexpr int kGemmThreads = 64;              // 4 output entries per thread
constexpr int kPerThread = kTile * kTile / kGemmThreads;

__device__ __forceinline__ long long at2(const Strides2& s, int r, int c) {
  return r * s.r + c * s.c;
}

// tile (kTile, kTile) <- rows [r0, r0 + rows), columns [c0, c0 + cols) of a
// strided matrix; zero outside without reading it.
template <class T>
__device__ void load_block(float* tile, const T* g, const Strides2& s, int r0, int c0, int rows,
                           int cols) {
  for (int e = threadIdx.x; e < kTile * kTile; e += blockDim.x) {
    const int r = e / kTile, c = e % kTile;
    tile[e] = r < rows && c < cols ? to_f32(g[at2(s, r0 + r, c0 + c)]) : 0.f;
  }
}

__device__ __forceinline__ float silu(float z) {
  return z / (1.f + expf(-z));  // 0 where exp(-z) overflows: z / inf
}

// h (T, F) f32 contiguous = silu(x W1) * (x W3); grid (F tiles, T tiles).
template <class T>
__global__ void gate_up_kernel(SwiGluArgs args, float* h) {
  __shared__ float x_tile[kTile * kTile];   // (kTile rows of x, kTile of Dm)
  __shared__ float w1_tile[kTile * kTile];  // (kTile of Dm, kTile of F)
  __shared__ float w3_tile[kTile * kTile];
  const int f0 = blockIdx.x * kTile, t0 = blockIdx.y * kTile;
  const int rows = imin(kTile, args.T - t0), cols = imin(kTile, args.F - f0);
  float g[kPerThread] = {}, u[kPerThread] = {};  // entries threadIdx.x + k * kGemmThreads
  for (int k0 = 0; k0 < args.Dm; k0 += kTile) {
    const int ks = imin(kTile, args.Dm - k0);
    load_block(x_tile, static_cast<const T*>(args.x.data), args.x.s, t0, k0, rows, ks);
    load_block(w1_tile, static_cast<const T*>(args.w1.data), args.w1.s, k0, f0, ks, cols);
    load_block(w3_tile, static_cast<const T*>(args.w3.data), args.w3.s, k0, f0, ks, cols);
    __syncthreads();
    for (int k = 0; k < kPerThread; ++k) {
      const int e = threadIdx.x + k * kGemmThreads, r = e / kTile, c = e % kTile;
      for (int p = 0; p < kTile; ++p) {
        g[k] += x_tile[r * kTile + p] * w1_tile[p * kTile + c];
        u[k] += x_tile[r * kTile + p] * w3_tile[p * kTile + c];
      }
    }
    __syncthreads();  // the tiles are overwritten next
  }
  for (int k = 0; k < kPerThread; ++k) {
    const int e = threadIdx.x + k * kGemmThreads, r = e / kTile, c = e % kTile;
    if (r < rows && c < cols)
      h[static_cast<long long>(t0 + r) * args.F + f0 + c] = silu(g[k]) * u[k];
  }
}

// y (T, Dm) = h W2; grid (Dm tiles, T tiles).
template <class T>
__global__ void down_kernel(SwiGluArgs args, const float* h) {
  __shared__ float h_tile[kTile * kTile];   // (kTile rows, kTile of F)
  __shared__ float w2_tile[kTile * kTile];  // (kTile of F, kTile of Dm)
  const int c0 = blockIdx.x * kTile, t0 = blockIdx.y * kTile;
  const int rows = imin(kTile, args.T - t0), cols = imin(kTile, args.Dm - c0);
  const Strides2 hs{args.F, 1};
  float y[kPerThread] = {};
  for (int k0 = 0; k0 < args.F; k0 += kTile) {
    const int ks = imin(kTile, args.F - k0);
    load_block(h_tile, h, hs, t0, k0, rows, ks);
    load_block(w2_tile, static_cast<const T*>(args.w2.data), args.w2.s, k0, c0, ks, cols);
    __syncthreads();
    for (int k = 0; k < kPerThread; ++k) {
      const int e = threadIdx.x + k * kGemmThreads, r = e / kTile, c = e % kTile;
      for (int p = 0; p < kTile; ++p) y[k] += h_tile[r * kTile + p] * w2_tile[p * kTile + c];
    }
    __syncthreads();
  }
  T* out = static_cast<T*>(args.y.data);
  for (int k = 0; k < kPerThread; ++k) {
    const int e = threadIdx.x + k * kGemmThreads, r = e / kTile, c = e % kTile;
    if (r < rows && c < cols) out[at2(args.y.s, t0 + r, c0 + c)] = from_f32<T>(y[k]);
  }
}

}  // namespace

int launch_swiglu(const SwiGluArgs& args) {
  DeviceBuffer h(static_cast<long long>(args.T) * args.F, cuda_scratch::kHidden);
  if (h.error() != cudaSuccess) return static_cast<int>(h.error());
  const dim3 gate_grid(ceil_div(args.F, kTile), ceil_div(args.T, kTile));
  const dim3 down_grid(ceil_div(args.Dm, kTile), ceil_div(args.T, kTile));
  if (args.storage == Storage::f32) {
    MOACERT_LAUNCH((gate_up_kernel<float>), gate_grid, dim3(kGemmThreads), 0, args, h.get());
    MOACERT_LAUNCH((down_kernel<float>), down_grid, dim3(kGemmThreads), 0, args,
                   static_cast<const float*>(h.get()));
  } else {
    MOACERT_LAUNCH((gate_up_kernel<__nv_bfloat16>), gate_grid, dim3(kGemmThreads), 0, args,
                   h.get());
    MOACERT_LAUNCH((down_kernel<__nv_bfloat16>), down_grid, dim3(kGemmThreads), 0, args,
                   static_cast<const float*>(h.get()));
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
