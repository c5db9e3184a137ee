// The passes the attention ONFs of kernels/cuda/ compose: over the key
// tiles of one query tile (the forward's online softmax; the backward's
// recomputed P, dS and dQ, with dK and dV added by atomics or not), and
// over the query tiles of one key tile (dV alone, or dK and dV in
// registers, dQ added by atomics or not). Each ONF source is a few
// kernels built from these, so that every variant visits the same tile
// pairs in the same order and their outputs and counts compare.
#pragma once

#include "kernels/cuda/attention_common.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

// ---- one block per (query tile, head) -----------------------------------------

// The shared memory of a query-tile block, carved from the dynamic
// allocation. The carve is the one definition of its layout: with P =
// float* it places the tiles, with P = size_t (from 0) it gives their
// offsets in floats, and `end` is the size the launch asks for.
template <class P>
struct QueryTileOf {
  P q;      // (kBlockM, D)
  P dout;   // (kBlockM, D)
  P k;      // (kBlockN, D)
  P v;      // (kBlockN, D)
  P acc;    // (kBlockM, D): O, then dQ / scale
  P s;      // (kBlockM, kBlockN): S, then P
  P ds;     // (kBlockM, kBlockN)
  P m;      // (kBlockM) running max
  P l;      // (kBlockM) running sum
  P alpha;  // (kBlockM) rescale factor
  P lse;    // (kBlockM)
  P drow;   // (kBlockM) D_i
  P end;    // one past the last
};
using QueryTile = QueryTileOf<float*>;

template <class P>
__host__ __device__ inline QueryTileOf<P> carve_query_tile(P smem, int D) {
  QueryTileOf<P> t;
  t.q = smem;
  t.dout = t.q + kBlockM * D;
  t.k = t.dout + kBlockM * D;
  t.v = t.k + kBlockN * D;
  t.acc = t.v + kBlockN * D;
  t.s = t.acc + kBlockM * D;
  t.ds = t.s + kBlockM * kBlockN;
  t.m = t.ds + kBlockM * kBlockN;
  t.l = t.m + kBlockM;
  t.alpha = t.l + kBlockM;
  t.lse = t.alpha + kBlockM;
  t.drow = t.lse + kBlockM;
  t.end = t.drow + kBlockM;
  return t;
}

__host__ __device__ inline size_t query_tile_bytes(int D) {
  return sizeof(float) * carve_query_tile(size_t{0}, D).end;
}

// Where a query tile's block is: (query tile, head, batch) = blockIdx.
struct QueryPos {
  int q_tile, h, b, g, i0, rows;
};

__device__ inline QueryPos query_pos(const AttnDims& a) {
  QueryPos p;
  p.q_tile = blockIdx.x;
  p.h = blockIdx.y;
  p.b = blockIdx.z;
  p.g = p.h / (a.H / a.Hkv);
  p.i0 = p.q_tile * kBlockM;
  p.rows = rows_in(p.q_tile, a.N, kBlockM);
  return p;
}

// Forward over the visible key tiles (t.q loaded): t.acc becomes O (f32)
// and t.lse the rows' LSE.
template <class T, bool kCausal>
__device__ inline void forward_pass(const QueryTile& t, const QueryPos& p, const Tensor4& k_t,
                                    const Tensor4& v_t, const AttnDims& a) {
  const T* k_g = static_cast<const T*>(k_t.data);
  const T* v_g = static_cast<const T*>(v_t.data);
  fill(t.acc, kBlockM * a.D, 0.f);
  fill(t.m, kBlockM, kNegInf);
  fill(t.l, kBlockM, 0.f);
  __syncthreads();
  const int key_tiles = ceil_div(a.M, kBlockN);
  for (int kt = 0; kt < key_tiles && tile_visible(kCausal, p.q_tile, kt, a.N, a.M); ++kt) {
    const int j0 = kt * kBlockN, keys = rows_in(kt, a.M, kBlockN);
    load_tile(t.k, k_g, k_t.s, p.b, p.g, j0, keys, a.D, kBlockN);
    load_tile(t.v, v_g, v_t.s, p.b, p.g, j0, keys, a.D, kBlockN);
    __syncthreads();
    scores<kCausal>(t.s, t.q, t.k, p.i0, j0, a);
    __syncthreads();
    online_softmax(t.s, t.m, t.l, t.alpha);
    __syncthreads();
    rescale_accumulate(t.acc, t.alpha, t.s, t.v, a.D);
    __syncthreads();  // k, v and s are overwritten next
  }
  normalise(t.acc, t.lse, t.m, t.l, a.D);
  __syncthreads();
}

// o, lse <- the forward's rows.
template <class T>
__device__ inline void store_forward(const QueryTile& t, const QueryPos& p, const Tensor4& o,
                                     const Tensor3& lse, const AttnDims& a) {
  store_tile(static_cast<T*>(o.data), o.s, p.b, p.h, p.i0, p.rows, a.D, t.acc, 1.f);
  for (int r = threadIdx.x; r < p.rows; r += blockDim.x)
    static_cast<T*>(lse.data)[at(lse.s, p.b, p.h, p.i0 + r)] = from_f32<T>(t.lse[r]);
}

// f32 rows (B, H, N) contiguous <- v (the LSE or D_i a later kernel reads).
__device__ inline void store_rows_f32(float* g, const QueryPos& p, const float* v,
                                      const AttnDims& a) {
  for (int r = threadIdx.x; r < p.rows; r += blockDim.x)
    g[(static_cast<long long>(p.b) * a.H + p.h) * a.N + p.i0 + r] = v[r];
}

// The fused kernels' forward over one query tile, written once for
// fused_v1, fused_v3 and fused_det: Q and dO loaded, the online softmax
// over the visible key tiles (t.acc = O, t.lse), O and LSE stored. What
// follows (which rows are kept for a later kernel, which gradients are
// atomic) is each ONF's own.
template <class T, bool kCausal>
__device__ inline void fused_forward(const FwdBwdArgs& args, const QueryTile& t,
                                     const QueryPos& p) {
  const AttnDims& a = args.a;
  load_tile(t.q, static_cast<const T*>(args.q.data), args.q.s, p.b, p.h, p.i0, p.rows, a.D,
            kBlockM);
  load_tile(t.dout, static_cast<const T*>(args.dout.data), args.dout.s, p.b, p.h, p.i0, p.rows, a.D,
            kBlockM);
  forward_pass<T, kCausal>(t, p, args.k, args.v, a);
  store_forward<T>(t, p, args.o, args.lse, a);
}

// Backward over the visible key tiles (t.q, t.dout, t.lse, t.drow ready):
// t.acc becomes dQ / scale; dS^T Q and P^T dO of each tile are added to the
// f32 accumulators dk_acc, dv_acc (B, Hkv, M, D) by atomics where kAtomicDK,
// kAtomicDV.
template <class T, bool kCausal, bool kAtomicDK, bool kAtomicDV>
__device__ inline void backward_pass(const QueryTile& t, const QueryPos& p, const Tensor4& k_t,
                                     const Tensor4& v_t, float* dk_acc, float* dv_acc,
                                     const AttnDims& a) {
  const T* k_g = static_cast<const T*>(k_t.data);
  const T* v_g = static_cast<const T*>(v_t.data);
  fill(t.acc, kBlockM * a.D, 0.f);
  __syncthreads();
  const int key_tiles = ceil_div(a.M, kBlockN);
  for (int kt = 0; kt < key_tiles && tile_visible(kCausal, p.q_tile, kt, a.N, a.M); ++kt) {
    const int j0 = kt * kBlockN, keys = rows_in(kt, a.M, kBlockN);
    load_tile(t.k, k_g, k_t.s, p.b, p.g, j0, keys, a.D, kBlockN);
    load_tile(t.v, v_g, v_t.s, p.b, p.g, j0, keys, a.D, kBlockN);
    __syncthreads();
    probabilities_and_ds<kCausal>(t.s, t.ds, t.q, t.k, t.dout, t.v, t.lse, t.drow, p.i0, j0, a);
    __syncthreads();
    accumulate_rows(t.acc, t.ds, t.k, a.D);  // dQ += dS K
    if constexpr (kAtomicDK) atomic_accumulate_cols(dk_acc, t.ds, t.q, p.b, p.g, j0, keys, a);
    if constexpr (kAtomicDV) atomic_accumulate_cols(dv_acc, t.s, t.dout, p.b, p.g, j0, keys, a);
    __syncthreads();
  }
}

// ---- one block per (key tile, kv head) -------------------------------------------

// The shared memory of a key-tile block, carved as a query tile's is
// (P = float* or size_t).
template <class P>
struct KeyTileOf {
  P k;     // (kBlockN, D)
  P v;     // (kBlockN, D)
  P q;     // (kBlockM, D)
  P dout;  // (kBlockM, D)
  P p;     // (kBlockM, kBlockN)
  P ds;    // (kBlockM, kBlockN)
  P lse;   // (kBlockM)
  P drow;  // (kBlockM)
  P end;   // one past the last
};
using KeyTile = KeyTileOf<float*>;

template <class P>
__host__ __device__ inline KeyTileOf<P> carve_key_tile(P smem, int D) {
  KeyTileOf<P> t;
  t.k = smem;
  t.v = t.k + kBlockN * D;
  t.q = t.v + kBlockN * D;
  t.dout = t.q + kBlockM * D;
  t.p = t.dout + kBlockM * D;
  t.ds = t.p + kBlockM * kBlockN;
  t.lse = t.ds + kBlockM * kBlockN;
  t.drow = t.lse + kBlockM;
  t.end = t.drow + kBlockM;
  return t;
}

__host__ __device__ inline size_t key_tile_bytes(int D) {
  return sizeof(float) * carve_key_tile(size_t{0}, D).end;
}

// Rows of a (B, H, N) vector: a strided tensor of storage T (attention.bwd's
// lse input) or a contiguous f32 scratch (a fused kernel's own LSE, D_i).
template <class R>
struct Rows {
  const R* data;
  Strides3 s;
};

__host__ __device__ inline Rows<float> f32_rows(const float* data, const AttnDims& a) {
  return {data, {static_cast<long long>(a.H) * a.N, a.N, 1}};
}

// dV_j = sum over the group's query heads and the visible query tiles of
// P^T dO, P recomputed from q, k and the rows' LSE; written once (no
// atomics). grid (key tiles, Hkv, B).
template <class T, class R, bool kCausal>
__global__ void dv_kernel(AttnDims a, Tensor4 q_t, Tensor4 k_t, Tensor4 dout_t, Rows<R> lse_rows,
                          Tensor4 dv_t) {
  const KeyTile t = carve_key_tile(smem, a.D);
  const int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int j0 = kt * kBlockN, keys = rows_in(kt, a.M, kBlockN);
  const int group = a.H / a.Hkv, query_tiles = ceil_div(a.N, kBlockM);
  float dv[kRegTile] = {};  // this thread's entries of dV (kBlockN, D)
  load_tile(t.k, static_cast<const T*>(k_t.data), k_t.s, b, g, j0, keys, a.D, kBlockN);
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int qt = 0; qt < query_tiles; ++qt) {
      if (!tile_visible(kCausal, qt, kt, a.N, a.M)) continue;
      const int i0 = qt * kBlockM, rows = rows_in(qt, a.N, kBlockM);
      load_tile(t.q, static_cast<const T*>(q_t.data), q_t.s, b, h, i0, rows, a.D, kBlockM);
      load_tile(t.dout, static_cast<const T*>(dout_t.data), dout_t.s, b, h, i0, rows, a.D, kBlockM);
      load_rows(t.lse, lse_rows.data, lse_rows.s, b, h, i0, rows);
      __syncthreads();
      probabilities<kCausal>(t.p, t.q, t.k, t.lse, i0, j0, a);
      __syncthreads();
      accumulate_cols(dv, t.p, t.dout, a.D);  // dV += P^T dO
      __syncthreads();                        // q, dout and p are overwritten next
    }
  }
  store_reg_tile(static_cast<T*>(dv_t.data), dv_t.s, b, g, j0, keys, dv, 1.f, a.D);
}

// dK and dV of one key tile in registers over the group's query heads and
// visible query tiles, written once; dQ's partial dS K of each tile pair is
// added to the f32 accumulator dq_acc (B, H, N, D) by atomics where
// kAtomicDQ (FlashAttention-2's form), else not at all (its query-tile
// kernel computes dQ). grid (key tiles, Hkv, B).
template <class T, class R, bool kCausal, bool kAtomicDQ>
__global__ void dkdv_kernel(AttnDims a, Tensor4 q_t, Tensor4 k_t, Tensor4 v_t, Tensor4 dout_t,
                            Rows<R> lse_rows, Rows<float> d_rows, Tensor4 dk_t, Tensor4 dv_t,
                            float* dq_acc) {
  const KeyTile t = carve_key_tile(smem, a.D);
  const int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int j0 = kt * kBlockN, keys = rows_in(kt, a.M, kBlockN);
  const int group = a.H / a.Hkv, query_tiles = ceil_div(a.N, kBlockM);
  float dk[kRegTile] = {};  // this thread's entries of dK / scale (kBlockN, D)
  float dv[kRegTile] = {};  // and of dV
  load_tile(t.k, static_cast<const T*>(k_t.data), k_t.s, b, g, j0, keys, a.D, kBlockN);
  load_tile(t.v, static_cast<const T*>(v_t.data), v_t.s, b, g, j0, keys, a.D, kBlockN);
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int qt = 0; qt < query_tiles; ++qt) {
      if (!tile_visible(kCausal, qt, kt, a.N, a.M)) continue;
      const int i0 = qt * kBlockM, rows = rows_in(qt, a.N, kBlockM);
      load_tile(t.q, static_cast<const T*>(q_t.data), q_t.s, b, h, i0, rows, a.D, kBlockM);
      load_tile(t.dout, static_cast<const T*>(dout_t.data), dout_t.s, b, h, i0, rows, a.D, kBlockM);
      load_rows(t.lse, lse_rows.data, lse_rows.s, b, h, i0, rows);
      load_rows(t.drow, d_rows.data, d_rows.s, b, h, i0, rows);
      __syncthreads();
      probabilities_and_ds<kCausal>(t.p, t.ds, t.q, t.k, t.dout, t.v, t.lse, t.drow, i0, j0, a);
      __syncthreads();
      accumulate_cols(dk, t.ds, t.q, a.D);    // dK += dS^T Q
      accumulate_cols(dv, t.p, t.dout, a.D);  // dV += P^T dO
      if constexpr (kAtomicDQ) {
        for (int e = threadIdx.x; e < rows * a.D; e += blockDim.x) {  // dQ += dS K
          const int r = e / a.D, d = e % a.D;
          float sum = 0.f;
          for (int c = 0; c < kBlockN; ++c) sum += t.ds[r * kBlockN + c] * t.k[c * a.D + d];
          atomicAdd(dq_acc + ((static_cast<long long>(b) * a.H + h) * a.N + i0 + r) * a.D + d, sum);
        }
      }
      __syncthreads();
    }
  }
  store_reg_tile(static_cast<T*>(dk_t.data), dk_t.s, b, g, j0, keys, dk, a.scale, a.D);
  store_reg_tile(static_cast<T*>(dv_t.data), dv_t.s, b, g, j0, keys, dv, 1.f, a.D);
}

__host__ inline dim3 key_grid(const AttnDims& a) {
  return dim3(ceil_div(a.M, kBlockN), a.Hkv, a.B);
}
__host__ inline dim3 query_grid(const AttnDims& a) {
  return dim3(ceil_div(a.N, kBlockM), a.H, a.B);
}

// D_i = dO_i . O_i (f32, (B, H, N) contiguous): the backward's first
// kernel. One thread per row; grid (row blocks, H, B).
template <class T>
__global__ void row_dot_kernel(AttnDims a, Tensor4 dout_t, Tensor4 o_t, float* d_rows) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y, b = blockIdx.z;
  if (i >= a.N) return;
  const T* dout = static_cast<const T*>(dout_t.data);
  const T* o = static_cast<const T*>(o_t.data);
  float sum = 0.f;
  for (int d = 0; d < a.D; ++d)
    sum += to_f32(dout[at(dout_t.s, b, h, i, d)]) * to_f32(o[at(o_t.s, b, h, i, d)]);
  d_rows[(static_cast<long long>(b) * a.H + h) * a.N + i] = sum;
}

constexpr int kRowThreads = 64;

template <class T>
void launch_row_dot(const AttnDims& a, const Tensor4& dout, const Tensor4& o, float* d_rows) {
  MOACERT_LAUNCH((row_dot_kernel<T>), dim3(ceil_div(a.N, kRowThreads), a.H, a.B), dim3(kRowThreads),
                 0, a, dout, o, d_rows);
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
