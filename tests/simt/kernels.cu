// Kernels of the emulator's tests (tests/simt/test_simt.cpp): correct ones
// that must run clean, and planted hazards, one per detector. Plain CUDA
// C++: nvcc compiles this file too (tests/simt/CMakeLists.txt).
#include "moacert/simt.h"
#include "tests/simt/device_buffers.cuh"

#include "tests/simt/kernels.hpp"

// ---- correct kernels ------------------------------------------------------

// Sums each block's slice of x into partial[blockIdx.x] by a tree in dynamic
// shared memory. Outside the unnamed namespace: a block-scope `extern`
// there would name an entity of that namespace, which no other translation
// unit (the arena moacert-simt-c++ defines) can define.
__global__ void block_sum(const float* x, float* partial, int n) {
  extern __shared__ float sums[];  // (blockDim.x)
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  sums[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

namespace {

constexpr int kTile = 16;

// C = A B, row-major, n a multiple of kTile; one thread per element of C.
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
    __syncthreads();  // the tiles are overwritten next
  }
  c[row * n + col] = acc;
}

__device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per row of length len: y = softmax(x).
__global__ void softmax_rows(const float* x, float* y, int rows, int len) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the whole warp: no barrier follows
  float m = -INFINITY;
  for (int j = lane; j < len; j += 32) m = fmaxf(m, x[row * len + j]);
  m = warp_max(m);
  float s = 0.0f;
  for (int j = lane; j < len; j += 32) s += expf(x[row * len + j] - m);
  s = warp_sum(s);
  for (int j = lane; j < len; j += 32) y[row * len + j] = expf(x[row * len + j] - m) / s;
}

constexpr int kBins = 16;

// Global memory in no registered buffer: counted as module data.
__device__ unsigned histogram_launches;

__global__ void histogram(const int* values, int n, unsigned* bins) {
  __shared__ unsigned local[kBins];
  if (blockIdx.x == 0 && threadIdx.x == 0) histogram_launches += 1;
  if (threadIdx.x < kBins) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[values[i] % kBins], 1u);
  __syncthreads();
  if (threadIdx.x < kBins) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// ---- planted hazards ------------------------------------------------------

// Writes a tile and reads a neighbour's element without __syncthreads.
__global__ void missing_sync(const float* x, float* y) {
  __shared__ float tile[64];
  tile[threadIdx.x] = 0.0f;
  __syncthreads();
  tile[threadIdx.x] = x[threadIdx.x];
  y[threadIdx.x] = tile[(threadIdx.x + 1) % 64];  // planted: no barrier before
}

// Reads a tile, then overwrites it for the next step with no barrier in
// between (flash-attention's backward guards this with a __syncthreads).
__global__ void write_after_read(const float* x, float* y) {
  __shared__ float tile[64];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  const float neighbour = tile[(threadIdx.x + 1) % 64];
  tile[threadIdx.x] = 2.0f * x[threadIdx.x];  // planted: others may still read
  __syncthreads();
  y[threadIdx.x] = neighbour + tile[threadIdx.x];
}

__global__ void barrier_in_branch(float* y) {
  if (threadIdx.x < 16) __syncthreads();  // planted: only a half of the block
  y[threadIdx.x] = 1.0f;
}

__global__ void barriers_differ(float* y) {
  if (threadIdx.x < 16)
    __syncthreads();  // planted: two different barriers
  else
    __syncthreads();
  y[threadIdx.x] = 1.0f;
}

__global__ void off_by_one(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + x[i + 1];  // planted: reads x[n]
}

__global__ void uninitialised_shared(float* y) {
  __shared__ float tile[64];
  if (threadIdx.x < 32) tile[threadIdx.x] = 1.0f;
  __syncthreads();
  y[threadIdx.x] = tile[threadIdx.x];  // planted: tile[32..63] never written
}

__global__ void blocks_share_output(float* y) {
  if (threadIdx.x == 0) y[0] = float(blockIdx.x);  // planted: every block writes y[0]
}

__global__ void shuffle_outside_mask(const float* x, float* y) {
  float v = x[threadIdx.x];
  if (threadIdx.x < 16) v = __shfl_sync(0x0000ffffu, v, 20);  // planted: lane 20 is not in it
  y[threadIdx.x] = v;
}

__global__ void mask_without_self(float* y) {
  if (threadIdx.x == 0) __syncwarp(0x2u);  // planted: lane 0 names lane 1 only
  y[threadIdx.x] = 1.0f;
}

__global__ void early_return(float* y) {
  if (threadIdx.x == 0) return;  // planted: thread 0 never reaches the barrier
  __syncthreads();
  y[threadIdx.x] = 1.0f;
}

__global__ void trivial(float* y) {
  y[threadIdx.x] = 0.0f;
}

// A register tile too large for a fiber's stack.
__global__ void stack_hog(float* y) {
  volatile float big[1 << 17];  // 512 KiB
  for (int i = 0; i < (1 << 17); i += 1024) big[i] = float(i);
  y[threadIdx.x] = big[threadIdx.x];
}

// ---- device memory as a GPU defines it (issue 47): each planted, and its
// correct twin in run_strict_twins.

__global__ void read_one(const float* x, float* y, int offset) {
  if (threadIdx.x == 0) y[0] = x[offset];  // planted at offset 1 of a 1-float x
}

// Host memory handed to a kernel: a static array of this module's.
float host_table[64];

__global__ void copy_vec4(const float* x, float* y, int offset) {
  // planted at offset 1: a 16-byte load at 4 bytes past a 16-byte boundary
  const float4 v = *reinterpret_cast<const float4*>(x + offset + 4 * threadIdx.x);
  reinterpret_cast<float4*>(y)[threadIdx.x] = v;
}

// A float4 copied whole is one 16-byte access (GCC splits one whose fields
// are used apart into 4-byte ones: docs/simt.md#device-memory).
__global__ void shared_vec4(float* y, int offset) {
  __shared__ float4 tile[8];  // (8 x 4 floats)
  tile[threadIdx.x] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
  __syncthreads();
  // planted at offset 1: a float4 read 4 bytes into the tile
  reinterpret_cast<float4*>(y)[threadIdx.x] =
      *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(tile) + offset);
}

// Two static __shared__ arrays; with `past` 1 (planted) the last thread
// writes one element past the first, into the red zone after it, never
// the second's values (docs/simt.md#shared-memory).
__global__ void shared_past(float* y, int past) {
  __shared__ float first[32];   // (32)
  __shared__ float second[32];  // (32)
  const unsigned i = threadIdx.x;
  first[i + (i + 1 == blockDim.x ? unsigned(past) : 0u)] = 1.0f;
  second[i] = 2.0f;
  __syncthreads();
  y[i] = first[i > 0 ? i - 1 : 0] + second[i];
}

}  // namespace

namespace simt_test {

std::vector<float> run_block_sum(const std::vector<float>& x, int threads) {
  Buffers b;
  const int n = int(x.size());
  const int blocks = (n + threads - 1) / threads;
  const float* dx = b.add(device_copy(x));
  float* partial = b.zeros<float>(std::size_t(blocks));
  moacert_launch(block_sum, blocks, threads, threads * sizeof(float), dx, partial, n);
  return host_copy(partial, std::size_t(blocks));
}

std::vector<float> run_gemm(const std::vector<float>& a, const std::vector<float>& bm, int n) {
  Buffers b;
  const float* da = b.add(device_copy(a));
  const float* db = b.add(device_copy(bm));
  float* dc = b.zeros<float>(std::size_t(n) * n);
  moacert_simt_name_buffer(da, "a");  // their traffic, per buffer, under these names
  moacert_simt_name_buffer(db, "b");
  moacert_simt_name_buffer(dc, "c");
  moacert_launch(gemm_tiled, dim3(n / kTile, n / kTile), dim3(kTile, kTile), 0, da, db, dc, n);
  return host_copy(dc, std::size_t(n) * n);
}

std::vector<float> run_softmax(const std::vector<float>& x, int rows, int len) {
  Buffers b;
  const float* dx = b.add(device_copy(x));
  float* dy = b.zeros<float>(x.size());
  const int warps_per_block = 4;
  moacert_launch(softmax_rows, (rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block,
                 0, dx, dy, rows, len);
  return host_copy(dy, x.size());
}

std::vector<unsigned> run_histogram(const std::vector<int>& values) {
  Buffers b;
  const int* dv = b.add(device_copy(values));
  unsigned* bins = b.zeros<unsigned>(kBins);
  moacert_simt_name_buffer(dv, "values");
  moacert_simt_name_buffer(bins, "bins");
  moacert_launch(histogram, 3, 64, 0, dv, int(values.size()), bins);
  return host_copy(bins, kBins);
}

void run_planted(const std::string& name) {
  Buffers b;
  std::vector<float> ones(256, 1.0f);
  const float* x = b.add(device_copy(ones));
  float* y = b.zeros<float>(256);
  if (name == "missing_sync") moacert_launch(missing_sync, 1, 64, 0, x, y);
  if (name == "write_after_read") moacert_launch(write_after_read, 1, 64, 0, x, y);
  if (name == "barrier_in_branch") moacert_launch(barrier_in_branch, 1, 64, 0, y);
  if (name == "barriers_differ") moacert_launch(barriers_differ, 1, 64, 0, y);
  if (name == "off_by_one") {
    std::vector<float> small(64, 1.0f);
    const float* xs = b.add(device_copy(small));
    moacert_launch(off_by_one, 2, 32, 0, xs, y, 64);
  }
  if (name == "uninitialised_shared") moacert_launch(uninitialised_shared, 1, 64, 0, y);
  if (name == "blocks_share_output") moacert_launch(blocks_share_output, 4, 32, 0, y);
  if (name == "shuffle_outside_mask") moacert_launch(shuffle_outside_mask, 1, 32, 0, x, y);
  if (name == "mask_without_self") moacert_launch(mask_without_self, 1, 32, 0, y);
  if (name == "early_return") moacert_launch(early_return, 1, 64, 0, y);
  if (name == "block_1025") moacert_launch(trivial, 1, 1025, 0, y);
  if (name == "zero_grid") moacert_launch(trivial, 0, 32, 0, y);
  if (name == "negative_grid") moacert_launch(trivial, dim3(unsigned(-1)), 32, 0, y);
  if (name == "too_much_shared") moacert_launch(block_sum, 1, 32, 64 * 1024, x, y, 32);
  if (name == "stack_overflow") moacert_launch(stack_hog, 1, 32, 0, y);
  if (name == "read_past_small_input") {
    const float* one = b.add(device_copy(std::vector<float>{1.0f}));
    moacert_simt_name_buffer(one, "x");
    moacert_launch(read_one, 1, 32, 0, one, y, 1);
  }
  if (name == "heap_host_memory") {
    const std::vector<float> host(64, 1.0f);  // planted: host memory, never copied
    moacert_launch(read_one, 1, 32, 0, host.data(), y, 0);
  }
  if (name == "static_host_memory") moacert_launch(read_one, 1, 32, 0, host_table, y, 3);
  if (name == "misaligned_global") moacert_launch(copy_vec4, 1, 8, 0, x, y, 1);
  if (name == "misaligned_shared") moacert_launch(shared_vec4, 1, 8, 0, y, 1);
  // planted: 32 threads write 32 floats, the launch gives 16 (64 bytes)
  if (name == "past_dynamic_shared") moacert_launch(block_sum, 1, 32, 16 * sizeof(float), x, y, 32);
  if (name == "past_static_shared") moacert_launch(shared_past, 1, 32, 0, y, 1);
}

std::vector<float> run_strict_twins() {
  Buffers b;
  std::vector<float> ones(256, 1.0f);
  const float* x = b.add(device_copy(ones));
  const float* one = b.add(device_copy(std::vector<float>{1.0f}));
  float* y = b.zeros<float>(256);
  std::vector<float> out;
  moacert_launch(read_one, 1, 32, 0, one, y, 0);  // the last float of a 1-float x
  out.push_back(host_copy(y, 1)[0]);
  moacert_launch(copy_vec4, 1, 8, 0, x, y, 0);  // aligned float4 loads
  out.push_back(host_copy(y, 32)[31]);
  moacert_launch(shared_vec4, 1, 8, 0, y, 4);  // an aligned float4 of the tile
  out.push_back(host_copy(y, 4)[3]);
  moacert_launch(block_sum, 1, 32, 32 * sizeof(float), x, y, 32);  // shared_bytes enough
  out.push_back(host_copy(y, 1)[0]);
  moacert_launch(shared_past, 1, 32, 0, y, 0);  // each array within its own extent
  out.push_back(host_copy(y, 1)[0]);
  return out;
}

}  // namespace simt_test
