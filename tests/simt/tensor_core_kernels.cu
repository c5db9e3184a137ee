// Tensor-core kernels for the emulator's tests (test_tensor_core.cpp): one
// warp's mma.m16n8k16 with its fragments gathered from global memory by the
// PTX ISA's layouts, ldmatrix into registers, the two composed, and the
// planted hazards of tensor-core code. Builds for the device with nvcc too.
#include <cstdint>
#include <string>
#include <vector>

#include "moacert/simt.h"
#include "moacert/tensor_core.h"
#include "tests/simt/device_buffers.cuh"
#include "tests/simt/tensor_core_kernels.hpp"

// The dynamic shared tile of ldmatrix_past_tile (outside the unnamed
// namespace: docs/simt.md#what-is-supported), 16-byte aligned as on the device.
extern __shared__ std::uint16_t stage[];

namespace {

using std::uint16_t;
using std::uint32_t;

// Two b16 elements in one register, the lower index in the lower half.
__device__ __forceinline__ uint32_t pack(uint16_t lo, uint16_t hi) {
  return uint32_t(lo) | uint32_t(hi) << 16;
}

// D = A B + C for A 16x16 (row-major), B 16x8 (B[k][n], row-major), C and D
// 16x8 f32, one warp; the fragments by the PTX ISA's tables
// (groupID g = lane / 4, threadID_in_group t = lane % 4).
__global__ void mma_tile(const uint16_t* a, const uint16_t* b, const float* c, float* d, int f16) {
  const int g = int(threadIdx.x) / 4, t = int(threadIdx.x) % 4;
  uint32_t fa[4], fb[2];
  float fc[4], fd[4];
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r & 1), col = 2 * t + 8 * (r >> 1);
    fa[r] = pack(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (int r = 0; r < 2; ++r) {
    const int k = 2 * t + 8 * r;
    fb[r] = pack(b[k * 8 + g], b[(k + 1) * 8 + g]);
  }
  for (int i = 0; i < 4; ++i) fc[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
  if (f16)
    moacert::tc::mma_m16n8k16_f16(fd, fa, fb, fc);
  else
    moacert::tc::mma_m16n8k16_bf16(fd, fa, fb, fc);
  for (int i = 0; i < 4; ++i) d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = fd[i];
}

// A 16x16 b16 tile through shared memory into registers with ldmatrix
// .x{N}[.trans]: lane l gives the address of row l % 8 of matrix l / 8,
// matrix m being the 8x8 block (m % 2, m / 2) of the tile (rows, columns):
// with N = 4 and no .trans, the registers are mma's A fragment.
template <int N, bool Trans>
__global__ void ldmatrix_tile(const uint16_t* tile, uint32_t* out) {
  __align__(16) __shared__ uint16_t s[16 * 16];
  const int lane = int(threadIdx.x);
  for (int i = lane; i < 256; i += 32) s[i] = tile[i];
  __syncthreads();
  const int m = (lane / 8) % N, row = 8 * (m % 2) + lane % 8, col = 8 * (m / 2);
  uint32_t r[N];
  moacert::tc::ldmatrix<N, Trans>(r, &s[row * 16 + col]);
  for (int i = 0; i < N; ++i) out[lane * N + i] = r[i];
}

// D = A B + C with A and B staged in shared memory by two warps and loaded
// with ldmatrix (.x4 for A; .x2.trans for B, stored B[k][n]), warp 0 doing
// the mma.
__global__ void ldmatrix_mma(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  __align__(16) __shared__ uint16_t sa[16 * 16];
  __align__(16) __shared__ uint16_t sb[16 * 8];
  const int tid = int(threadIdx.x);
  for (int i = tid; i < 256; i += 64) sa[i] = a[i];
  for (int i = tid; i < 128; i += 64) sb[i] = b[i];
  __syncthreads();
  if (tid >= 32) return;
  const int lane = tid, g = lane / 4, t = lane % 4;
  const int m = lane / 8;
  uint32_t fa[4], fb[2];
  moacert::tc::ldmatrix<4>(fa, &sa[(8 * (m % 2) + lane % 8) * 16 + 8 * (m / 2)]);
  moacert::tc::ldmatrix<2, true>(fb, &sb[(lane % 16) * 8]);
  float fc[4], fd[4];
  for (int i = 0; i < 4; ++i) fc[i] = c[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
  moacert::tc::mma_m16n8k16_bf16(fd, fa, fb, fc);
  for (int i = 0; i < 4; ++i) d[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = fd[i];
}

// ---- planted hazards ------------------------------------------------------
// Half the warp reaches the mma at another line: .aligned is violated.
__global__ void mma_divergent(float* d) {
  const uint32_t fa[4] = {}, fb[2] = {};
  const float fc[4] = {};
  float fd[4];
  if (threadIdx.x < 16)
    moacert::tc::mma_m16n8k16_bf16(fd, fa, fb, fc);
  else
    moacert::tc::mma_m16n8k16_bf16(fd, fa, fb, fc);
  d[threadIdx.x] = fd[0];
}

// Lane 31 has returned when the others reach the mma.
__global__ void mma_lane_exited(float* d) {
  if (threadIdx.x == 31) return;
  const uint32_t fa[4] = {}, fb[2] = {};
  const float fc[4] = {};
  float fd[4];
  moacert::tc::mma_m16n8k16_bf16(fd, fa, fb, fc);
  d[threadIdx.x] = fd[0];
}

// The tile is 16 rows of 16 b16 in 512 bytes of dynamic shared memory; the
// rows are off by 8 (a wrong stage offset), so the last matrix's rows lie
// past the tile.
__global__ void ldmatrix_past_tile(uint32_t* out) {
  const int lane = int(threadIdx.x);
  for (int i = lane; i < 256; i += 32) stage[i] = uint16_t(i);
  __syncwarp();
  const int m = lane / 8, row = 8 + 8 * (m % 2) + lane % 8, col = 8 * (m / 2);
  uint32_t r[4];
  moacert::tc::ldmatrix<4>(r, &stage[row * 16 + col]);
  out[lane] = r[0];
}

// Lane rows at an odd b16 offset: not 16-byte aligned.
__global__ void ldmatrix_misaligned(uint32_t* out) {
  __align__(16) __shared__ uint16_t s[16 * 16 + 8];
  const int lane = int(threadIdx.x);
  for (int i = lane; i < 16 * 16 + 8; i += 32) s[i] = uint16_t(i);
  __syncwarp();
  uint32_t r[1];
  moacert::tc::ldmatrix<1>(r, &s[(lane % 8) * 16 + 1]);
  out[lane] = r[0];
}

// A pipeline without the barrier between two stages: after the first
// stage (a cleared tile, then a barrier), warp 1 stages the next tile while
// warp 0 reads the buffer with ldmatrix in the same barrier interval.
__global__ void pipeline_missing_barrier(const uint16_t* tile, uint32_t* out) {
  __align__(16) __shared__ uint16_t s[16 * 16];
  const int tid = int(threadIdx.x);
  for (int i = tid; i < 256; i += 64) s[i] = 0;
  __syncthreads();
  if (tid >= 32) {
    for (int i = tid - 32; i < 256; i += 32) s[i] = tile[i];
    return;
  }
  // (the __syncthreads that belongs here is missing)
  const int m = tid / 8;
  uint32_t r[4];
  moacert::tc::ldmatrix<4>(r, &s[(8 * (m % 2) + tid % 8) * 16 + 8 * (m / 2)]);
  out[tid] = r[0];
}

// ---- cp.async: a double-buffered pipeline of `stages` tiles of 64 x 4
// floats, each thread copying its 16 bytes per stage (in copies of `Bytes`
// with .ca, or one .cg), and adding, per stage, an element another thread
// copied.
template <int Bytes, bool CacheGlobal>
__device__ void issue_stage(float* dst, const float* src) {
  if constexpr (CacheGlobal)
    moacert::tc::cp_async_cg(dst, src);
  else
    for (int b = 0; b < 16; b += Bytes) moacert::tc::cp_async_ca<Bytes>(dst + b / 4, src + b / 4);
  moacert::tc::cp_async_commit_group();
}

template <int Bytes, bool CacheGlobal>
__global__ void async_pipeline(const float* x, float* y, int stages) {
  __align__(16) __shared__ float buf[2][64 * 4];
  const int tid = int(threadIdx.x);
  issue_stage<Bytes, CacheGlobal>(&buf[0][tid * 4], &x[tid * 4]);
  float acc = 0.0f;
  for (int s = 0; s < stages; ++s) {
    if (s + 1 < stages)
      issue_stage<Bytes, CacheGlobal>(&buf[(s + 1) % 2][tid * 4], &x[(s + 1) * 256 + tid * 4]);
    else
      moacert::tc::cp_async_commit_group();  // an empty group: wait_group<1> below stays right
    moacert::tc::cp_async_wait_group<1>();   // stage s has landed
    __syncthreads();
    acc += buf[s % 2][(tid * 4 + 5) % 256];
    __syncthreads();  // everyone has read stage s before it is overwritten
  }
  y[tid] = acc;
}

// Planted: the thread reads its destination before waiting for it.
__global__ void async_read_before_wait(const float* x, float* y) {
  __align__(16) __shared__ float buf[64 * 4];
  const int tid = int(threadIdx.x);
  moacert::tc::cp_async_cg(&buf[tid * 4], &x[tid * 4]);
  moacert::tc::cp_async_commit_group();
  y[tid] = buf[tid * 4];  // (cp_async_wait_group<0>() belongs before this)
  moacert::tc::cp_async_wait_group<0>();
}

// Planted: the thread writes the source of its copy while it is in flight.
__global__ void async_source_written(float* x, float* y) {
  __align__(16) __shared__ float buf[64 * 4];
  const int tid = int(threadIdx.x);
  moacert::tc::cp_async_ca<16>(&buf[tid * 4], &x[tid * 4]);
  moacert::tc::cp_async_commit_group();
  x[tid * 4] = 0.0f;  // the copy may still read it
  moacert::tc::cp_async_wait_group<0>();
  __syncthreads();
  y[tid] = buf[tid * 4];
}

// Planted: the pipeline without its trailing barrier: stage s + 1 is issued
// into the buffer other threads may still be reading for stage s - 1.
__global__ void async_double_buffer_overwritten(const float* x, float* y, int stages) {
  __align__(16) __shared__ float buf[2][64 * 4];
  const int tid = int(threadIdx.x);
  issue_stage<16, true>(&buf[0][tid * 4], &x[tid * 4]);
  float acc = 0.0f;
  for (int s = 0; s < stages; ++s) {
    if (s + 1 < stages)
      issue_stage<16, true>(&buf[(s + 1) % 2][tid * 4], &x[(s + 1) * 256 + tid * 4]);
    else
      moacert::tc::cp_async_commit_group();
    moacert::tc::cp_async_wait_group<1>();
    __syncthreads();
    acc += buf[s % 2][(tid * 4 + 5) % 256];
    // (the __syncthreads that belongs here is missing)
  }
  y[tid] = acc;
}

// Planted: the barrier between the stages comes before the wait, so the
// tile lands after it and other threads read it unordered.
__global__ void async_wait_after_barrier(const float* x, float* y) {
  __align__(16) __shared__ float buf[64 * 4];
  const int tid = int(threadIdx.x);
  moacert::tc::cp_async_cg(&buf[tid * 4], &x[tid * 4]);
  moacert::tc::cp_async_commit_group();
  __syncthreads();
  moacert::tc::cp_async_wait_group<0>();
  y[tid] = buf[(tid * 4 + 5) % 256];
}

}  // namespace

namespace simt_test {

std::vector<float> run_mma(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                           const std::vector<float>& c, bool f16) {
  Buffers m;
  float* d = m.zeros<float>(16 * 8);
  moacert_launch(mma_tile, 1, 32, 0, m.add(device_copy(a)), m.add(device_copy(b)),
                 m.add(device_copy(c)), d, int(f16));
  return host_copy(d, 16 * 8);
}

std::vector<uint32_t> run_ldmatrix(const std::vector<uint16_t>& tile, int count, bool trans) {
  Buffers m;
  uint32_t* out = m.zeros<uint32_t>(32 * std::size_t(count));
  const uint16_t* t = m.add(device_copy(tile));
  if (count == 1 && !trans) moacert_launch((ldmatrix_tile<1, false>), 1, 32, 0, t, out);
  if (count == 2 && !trans) moacert_launch((ldmatrix_tile<2, false>), 1, 32, 0, t, out);
  if (count == 4 && !trans) moacert_launch((ldmatrix_tile<4, false>), 1, 32, 0, t, out);
  if (count == 1 && trans) moacert_launch((ldmatrix_tile<1, true>), 1, 32, 0, t, out);
  if (count == 2 && trans) moacert_launch((ldmatrix_tile<2, true>), 1, 32, 0, t, out);
  if (count == 4 && trans) moacert_launch((ldmatrix_tile<4, true>), 1, 32, 0, t, out);
  return host_copy(out, 32 * std::size_t(count));
}

std::vector<float> run_ldmatrix_mma(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                                    const std::vector<float>& c) {
  Buffers m;
  float* d = m.zeros<float>(16 * 8);
  moacert_launch(ldmatrix_mma, 1, 64, 0, m.add(device_copy(a)), m.add(device_copy(b)),
                 m.add(device_copy(c)), d);
  return host_copy(d, 16 * 8);
}

std::vector<float> run_async_pipeline(const std::vector<float>& x, int bytes, bool cache_global) {
  Buffers m;
  const float* dx = m.add(device_copy(x));
  float* y = m.zeros<float>(64);
  const int stages = int(x.size() / 256);
  if (cache_global) moacert_launch((async_pipeline<16, true>), 1, 64, 0, dx, y, stages);
  if (!cache_global && bytes == 4)
    moacert_launch((async_pipeline<4, false>), 1, 64, 0, dx, y, stages);
  if (!cache_global && bytes == 8)
    moacert_launch((async_pipeline<8, false>), 1, 64, 0, dx, y, stages);
  if (!cache_global && bytes == 16)
    moacert_launch((async_pipeline<16, false>), 1, 64, 0, dx, y, stages);
  return host_copy(y, 64);
}

void run_tensor_core_planted(const std::string& name) {
  Buffers m;
  float* d = m.zeros<float>(64);
  uint32_t* out = m.zeros<uint32_t>(64);
  const uint16_t* tile = m.add(device_copy(std::vector<uint16_t>(256, 0x3f80)));
  if (name == "mma_divergent") moacert_launch(mma_divergent, 1, 32, 0, d);
  if (name == "mma_lane_exited") moacert_launch(mma_lane_exited, 1, 32, 0, d);
  if (name == "ldmatrix_past_tile") moacert_launch(ldmatrix_past_tile, 1, 32, 512, out);
  if (name == "ldmatrix_misaligned") moacert_launch(ldmatrix_misaligned, 1, 32, 0, out);
  float* x = m.add(device_copy(std::vector<float>(4 * 256, 1.0f)));
  if (name == "async_read_before_wait") moacert_launch(async_read_before_wait, 1, 64, 0, x, d);
  if (name == "async_source_written") moacert_launch(async_source_written, 1, 64, 0, x, d);
  if (name == "async_double_buffer_overwritten")
    moacert_launch(async_double_buffer_overwritten, 1, 64, 0, x, d, 4);
  if (name == "async_wait_after_barrier") moacert_launch(async_wait_after_barrier, 1, 64, 0, x, d);
  if (name == "pipeline_missing_barrier")
    moacert_launch(pipeline_missing_barrier, 1, 64, 0, tile, out);
}

}  // namespace simt_test
