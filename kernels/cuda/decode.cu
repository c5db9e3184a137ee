// attention.decode: split-K over the KV cache. One block per (split, head,
// batch) takes kSplitKeys consecutive positions, one key per thread: its
// score, the split's max and sum, and sum_j p_j v_j (p_j = exp(s_j - m)),
// written as f32 partials; positions at or past lens[b] are never read
// (a split wholly past it writes m = -inf, l = 0). A second kernel merges the
// splits of each (head, batch) with the LSE rescale exp(m_s - m):
// O = sum_s e_s acc_s / sum_s e_s l_s, LSE = m + log l.
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/rows_args.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

using cuda_tiles::kSplitKeys;  // keys per split = threads per block (kernels/cuda/tiles.hpp)

// Partials (B, H, splits): m, l; (B, H, splits, D): acc.
template <class T>
__global__ void decode_split_kernel(DecodeArgs args, float* m_part, float* l_part,
                                    float* acc_part) {
  __shared__ float q[kMaxD];       // (D)
  __shared__ float p[kSplitKeys];  // (kSplitKeys): scores, then weights
  __shared__ float stats[2];       // the split's max and sum
  const AttnDims a = args.a;
  const int split = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int g = h / (a.H / a.Hkv), splits = gridDim.x;
  const long long len = static_cast<const long long*>(args.lens.data)[b * args.lens.s];
  const int j0 = split * kSplitKeys;
  const int keys = len - j0 < kSplitKeys ? static_cast<int>(len - j0) : kSplitKeys;
  const long long part = (static_cast<long long>(b) * a.H + h) * splits + split;
  if (keys <= 0) {  // the whole split lies past lens[b]: nothing to read
    if (threadIdx.x == 0) {
      m_part[part] = kNegInf;
      l_part[part] = 0.f;
    }
    for (int d = threadIdx.x; d < a.D; d += blockDim.x) acc_part[part * a.D + d] = 0.f;
    return;
  }
  const T* k = static_cast<const T*>(args.k.data);
  const T* v = static_cast<const T*>(args.v.data);
  for (int d = threadIdx.x; d < a.D; d += blockDim.x)
    q[d] = to_f32(static_cast<const T*>(args.q.data)[at(args.q.s, b, h, 0, d)]);
  __syncthreads();
  // scores: thread c takes key j0 + c
  const int c = threadIdx.x;
  if (c < keys) {
    float dot = 0.f;
    for (int d = 0; d < a.D; ++d) dot += q[d] * to_f32(k[at(args.k.s, b, g, j0 + c, d)]);
    p[c] = a.scale * dot;
  } else {
    p[c] = kNegInf;
  }
  __syncthreads();
  // the split's max and the weights
  if (threadIdx.x == 0) {
    float m = kNegInf;
    for (int j = 0; j < kSplitKeys; ++j) m = fmaxf(m, p[j]);
    stats[0] = m;
  }
  __syncthreads();
  p[c] = c < keys ? expf(p[c] - stats[0]) : 0.f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float l = 0.f;
    for (int j = 0; j < kSplitKeys; ++j) l += p[j];
    m_part[part] = stats[0];
    l_part[part] = l;
  }
  // acc_d = sum_j p_j v_jd over the split's keys
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float acc = 0.f;
    for (int j = 0; j < keys; ++j) acc += p[j] * to_f32(v[at(args.v.s, b, g, j0 + j, d)]);
    acc_part[part * a.D + d] = acc;
  }
}

// One block per (head, batch): the splits merged in order. Dynamic shared
// memory: the splits' m, then l, then the rescale factors exp(m_s - m).
template <class T>
__global__ void decode_merge_kernel(DecodeArgs args, const float* m_part, const float* l_part,
                                    const float* acc_part, int splits) {
  const AttnDims a = args.a;
  const int h = blockIdx.x, b = blockIdx.y;
  const long long first = (static_cast<long long>(b) * a.H + h) * splits;
  float* m_s = smem;            // (splits)
  float* l_s = m_s + splits;    // (splits)
  float* e_s = l_s + splits;    // (splits)
  float* stats = e_s + splits;  // m, l
  for (int s = threadIdx.x; s < splits; s += blockDim.x) {
    m_s[s] = m_part[first + s];
    l_s[s] = l_part[first + s];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = kNegInf;
    for (int s = 0; s < splits; ++s) m = fmaxf(m, m_s[s]);
    // lens[b] >= 1: some split saw a key, so m is finite
    float l = 0.f;
    for (int s = 0; s < splits; ++s) {
      e_s[s] = expf(m_s[s] - m);  // 0 for a split past lens[b]
      l += e_s[s] * l_s[s];
    }
    stats[0] = m;
    stats[1] = l;
  }
  __syncthreads();
  for (int d = threadIdx.x; d < a.D; d += blockDim.x) {
    float acc = 0.f;
    for (int s = 0; s < splits; ++s) acc += e_s[s] * acc_part[(first + s) * a.D + d];
    static_cast<T*>(args.o.data)[at(args.o.s, b, h, 0, d)] = from_f32<T>(acc / stats[1]);
  }
  if (threadIdx.x == 0)
    static_cast<T*>(args.lse.data)[at(args.lse.s, b, h, 0)] =
        from_f32<T>(stats[0] + logf(stats[1]));
}

}  // namespace

int launch_decode(const DecodeArgs& args) {
  const AttnDims& a = args.a;
  const int splits = ceil_div(a.M, kSplitKeys);
  const long long parts = static_cast<long long>(a.B) * a.H * splits;
  DeviceBuffer m_part(parts, cuda_scratch::kMPart), l_part(parts, cuda_scratch::kLPart),
      acc_part(parts * a.D, cuda_scratch::kAccPart);
  if (int e = first_error(first_error(m_part.error(), l_part.error()), acc_part.error())) return e;
  const dim3 split_grid(splits, a.H, a.B), merge_grid(a.H, a.B);
  const size_t merge_shared = sizeof(float) * (3 * splits + 2);
  if (args.storage == Storage::f32) {
    MOACERT_LAUNCH((decode_split_kernel<float>), split_grid, dim3(kSplitKeys), 0, args,
                   m_part.get(), l_part.get(), acc_part.get());
    MOACERT_LAUNCH((decode_merge_kernel<float>), merge_grid, dim3(kThreads), merge_shared, args,
                   static_cast<const float*>(m_part.get()), static_cast<const float*>(l_part.get()),
                   static_cast<const float*>(acc_part.get()), splits);
  } else {
    MOACERT_LAUNCH((decode_split_kernel<__nv_bfloat16>), split_grid, dim3(kSplitKeys), 0, args,
                   m_part.get(), l_part.get(), acc_part.get());
    MOACERT_LAUNCH((decode_merge_kernel<__nv_bfloat16>), merge_grid, dim3(kThreads), merge_shared,
                   args, static_cast<const float*>(m_part.get()),
                   static_cast<const float*>(l_part.get()),
                   static_cast<const float*>(acc_part.get()), splits);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
