// Kernels of bench/simt_bench.cpp, compiled for the SIMT emulator (with
// hazard checking: every load and store is instrumented) and, as plain host
// loops, for the slowdown (bench/simt_bench.cpp).
#include "moacert/simt.h"

#include "bench/simt_kernels.hpp"

namespace {

constexpr int kTile = 16;

// The tiled GEMM of tests/simt/kernels.cu: 16x16 = 256 threads per block.
__global__ void gemm_tiled(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[kTile][kTile + 1];  // (TILE, TILE), padded
  __shared__ float b_tile[kTile][kTile + 1];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    a_tile[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    b_tile[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += a_tile[threadIdx.y][k] * b_tile[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// One warp per row: max and sum by shuffles.
__global__ void softmax_rows(const float* x, float* y, int rows, int len) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float m = -INFINITY;
  for (int j = lane; j < len; j += 32) m = fmaxf(m, x[row * len + j]);
  for (int offset = 16; offset > 0; offset /= 2)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  float s = 0.0f;
  for (int j = lane; j < len; j += 32) s += expf(x[row * len + j] - m);
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  for (int j = lane; j < len; j += 32) y[row * len + j] = expf(x[row * len + j] - m) / s;
}

// Nothing but barriers: each is one switch per thread.
__global__ void barriers_only(int rounds) {
  for (int r = 0; r < rounds; ++r) __syncthreads();
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  cudaMalloc(&d, host.size() * sizeof(T));
  cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

}  // namespace

namespace simt_bench {

void gemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c, int n) {
  float* da = device_copy(a);
  float* db = device_copy(b);
  float* dc = nullptr;
  cudaMalloc(&dc, c.size() * sizeof(float));
  moacert_launch(gemm_tiled, dim3(n / kTile, n / kTile), dim3(kTile, kTile), 0, da, db, dc, n);
  cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}

void softmax(const std::vector<float>& x, std::vector<float>& y, int rows, int len) {
  float* dx = device_copy(x);
  float* dy = nullptr;
  cudaMalloc(&dy, y.size() * sizeof(float));
  moacert_launch(softmax_rows, (rows + 3) / 4, 128, 0, dx, dy, rows, len);
  cudaMemcpy(y.data(), dy, y.size() * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

void barriers(int threads, int rounds) {
  moacert_launch(barriers_only, 1, threads, 0, rounds);
}

}  // namespace simt_bench
