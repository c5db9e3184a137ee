// The named steps the CUDA attention ONFs are built from, shared by every
// kernel source of kernels/cuda/: settings, strided tile loads, the
// visibility rule, scores, online softmax, recomputed P and dS, and the
// tile products. Plain CUDA C++: nvcc compiles it for the device, and g++
// for the host emulator through moacert/simt.h (docs/simt.md).
//
// Ops semantics (docs/design.md, "Ops"): q, do, o (B,H,N,D), k, v (B,Hkv,M,D),
// lse (B,H,N); head h reads kv head h / (H / Hkv); causal: query i sees key
// j iff j <= i + (M - N); a row seeing no key has O = 0, LSE = -inf and
// zero gradients. Every tensor is read and written through its own element
// strides.
#pragma once

#include "kernels/cuda/cuda_compat.cuh"
// after the CUDA language: its host-side structs name no CUDA type
#include "kernels/cuda/attention_args.hpp"
#include "kernels/cuda/scratch.hpp"
#include "kernels/cuda/tiles.hpp"
#include "reference/causal.hpp"

#include <stdexcept>

// The dynamic shared memory of every kernel here, declared once at file
// scope: on the host emulator one arena (simt_arena.cpp) for all of them.
extern __shared__ float smem[];

namespace moacert::kernels::MOACERT_CUDA_NS {

// ---- settings --------------------------------------------------------------

using cuda_tiles::kBlockM;       // query rows per tile (kernels/cuda/tiles.hpp)
using cuda_tiles::kBlockN;       // keys per tile
using cuda_tiles::kMaxD;         // head width the shared tiles are sized for
using cuda_tiles::tile_visible;  // the tile pairs a causal loop visits
constexpr int kThreads = 64;     // two warps per block
// Per-thread register tile of a (kBlockN, D) accumulator (dK, dV owned by a
// key-block kernel): entry e of the tile belongs to thread e % kThreads.
constexpr int kRegTile = kBlockN * kMaxD / kThreads;

constexpr float kNegInf = -INFINITY;

__host__ __device__ inline int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}
// CUDA's integer min, which the host emulator's header does not declare.
__host__ __device__ inline int imin(int a, int b) {
  return a < b ? a : b;
}

// ---- storage conversions (f32 accumulation, one rounding to storage) -------

__device__ __forceinline__ float to_f32(float x) {
  return x;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f32(__half x) {
  return __half2float(x);
}
template <class T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);  // round to nearest even
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __float2half(x);  // round to nearest even
}

__device__ __forceinline__ long long at(const Strides4& s, int b, int h, int n, int d) {
  return b * s.b + h * s.h + n * s.n + d * s.d;
}
__device__ __forceinline__ long long at(const Strides3& s, int b, int h, int n) {
  return b * s.b + h * s.h + n * s.n;
}

// ---- visibility -------------------------------------------------------------

// Causal (bottom-right): query i sees key j iff j <= i + (M - N).
__device__ __forceinline__ bool sees(bool causal, int i, int j, int N, int M) {
  return causal::sees(causal, i, j, N, M);
}

__host__ __device__ inline int rows_in(int tile, int extent, int block) {
  const int rest = extent - tile * block;
  return rest < block ? rest : block;
}

// ---- tile loads and stores ----------------------------------------------------

// tile (kBlock, D) <- rows [row0, row0 + rows) of (b, h); rows past `rows`
// are zero and never read from global memory.
template <class T>
__device__ inline void load_tile(float* tile, const T* g, const Strides4& s, int b, int h, int row0,
                                 int rows, int D, int block_rows) {
  for (int e = threadIdx.x; e < block_rows * D; e += blockDim.x) {
    const int r = e / D, d = e % D;
    tile[e] = r < rows ? to_f32(g[at(s, b, h, row0 + r, d)]) : 0.f;
  }
}

// rows [row0, row0 + rows) of (b, h) <- factor * tile
template <class T>
__device__ inline void store_tile(T* g, const Strides4& s, int b, int h, int row0, int rows, int D,
                                  const float* tile, float factor) {
  for (int e = threadIdx.x; e < rows * D; e += blockDim.x) {
    const int r = e / D, d = e % D;
    g[at(s, b, h, row0 + r, d)] = from_f32<T>(factor * tile[e]);
  }
}

template <class T>
__device__ inline void load_rows(float* v, const T* g, const Strides3& s, int b, int h, int row0,
                                 int rows) {
  for (int r = threadIdx.x; r < kBlockM; r += blockDim.x)
    v[r] = r < rows ? to_f32(g[at(s, b, h, row0 + r)]) : 0.f;
}

__device__ inline void fill(float* tile, int count, float value) {
  for (int e = threadIdx.x; e < count; e += blockDim.x) tile[e] = value;
}

// ---- scores ---------------------------------------------------------------------

__device__ __forceinline__ float dot(const float* x, const float* y, int D) {
  float acc = 0.f;
  for (int d = 0; d < D; ++d) acc += x[d] * y[d];
  return acc;
}

// s (kBlockM, kBlockN) <- scale * q k^T, -inf where masked (past N or M,
// or causal).
template <bool kCausal>
__device__ inline void scores(float* s, const float* q, const float* k, int i0, int j0,
                              const AttnDims& a) {
  for (int e = threadIdx.x; e < kBlockM * kBlockN; e += blockDim.x) {
    const int r = e / kBlockN, c = e % kBlockN;
    const int i = i0 + r, j = j0 + c;
    const bool visible = i < a.N && j < a.M && sees(kCausal, i, j, a.N, a.M);
    s[e] = visible ? a.scale * dot(q + r * a.D, k + c * a.D, a.D) : kNegInf;
  }
}

// ---- forward: online softmax ------------------------------------------------------

// Row r of the tile: running max m, running sum l; s becomes the weights
// p = exp(s - m_new) and alpha the rescale exp(m_old - m_new) of the
// accumulator. docs/bounds.md#attention-forward counts one exp and one
// product per rescale.
__device__ inline void online_softmax(float* s, float* m, float* l, float* alpha) {
  for (int r = threadIdx.x; r < kBlockM; r += blockDim.x) {
    float* row = s + r * kBlockN;  // (kBlockN)
    float m_new = m[r];
    for (int c = 0; c < kBlockN; ++c) m_new = fmaxf(m_new, row[c]);
    if (m_new == kNegInf) {  // no visible key yet: -inf - -inf would be NaN
      alpha[r] = 1.f;
      for (int c = 0; c < kBlockN; ++c) row[c] = 0.f;
      continue;
    }
    alpha[r] = expf(m[r] - m_new);  // exp(-inf) = 0 on the first visible tile
    float sum = 0.f;
    for (int c = 0; c < kBlockN; ++c) {
      row[c] = expf(row[c] - m_new);  // exp(-inf) = 0 for a masked key
      sum += row[c];
    }
    l[r] = alpha[r] * l[r] + sum;
    m[r] = m_new;
  }
}

// acc (kBlockM, D) <- alpha * acc + p v
__device__ inline void rescale_accumulate(float* acc, const float* alpha, const float* p,
                                          const float* v, int D) {
  for (int e = threadIdx.x; e < kBlockM * D; e += blockDim.x) {
    const int r = e / D, d = e % D;
    float pv = 0.f;
    for (int c = 0; c < kBlockN; ++c) pv += p[r * kBlockN + c] * v[c * D + d];
    acc[e] = alpha[r] * acc[e] + pv;
  }
}

// O = acc / l and LSE = m + log l; a row that saw no key (l = 0) has O = 0
// and LSE = -inf.
__device__ inline void normalise(float* acc, float* lse, const float* m, const float* l, int D) {
  for (int e = threadIdx.x; e < kBlockM * D; e += blockDim.x) {
    const int r = e / D;
    acc[e] = l[r] > 0.f ? acc[e] / l[r] : 0.f;
  }
  for (int r = threadIdx.x; r < kBlockM; r += blockDim.x)
    lse[r] = l[r] > 0.f ? m[r] + logf(l[r]) : kNegInf;
}

// ---- backward -----------------------------------------------------------------------

// D_i = dO_i . O_i per row of the tile.
__device__ inline void row_dot(float* out, const float* x, const float* y, int D) {
  for (int r = threadIdx.x; r < kBlockM; r += blockDim.x) out[r] = dot(x + r * D, y + r * D, D);
}

// p (kBlockM, kBlockN) <- exp(scale q k^T - lse), 0 where masked;
// ds <- p (dO v^T - D_i). A row with no visible key (lse = -inf) is masked
// everywhere, so it contributes nothing.
template <bool kCausal>
__device__ inline void probabilities_and_ds(float* p, float* ds, const float* q, const float* k,
                                            const float* dout, const float* v, const float* lse,
                                            const float* drow, int i0, int j0, const AttnDims& a) {
  for (int e = threadIdx.x; e < kBlockM * kBlockN; e += blockDim.x) {
    const int r = e / kBlockN, c = e % kBlockN;
    const int i = i0 + r, j = j0 + c;
    const bool visible = i < a.N && j < a.M && sees(kCausal, i, j, a.N, a.M);
    if (!visible) {
      p[e] = 0.f;
      ds[e] = 0.f;
      continue;
    }
    p[e] = expf(a.scale * dot(q + r * a.D, k + c * a.D, a.D) - lse[r]);
    ds[e] = p[e] * (dot(dout + r * a.D, v + c * a.D, a.D) - drow[r]);
  }
}

// p alone (the dV kernels need no dS).
template <bool kCausal>
__device__ inline void probabilities(float* p, const float* q, const float* k, const float* lse,
                                     int i0, int j0, const AttnDims& a) {
  for (int e = threadIdx.x; e < kBlockM * kBlockN; e += blockDim.x) {
    const int r = e / kBlockN, c = e % kBlockN;
    const int i = i0 + r, j = j0 + c;
    const bool visible = i < a.N && j < a.M && sees(kCausal, i, j, a.N, a.M);
    p[e] = visible ? expf(a.scale * dot(q + r * a.D, k + c * a.D, a.D) - lse[r]) : 0.f;
  }
}

// acc (kBlockM, D) += w x: w (kBlockM, kBlockN), x (kBlockN, D). dQ += dS K.
__device__ inline void accumulate_rows(float* acc, const float* w, const float* x, int D) {
  for (int e = threadIdx.x; e < kBlockM * D; e += blockDim.x) {
    const int r = e / D, d = e % D;
    float sum = 0.f;
    for (int c = 0; c < kBlockN; ++c) sum += w[r * kBlockN + c] * x[c * D + d];
    acc[e] += sum;
  }
}

// Entry (c, d) of w^T x: w (kBlockM, kBlockN), x (kBlockM, D). The
// contribution of one query tile to dK (dS^T Q) or dV (P^T dO).
__device__ __forceinline__ float column_dot(const float* w, const float* x, int c, int d, int D) {
  float sum = 0.f;
  for (int r = 0; r < kBlockM; ++r) sum += w[r * kBlockN + c] * x[r * D + d];
  return sum;
}

// acc_g (B, Hkv, M, D) contiguous f32 += w^T x for the tile's valid keys:
// one atomicAdd per (key, d).
__device__ inline void atomic_accumulate_cols(float* acc_g, const float* w, const float* x, int b,
                                              int g, int j0, int keys, const AttnDims& a) {
  for (int e = threadIdx.x; e < keys * a.D; e += blockDim.x) {
    const int c = e / a.D, d = e % a.D;
    const long long at_g = ((static_cast<long long>(b) * a.Hkv + g) * a.M + j0 + c) * a.D + d;
    atomicAdd(acc_g + at_g, column_dot(w, x, c, d, a.D));
  }
}

// The register tile of a (kBlockN, D) accumulator owned by this thread:
// reg[k] is entry threadIdx.x + k * kThreads.
__device__ inline void accumulate_cols(float (&reg)[kRegTile], const float* w, const float* x,
                                       int D) {
  for (int k = 0; k < kRegTile; ++k) {
    const int e = threadIdx.x + k * kThreads;
    if (e >= kBlockN * D) break;
    reg[k] += column_dot(w, x, e / D, e % D, D);
  }
}

template <class T>
__device__ inline void store_reg_tile(T* g, const Strides4& s, int b, int h, int row0, int rows,
                                      const float (&reg)[kRegTile], float factor, int D) {
  for (int k = 0; k < kRegTile; ++k) {
    const int e = threadIdx.x + k * kThreads;
    if (e >= rows * D) break;
    g[at(s, b, h, row0 + e / D, e % D)] = from_f32<T>(factor * reg[k]);
  }
}

// out (B, heads, rows, D) strided <- factor * acc (B, heads, rows, D)
// contiguous f32: the atomics' accumulators rounded once to storage.
template <class T>
__global__ void scale_to_storage(T* out, Strides4 s, const float* acc, int heads, int rows, int D,
                                 long long total, float factor) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= total) return;
  const int d = static_cast<int>(e % D);
  const long long row = e / D;
  const int n = static_cast<int>(row % rows);
  const int h = static_cast<int>(row / rows % heads);
  const int b = static_cast<int>(row / rows / heads);
  out[at(s, b, h, n, d)] = from_f32<T>(factor * acc[e]);
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS

namespace moacert::kernels::MOACERT_CUDA_NS {

// ---- host side: scratch and the one compile-time dispatch --------------------

// A zeroed device buffer of f32 (the atomics' accumulators, the f32 LSE and
// D_i rows), freed on scope exit; `name` is the scratch tensor's in the
// cost functions' per-tensor model (kernels/cuda/cost.cpp), under which
// the emulator counts its traffic.
class DeviceBuffer {
 public:
  DeviceBuffer(long long count, const char* name) {
    const size_t bytes = static_cast<size_t>(count > 0 ? count : 1) * sizeof(float);
    error_ = cudaMalloc(reinterpret_cast<void**>(&data_), bytes);
    if (error_ == cudaSuccess) error_ = cudaMemset(data_, 0, bytes);
    if (error_ == cudaSuccess) moacert_simt_name_buffer(data_, name);
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* get() const { return data_; }
  cudaError_t error() const { return error_; }

 private:
  float* data_ = nullptr;
  cudaError_t error_ = cudaSuccess;
};

template <bool kValue>
struct Flag {
  static constexpr bool value = kValue;
};

// Storage type and causal mask become template arguments here and only
// here (CONTRIBUTING.md, style 7): f(T{}, Flag<causal>{}). The SIMT-core
// ONFs are compiled for f32 and bf16 storage (dispatch), the tensor-core
// ONFs for the mma's two b16 inputs, bf16 and f16 (dispatch_b16).
template <class T, class F>
int with_causal(bool causal, F&& f) {
  return causal ? f(T{}, Flag<true>{}) : f(T{}, Flag<false>{});
}
template <class F>
int dispatch(Storage storage, bool causal, F&& f) {
  switch (storage) {
    case Storage::f32:
      return with_causal<float>(causal, f);
    case Storage::bf16:
      return with_causal<__nv_bfloat16>(causal, f);
    case Storage::f16:
      break;
  }
  throw std::invalid_argument("f16 storage is compiled for the tensor-core ONFs only");
}
template <class F>
int dispatch_b16(Storage storage, bool causal, F&& f) {
  switch (storage) {
    case Storage::bf16:
      return with_causal<__nv_bfloat16>(causal, f);
    case Storage::f16:
      return with_causal<__half>(causal, f);
    case Storage::f32:
      break;
  }
  throw std::invalid_argument("tensor-core ONFs: bf16 or f16 storage (the mma's inputs)");
}

constexpr int kConvertThreads = 256;

// out <- factor * acc for a (B, heads, rows, D) accumulator.
template <class T>
void launch_scale_to_storage(const Tensor4& out, const float* acc, int B, int heads, int rows,
                             int D, float factor) {
  const long long total = static_cast<long long>(B) * heads * rows * D;
  if (total == 0) return;
  MOACERT_LAUNCH((scale_to_storage<T>),
                 dim3(static_cast<unsigned>((total + kConvertThreads - 1) / kConvertThreads)),
                 dim3(kConvertThreads), 0, static_cast<T*>(out.data), out.s, acc, heads, rows, D,
                 total, factor);
}

inline int first_error(int a, int b) {
  return a != 0 ? a : b;
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
