// An example moacert plugin in CUDA C++ (docs/simt.md): attention.fwd in
// f32, tiled like a flash-attention forward. Each block owns BLOCK_M query
// rows of one (batch, head); K and V tiles of BLOCK_N keys go through
// shared memory; a row is held by a group of GROUP lanes that split the
// head dimension, reduce their partial dot products with warp shuffles,
// and keep an online softmax (running max, running sum, rescaled output).
//
// The same source builds for a GPU with nvcc and, without one, for moacert's
// SIMT emulator, where every access is checked for races and bounds:
//   nvcc -std=c++20 -arch=sm_90 -shared -Xcompiler -fPIC -I<prefix>/include
//        attention_fwd.cu -o libattention_cuda.so          (for a GPU)
//   moacert-simt-c++ -shared -fPIC attention_fwd.cu -o libattention_cuda.so
//   moacert certify attention.fwd --plugin ./libattention_cuda.so#attention_hd --dtype f32
// (in CMake: moacert_add_simt_plugin, examples/plugins/CMakeLists.txt).
//
// #attention_hd declares device "cuda": moacert hands it device tensors
// (kDLCUDA, docs/plugins.md#device-tensors), on the GPU or in the
// emulator's device memory, and checks the guards around them and its
// inputs after each call. #attention_cuda declares nothing (ABI 1's
// defaults: host tensors), which only the emulator can run.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "moacert/plugin.h"
#include "moacert/simt.h"

namespace {

constexpr int BLOCK_M = 16;              // query rows per block
constexpr int BLOCK_N = 16;              // keys per shared tile
constexpr int GROUP = 4;                 // lanes per query row
constexpr int MAX_D = 128;               // head dimension held in registers
constexpr int PER_LANE = MAX_D / GROUP;  // elements of a row's output per lane
constexpr int THREADS = BLOCK_M * GROUP;

struct Strides4 {
  std::int64_t s[4];
};
struct Strides3 {
  std::int64_t s[3];
};

struct Problem {
  int B, H, Hkv, N, M, D;
  float scale;
  bool causal;
  const float *q, *k, *v;  // (B, H, N, D), (B, Hkv, M, D), (B, Hkv, M, D)
  float *o, *lse;          // (B, H, N, D), (B, H, N)
  Strides4 q_st, k_st, v_st, o_st;
  Strides3 lse_st;
};

__device__ __forceinline__ int clamp_to(int x, int lo, int hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// The sum over the GROUP lanes of a row (lanes 4r..4r+3 of a warp), known to
// all of them.
__device__ __forceinline__ float group_sum(float partial, unsigned group_mask) {
  for (int offset = GROUP / 2; offset > 0; offset /= 2)
    partial += __shfl_xor_sync(group_mask, partial, offset, GROUP);
  return partial;
}

__global__ void attention_fwd_kernel(Problem p) {
  __shared__ float k_tile[BLOCK_N][MAX_D];  // (BLOCK_N, D)
  __shared__ float v_tile[BLOCK_N][MAX_D];  // (BLOCK_N, D)

  const int b = blockIdx.z, h = blockIdx.y;
  const int g = h / (p.H / p.Hkv);  // GQA: the key/value head of query head h
  const int row_in_block = threadIdx.x / GROUP;
  const int part = threadIdx.x % GROUP;  // this lane's d = part, part + GROUP, ...
  const int i = blockIdx.x * BLOCK_M + row_in_block;
  const unsigned group_mask = 0xfu << ((threadIdx.x % 32) / GROUP * GROUP);
  const bool row_exists = i < p.N;

  // Causal, bottom-right aligned: query i sees key j iff j <= i + (M - N).
  const int visible = !p.causal ? p.M : clamp_to(i + (p.M - p.N) + 1, 0, p.M);

  float q_reg[PER_LANE];  // (D / GROUP): this lane's slice of q_i, pre-scaled
  float acc[PER_LANE];    // (D / GROUP): its slice of the unnormalised output
  for (int t = 0; t < PER_LANE; ++t) {
    const int d = part + t * GROUP;
    q_reg[t] =
        row_exists && d < p.D
            ? p.scale * p.q[b * p.q_st.s[0] + h * p.q_st.s[1] + i * p.q_st.s[2] + d * p.q_st.s[3]]
            : 0.0f;
    acc[t] = 0.0f;
  }
  float row_max = -INFINITY, row_sum = 0.0f;

  for (int j0 = 0; j0 < p.M; j0 += BLOCK_N) {
    const int tile_keys = clamp_to(p.M - j0, 0, BLOCK_N);
    // load: the block's threads copy the K and V tiles
    for (int e = threadIdx.x; e < tile_keys * p.D; e += THREADS) {
      const int j = e / p.D, d = e % p.D;
      k_tile[j][d] =
          p.k[b * p.k_st.s[0] + g * p.k_st.s[1] + (j0 + j) * p.k_st.s[2] + d * p.k_st.s[3]];
      v_tile[j][d] =
          p.v[b * p.v_st.s[0] + g * p.v_st.s[1] + (j0 + j) * p.v_st.s[2] + d * p.v_st.s[3]];
    }
    __syncthreads();
    const int row_keys = clamp_to(visible - j0, 0, tile_keys);  // this row's visible keys here
    for (int j = 0; j < row_keys; ++j) {
      // score: the group's dot product, reduced by shuffles
      float partial = 0.0f;
      for (int t = 0; t < PER_LANE; ++t) {
        const int d = part + t * GROUP;
        if (d < p.D) partial += q_reg[t] * k_tile[j][d];
      }
      const float score = group_sum(partial, group_mask);
      // online softmax: rescale what was summed under the old maximum
      const float new_max = fmaxf(row_max, score);
      const float rescale = expf(row_max - new_max);  // row_max = -inf: 0
      const float weight = expf(score - new_max);
      row_sum = row_sum * rescale + weight;
      for (int t = 0; t < PER_LANE; ++t) {
        const int d = part + t * GROUP;
        if (d < p.D) acc[t] = acc[t] * rescale + weight * v_tile[j][d];
      }
      row_max = new_max;
    }
    __syncthreads();  // the tiles are overwritten by the next load
  }

  if (!row_exists) return;
  const std::int64_t o_row = b * p.o_st.s[0] + h * p.o_st.s[1] + i * p.o_st.s[2];
  if (row_sum == 0.0f) {  // a row that sees no key: o = 0, lse = -inf
    for (int t = 0; t < PER_LANE; ++t)
      if (part + t * GROUP < p.D) p.o[o_row + (part + t * GROUP) * p.o_st.s[3]] = 0.0f;
    if (part == 0) p.lse[b * p.lse_st.s[0] + h * p.lse_st.s[1] + i * p.lse_st.s[2]] = -INFINITY;
    return;
  }
  for (int t = 0; t < PER_LANE; ++t)
    if (part + t * GROUP < p.D) p.o[o_row + (part + t * GROUP) * p.o_st.s[3]] = acc[t] / row_sum;
  if (part == 0)
    p.lse[b * p.lse_st.s[0] + h * p.lse_st.s[1] + i * p.lse_st.s[2]] = row_max + logf(row_sum);
}

// A number after "key": in the params JSON, or `fallback`.
double param(const char* json, const char* key, double fallback) {
  char pattern[64];
  std::snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char* at = std::strstr(json, pattern);
  return at ? std::strtod(at + std::strlen(pattern), nullptr) : fallback;
}
// The stream moacert hands a `cuda` kernel ("stream": its address; absent
// or 0: the default stream).
void* stream_of(const char* json) {
  const char* at = std::strstr(json, "\"stream\":");
  return at ? reinterpret_cast<void*>(std::uintptr_t(std::strtoull(at + 9, nullptr, 10))) : nullptr;
}
bool flag(const char* json, const char* key) {
  char pattern[64];
  std::snprintf(pattern, sizeof pattern, "\"%s\":true", key);
  return std::strstr(json, pattern) != nullptr;
}

template <int R, class S>
S strides_of(const DLTensor* t) {
  S s{};
  for (int k = 0; k < R; ++k) s.s[k] = t->strides ? t->strides[k] : 0;
  return s;
}

int attention_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                  const char* params, char* err, std::size_t err_len) {
  if (n_in != 3 || n_out != 2) {
    std::snprintf(err, err_len, "attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2];
  Problem p{};
  p.B = int(q->shape[0]);
  p.H = int(q->shape[1]);
  p.N = int(q->shape[2]);
  p.D = int(q->shape[3]);
  p.Hkv = int(k->shape[1]);
  p.M = int(k->shape[2]);
  if (p.D > MAX_D) {
    std::snprintf(err, err_len, "attention.fwd: D = %d above this kernel's %d", p.D, MAX_D);
    return 1;
  }
  p.scale = float(param(params, "scale", 1.0 / std::sqrt(double(p.D))));
  p.causal = flag(params, "causal");
  p.q = static_cast<const float*>(q->data);
  p.k = static_cast<const float*>(k->data);
  p.v = static_cast<const float*>(v->data);
  p.o = static_cast<float*>(out[0]->data);
  p.lse = static_cast<float*>(out[1]->data);
  p.q_st = strides_of<4, Strides4>(q);
  p.k_st = strides_of<4, Strides4>(k);
  p.v_st = strides_of<4, Strides4>(v);
  p.o_st = strides_of<4, Strides4>(out[0]);
  p.lse_st = strides_of<3, Strides3>(out[1]);
  if (p.B == 0 || p.H == 0 || p.N == 0) return 0;  // nothing to compute
  // On the stream moacert hands (host tensors: the default one, synchronised
  // here; device tensors: moacert synchronises the stream after the call
  // and times the launches on it, so the kernel does not wait for them).
  const bool on_device = q->device.device_type == kDLCUDA;
  try {
    const dim3 grid((p.N + BLOCK_M - 1) / BLOCK_M, p.H, p.B);
    moacert_launch_on(attention_fwd_kernel, grid, THREADS, 0, stream_of(params), p);
  } catch (const std::exception& e) {  // a hazard: the worker reports it too
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
  const cudaError_t e = on_device ? cudaGetLastError() : cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::snprintf(err, err_len, "attention.fwd: %s", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}

// The same kernel as deployed for two head widths alone (plugin ABI 2):
// it declares D in {64, 128}, so certify draws no other D, and refuses
// any other D it is handed (MOACERT_UNSUPPORTED).
int attention_hd_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                     const char* params, char* err, std::size_t err_len) {
  for (int t = 0; t < n_in + n_out; ++t)
    if ((t < n_in ? in[t] : out[t - n_in])->device.device_type != kDLCUDA) {
      std::snprintf(err, err_len, "attention.fwd: tensor %d is not in device memory", t);
      return 1;
    }
  const std::int64_t D = in[0]->shape[3];
  if (D != 64 && D != 128) {
    std::snprintf(err, err_len, "attention.fwd: D = %lld, built for 64 and 128 only",
                  static_cast<long long>(D));
    return MOACERT_UNSUPPORTED;
  }
  return attention_f32(in, n_in, out, n_out, params, err, err_len);
}

const std::int64_t head_dims[] = {64, 128};
const moacert_axis hd_axes[] = {{"D", 0, 0, head_dims, 2, 0}};
const moacert_envelope hd_envelope = {hd_axes, 1, 0};

const moacert_kernel kernels[] = {
    {"attention.fwd", "attention_cuda", "f32", 1, attention_f32, nullptr, nullptr},
    {"attention.fwd", "attention_hd", "f32", 1, attention_hd_f32, &hd_envelope, "cuda"},
};

}  // namespace

extern "C" const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = int(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
