// The tensor-core steps the *_tc attention ONFs of kernels/cuda/ compose
// (docs/cuda.md#tensor-core-onfs): tiles staged by 16-byte cp.async, f32
// pairs packed into b16 (bf16 or f16) mma operands, and the backward's per-tile steps
// over one (key tile, query tile) pair: P^T and dS^T recomputed on tensor
// cores and rounded to the storage's b16 in shared memory, dK += dS^T Q and dV += P^T dO
// into each warp's accumulator fragments, and dQ's partial dS K; and the
// two backward kernels built from them, over 32-key tiles and over 32-row
// query blocks (two 16-row sub-steps each), which bwd_tc, fused_v1_tc,
// fused_v3_tc and fused_det_tc launch with their own atomics. Written
// once, so that the four visit the same (16-row tile, 32-key tile) pairs
// with the same arithmetic. Fragments are the PTX ISA's for
// mma.m16n8k16: lane = 4 groupID + threadID_in_group, accumulator entry e
// at row groupID + 8 (e / 2), column 2 threadID_in_group + e % 2.
#pragma once

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_passes.cuh"  // row_dot_kernel, for the fused ONFs' prologue
// after the CUDA language
#include "include/moacert/tensor_core.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace moacert::kernels::MOACERT_CUDA_NS {

constexpr int kChunk = 8;  // b16 elements per 16-byte cp.async

// x rounded to nearest even in the b16 storage T (__nv_bfloat16 or
// __half), as its 16 bits: what the shared tiles and mma operands hold.
template <class T>
__device__ __forceinline__ std::uint16_t b16_bits(float x) {
  static_assert(sizeof(T) == 2, "a b16 element");
  const T rounded = from_f32<T>(x);
  std::uint16_t bits;
  memcpy(&bits, &rounded, sizeof bits);
  return bits;
}

// Two b16 elements in one register, the lower index in the lower half.
template <class T>
__device__ __forceinline__ std::uint32_t pack(float lo, float hi) {
  return std::uint32_t(b16_bits<T>(lo)) | std::uint32_t(b16_bits<T>(hi)) << 16;
}

// rows [row0, row0 + rows) of (b, h) into the (block_rows, D) tile at
// `tile` by 16-byte cp.async; rows past `rows` are zeroed and never read.
// Every thread commits nothing here: the caller closes the group.
template <int D, class T>
__device__ inline void stage_tile(std::uint16_t* tile, const T* g, const Strides4& s, int b, int h,
                                  int row0, int rows, int block_rows) {
  constexpr int chunks_per_row = D / kChunk;
  for (int c = threadIdx.x; c < block_rows * chunks_per_row; c += blockDim.x) {
    const int r = c / chunks_per_row, d = (c % chunks_per_row) * kChunk;
    if (r < rows) {
      tc::cp_async_cg(tile + r * D + d, g + at(s, b, h, row0 + r, d));
    } else {
      for (int e = 0; e < kChunk; ++e) tile[r * D + d + e] = 0;
    }
  }
}

// cp.async copies 16 aligned bytes of a row: a staged tensor must have unit
// d strides and rows of whole 16-byte chunks.
inline bool chunked_rows(const Strides4& s) {
  return s.d == 1 && s.n % kChunk == 0 && s.h % kChunk == 0 && s.b % kChunk == 0;
}

// ---- the backward over one (key tile, query tile) pair ------------------------

using cuda_tiles::kTcBwdBlockM;  // query rows per tile
using cuda_tiles::kTcBwdBlockN;  // keys per tile
constexpr int kTcBwdWarps = 4;
constexpr int kTcBwdThreads = 32 * kTcBwdWarps;
static_assert(kTcBwdBlockN == 2 * 16 && kTcBwdBlockM == 2 * 8 && kTcBwdWarps == 4,
              "each warp owns one 16-key by 8-query block of S^T");
using cuda_tiles::kTcFusedBlockM;  // query rows per block of the query-block kernel
constexpr int kTcSubSteps = kTcFusedBlockM / kTcBwdBlockM;  // its 16-row sub-steps per key tile
static_assert(kTcSubSteps * kTcBwdBlockM == kTcFusedBlockM, "whole 16-row sub-steps");

// The shared memory of a key-tile block (b16 elements): K and V of the key
// tile, Q and dO of a query tile double buffered, P^T and dS^T of the pair
// in the storage's b16; then f32 LSE and D_i rows of the query tile, double buffered.
// Every b16 row is 16-byte aligned for ldmatrix.
struct TcKeyTile {
  std::uint16_t *k, *v, *q[2], *dout[2];
  std::uint16_t *pt, *dst;  // (kTcBwdBlockN, kTcBwdBlockM): P^T, dS^T
  float *lse[2], *drow[2];
};

template <int D>
__host__ __device__ constexpr size_t tc_key_tile_bytes() {
  return sizeof(std::uint16_t) *
             size_t(2 * kTcBwdBlockN * D + 4 * kTcBwdBlockM * D + 2 * kTcBwdBlockN * kTcBwdBlockM) +
         sizeof(float) * 4 * kTcBwdBlockM;
}

template <int D>
__device__ inline TcKeyTile carve_tc_key_tile(void* base) {
  std::uint16_t* sh = static_cast<std::uint16_t*>(base);
  TcKeyTile t;
  t.k = sh;
  t.v = t.k + kTcBwdBlockN * D;
  t.q[0] = t.v + kTcBwdBlockN * D;
  t.q[1] = t.q[0] + kTcBwdBlockM * D;
  t.dout[0] = t.q[1] + kTcBwdBlockM * D;
  t.dout[1] = t.dout[0] + kTcBwdBlockM * D;
  t.pt = t.dout[1] + kTcBwdBlockM * D;
  t.dst = t.pt + kTcBwdBlockN * kTcBwdBlockM;
  float* rows = reinterpret_cast<float*>(t.dst + kTcBwdBlockN * kTcBwdBlockM);
  t.lse[0] = rows;
  t.lse[1] = rows + kTcBwdBlockM;
  t.drow[0] = rows + 2 * kTcBwdBlockM;
  t.drow[1] = rows + 3 * kTcBwdBlockM;
  return t;
}

// The shared memory of a query-block kernel (b16 elements): Q and dO of the
// kTcFusedBlockM-row query block, K of a key tile double buffered, V of a
// key tile once (its A fragments are taken into registers at the start of
// each step, after which the buffer is refilled with the next tile's while
// the step runs), P^T and dS^T of each 16-row sub-step in the storage's
// b16; then the f32 LSE and D_i rows of the block. 44 KiB at D = 128 (a
// second V buffer would make it 52 KiB, past the default dynamic limit).
struct TcQueryTile {
  std::uint16_t *q, *dout, *k[2], *v;
  std::uint16_t *pt[kTcSubSteps], *dst[kTcSubSteps];  // (kTcBwdBlockN, kTcBwdBlockM) each
  float *lse, *drow;
};

template <int D>
__host__ __device__ constexpr size_t tc_query_tile_bytes() {
  return sizeof(std::uint16_t) * size_t(2 * kTcFusedBlockM * D + 3 * kTcBwdBlockN * D +
                                        2 * kTcSubSteps * kTcBwdBlockN * kTcBwdBlockM) +
         sizeof(float) * 2 * kTcFusedBlockM;
}

template <int D>
__device__ inline TcQueryTile carve_tc_query_tile(void* base) {
  std::uint16_t* sh = static_cast<std::uint16_t*>(base);
  TcQueryTile t;
  t.q = sh;
  t.dout = t.q + kTcFusedBlockM * D;
  t.k[0] = t.dout + kTcFusedBlockM * D;
  t.k[1] = t.k[0] + kTcBwdBlockN * D;
  t.v = t.k[1] + kTcBwdBlockN * D;
  std::uint16_t* pair = t.v + kTcBwdBlockN * D;
  for (int s = 0; s < kTcSubSteps; ++s) {
    t.pt[s] = pair + (2 * s) * kTcBwdBlockN * kTcBwdBlockM;
    t.dst[s] = pair + (2 * s + 1) * kTcBwdBlockN * kTcBwdBlockM;
  }
  float* rows = reinterpret_cast<float*>(pair + 2 * kTcSubSteps * kTcBwdBlockN * kTcBwdBlockM);
  t.lse = rows;
  t.drow = rows + kTcFusedBlockM;
  return t;
}

// The A fragments of this warp's 16 rows of a (kTcBwdBlockN, D) key tile
// (K or V), for every k-step over d: ldmatrix without .trans.
template <int D>
__device__ inline void load_key_fragments(std::uint32_t (&f)[D / 16][4], const std::uint16_t* tile,
                                          int row0) {
  const int lane = threadIdx.x % 32, mat = lane / 8;
  const int row = row0 + 8 * (mat % 2) + lane % 8, col = 8 * (mat / 2);
  for (int ks = 0; ks < D / 16; ++ks) tc::ldmatrix<4>(f[ks], tile + row * D + ks * 16 + col);
}

// x (16 rows, 8 columns) = A B^T over d: A's fragments `a` (16 key rows),
// B's rows the 8 query rows [col0, col0 + 8) of the (kTcBwdBlockM, D)
// tile `rows` (Q or dO), whose fragment is ldmatrix without .trans.
template <class T, int D>
__device__ inline void key_rows_times(float (&x)[4], const std::uint32_t (&a)[D / 16][4],
                                      const std::uint16_t* rows, int col0) {
  const int l16 = threadIdx.x % 16;
  for (int e = 0; e < 4; ++e) x[e] = 0.f;
  for (int ks = 0; ks < D / 16; ++ks) {
    std::uint32_t bf[2];
    tc::ldmatrix<2>(bf, rows + (col0 + l16 % 8) * D + ks * 16 + 8 * (l16 / 8));
    const float c[4] = {x[0], x[1], x[2], x[3]};
    tc::mma_m16n8k16<T>(x, a[ks], bf, c);
  }
}

// One (key tile, query tile) pair as the steps below read it, wherever the
// kernel keeps its tiles: the query tile's Q, dO (kTcBwdBlockM, D) and
// rows' LSE and D_i, the key tile's K (kTcBwdBlockN, D), and the pair's
// P^T and dS^T. A key-tile kernel (bwd_tc) double-buffers the query side,
// a query-tile kernel (fused_v1_tc) the key side.
struct TcPair {
  const std::uint16_t *q, *dout, *k;
  const float *lse, *drow;
  std::uint16_t *pt, *dst;
};

// Step 1 of a pair: this warp's 16 keys by 8 queries of S^T = K Q^T and
// dP^T = V dO^T on tensor cores, then P^T = exp(scale S^T - lse) (0 where
// masked) and dS^T = P^T (dP^T - D_i) in f32, each rounded to the b16
// storage T into t.pt and t.dst (the mma operands of step 2). A row with no visible key
// is masked everywhere, so it contributes nothing. Ends before the barrier
// that publishes t.pt and t.dst.
template <class T, int D, bool kCausal>
__device__ inline void probabilities_and_ds_tc(const TcPair& t,
                                               const std::uint32_t (&kf)[D / 16][4],
                                               const std::uint32_t (&vf)[D / 16][4], int i0, int j0,
                                               const AttnDims& a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = lane / 4, tig = lane % 4;
  const int key0 = 16 * (warp % 2), query0 = 8 * (warp / 2);
  float s[4], dp[4];
  key_rows_times<T, D>(s, kf, t.q, query0);
  key_rows_times<T, D>(dp, vf, t.dout, query0);
  for (int e = 0; e < 4; ++e) {
    const int key = key0 + grp + 8 * (e / 2), query = query0 + 2 * tig + e % 2;
    const int i = i0 + query, j = j0 + key;
    const bool visible = i < a.N && j < a.M && sees(kCausal, i, j, a.N, a.M);
    const float p = visible ? expf(a.scale * s[e] - t.lse[query]) : 0.f;
    const float ds = p * (dp[e] - t.drow[query]);
    t.pt[key * kTcBwdBlockM + query] = b16_bits<T>(p);
    t.dst[key * kTcBwdBlockM + query] = b16_bits<T>(ds);
  }
}

// Step 2 of a pair (after the barrier that publishes P^T and dS^T):
// dK / scale += dS^T Q (wt = t.dst, x = t.q) and dV += P^T dO (t.pt,
// t.dout). acc (16 keys of this warp, D / 2 columns) += W^T X over the
// pair's queries: W^T (kTcBwdBlockN, kTcBwdBlockM) in b16 (t.pt or
// t.dst), the A fragment by ldmatrix without .trans; X (kTcBwdBlockM, D)
// the query tile (dO or Q), B[k = query][n = d] row-major, so ldmatrix
// .trans.
template <class T, int D>
__device__ inline void accumulate_key_rows(float (&acc)[D / 16][4], const std::uint16_t* wt,
                                           const std::uint16_t* x) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, mat = lane / 8;
  const int key0 = 16 * (warp % 2), dt0 = (warp / 2) * (D / 16);
  std::uint32_t af[4];
  tc::ldmatrix<4>(af, wt + (key0 + 8 * (mat % 2) + lane % 8) * kTcBwdBlockM + 8 * (mat / 2));
  for (int dt = 0; dt < D / 16; ++dt) {
    std::uint32_t bf[2];
    tc::ldmatrix<2, true>(bf, x + (lane % 16) * D + (dt0 + dt) * 8);
    const float c[4] = {acc[dt][0], acc[dt][1], acc[dt][2], acc[dt][3]};
    tc::mma_m16n8k16<T>(acc[dt], af, bf, c);
  }
}

// dq (the pair's 16 queries, this warp's quarter of d) += dS K over the
// key tile: dS's A fragment from t.dst ([key][query], so ldmatrix .trans),
// B[k = key][n = d] = K row-major, ldmatrix .trans.
template <class T, int D>
__device__ inline void accumulate_dq_tc(float (&dq)[D / 32][4], const TcPair& t) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, mat = lane / 8;
  const int dt0 = warp * (D / 32);
  for (int ks = 0; ks < kTcBwdBlockN / 16; ++ks) {
    std::uint32_t af[4];
    tc::ldmatrix<4, true>(
        af, t.dst + (ks * 16 + 8 * (mat / 2) + lane % 8) * kTcBwdBlockM + 8 * (mat % 2));
    for (int dt = 0; dt < D / 32; ++dt) {
      std::uint32_t bf[2];
      tc::ldmatrix<2, true>(bf, t.k + (ks * 16 + lane % 16) * D + (dt0 + dt) * 8);
      const float c[4] = {dq[dt][0], dq[dt][1], dq[dt][2], dq[dt][3]};
      tc::mma_m16n8k16<T>(dq[dt], af, bf, c);
    }
  }
}

// dq_acc (B, H, N, D) contiguous f32 += this warp's dq fragments, rows
// past `rows` skipped: one atomicAdd per (query row, d) of the pair.
template <int D>
__device__ inline void atomic_add_dq_tc(float* dq_acc, const float (&dq)[D / 32][4], int b, int h,
                                        int i0, int rows, const AttnDims& a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = lane / 4, tig = lane % 4;
  for (int dt = 0; dt < D / 32; ++dt)
    for (int e = 0; e < 4; ++e) {
      const int r = grp + 8 * (e / 2), d = (warp * (D / 32) + dt) * 8 + 2 * tig + e % 2;
      if (r < rows)
        atomicAdd(dq_acc + ((static_cast<long long>(b) * a.H + h) * a.N + i0 + r) * D + d,
                  dq[dt][e]);
    }
}

// acc_g (B, Hkv, M, D) contiguous f32 += this warp's key-row fragments
// (its 16 keys, its half of d), keys past `keys` skipped: one atomicAdd
// per (key, d) of the pair.
template <int D>
__device__ inline void atomic_add_key_rows_tc(float* acc_g, const float (&acc)[D / 16][4], int b,
                                              int g, int j0, int keys, const AttnDims& a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = lane / 4, tig = lane % 4;
  const int key0 = 16 * (warp % 2), dt0 = (warp / 2) * (D / 16);
  for (int dt = 0; dt < D / 16; ++dt)
    for (int e = 0; e < 4; ++e) {
      const int key = key0 + grp + 8 * (e / 2), d = (dt0 + dt) * 8 + 2 * tig + e % 2;
      if (key < keys)
        atomicAdd(acc_g + ((static_cast<long long>(b) * a.Hkv + g) * a.M + j0 + key) * D + d,
                  acc[dt][e]);
    }
}

// (B, H, N, D) of storage T <- factor * this warp's dq fragments (the
// query tile's rows, its quarter of d), rows past `rows` skipped.
template <class T, int D>
__device__ inline void store_query_rows_tc(const Tensor4& out, const float (&dq)[D / 32][4], int b,
                                           int h, int i0, int rows, float factor) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = lane / 4, tig = lane % 4;
  T* o = static_cast<T*>(out.data);
  for (int dt = 0; dt < D / 32; ++dt)
    for (int e = 0; e < 4; ++e) {
      const int r = grp + 8 * (e / 2), d = (warp * (D / 32) + dt) * 8 + 2 * tig + e % 2;
      if (r < rows) o[at(out.s, b, h, i0 + r, d)] = from_f32<T>(factor * dq[dt][e]);
    }
}

// (B, Hkv, M, D) of storage T <- factor * this warp's key-row fragments
// (its 16 keys, its half of d), keys past `keys` skipped.
template <class T, int D>
__device__ inline void store_key_rows_tc(const Tensor4& out, const float (&acc)[D / 16][4], int b,
                                         int g, int j0, int keys, float factor) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, grp = lane / 4, tig = lane % 4;
  const int key0 = 16 * (warp % 2), dt0 = (warp / 2) * (D / 16);
  T* o = static_cast<T*>(out.data);
  for (int dt = 0; dt < D / 16; ++dt)
    for (int e = 0; e < 4; ++e) {
      const int key = key0 + grp + 8 * (e / 2), d = (dt0 + dt) * 8 + 2 * tig + e % 2;
      if (key < keys) o[at(out.s, b, g, j0 + key, d)] = from_f32<T>(factor * acc[dt][e]);
    }
}

// ---- the backward's kernels, composed of the steps above ------------------------

// What the backward kernels read and write, from attention.bwd's or
// attention.fwdbwd's arguments (lse: the given one, or the one the fused
// ONF's forward stored).
struct TcBackwardArgs {
  AttnDims a;
  Tensor4 q, k, v, dout;
  Tensor3 lse;
  Tensor4 dq, dk, dv;
};

// One block of 4 warps per (32-key tile, kv head), over the group's heads
// and the visible 16-row query tiles, Q and dO of the next pair in flight
// by cp.async while the current one is used: dV, and dK where kDK, in each
// warp's fragments, written once; dQ's partial dS K of each pair added to
// dq_acc (B, H, N, D) f32 by atomics where kAtomicDQ (FlashAttention-2's
// form). D_i from d_rows (B, H, N) f32. grid (key tiles, Hkv, B).
template <class T, int D, bool kCausal, bool kDK, bool kAtomicDQ>
__global__ void tc_key_tile_kernel(TcBackwardArgs args, const float* d_rows, float* dq_acc) {
  const AttnDims a = args.a;
  const TcKeyTile t = carve_tc_key_tile<D>(smem);
  const int kt = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  const int j0 = kt * kTcBwdBlockN, keys = rows_in(kt, a.M, kTcBwdBlockN);
  const int group = a.H / a.Hkv, query_tiles = ceil_div(a.N, kTcBwdBlockM);
  const T* q_g = static_cast<const T*>(args.q.data);
  const T* dout_g = static_cast<const T*>(args.dout.data);
  const T* lse_g = static_cast<const T*>(args.lse.data);

  // The visible query tiles of this key tile are a suffix (a later row sees
  // more keys); the pairs are (h, qt) for the group's heads, in order.
  int qt_first = 0;
  while (qt_first < query_tiles &&
         !tile_visible(kCausal, qt_first, kt, a.N, a.M, kTcBwdBlockM, kTcBwdBlockN))
    ++qt_first;
  const int per_head = query_tiles - qt_first, pairs = group * per_head;
  auto head_of = [&](int pair) { return g * group + pair / per_head; };
  auto tile_of = [&](int pair) { return qt_first + pair % per_head; };

  // Q and dO of pair `pair` into buffer pair % 2 by cp.async (the caller
  // commits), its LSE and D_i rows by plain loads.
  auto stage_pair = [&](int pair) {
    const int buf = pair % 2, h = head_of(pair), i0 = tile_of(pair) * kTcBwdBlockM;
    const int rows = rows_in(tile_of(pair), a.N, kTcBwdBlockM);
    stage_tile<D>(t.q[buf], q_g, args.q.s, b, h, i0, rows, kTcBwdBlockM);
    stage_tile<D>(t.dout[buf], dout_g, args.dout.s, b, h, i0, rows, kTcBwdBlockM);
    const int r = threadIdx.x % kTcBwdBlockM;
    if (threadIdx.x < kTcBwdBlockM)
      t.lse[buf][r] = r < rows ? to_f32(lse_g[at(args.lse.s, b, h, i0 + r)]) : 0.f;
    else if (threadIdx.x < 2 * kTcBwdBlockM)
      t.drow[buf][r] =
          r < rows ? d_rows[(static_cast<long long>(b) * a.H + h) * a.N + i0 + r] : 0.f;
  };

  // Stage 0: K and V of the key tile with the first pair's tiles.
  stage_tile<D>(t.k, static_cast<const T*>(args.k.data), args.k.s, b, g, j0, keys, kTcBwdBlockN);
  stage_tile<D>(t.v, static_cast<const T*>(args.v.data), args.v.s, b, g, j0, keys, kTcBwdBlockN);
  if (pairs > 0) stage_pair(0);
  tc::cp_async_commit_group();

  const int warp = threadIdx.x / 32;
  std::uint32_t kf[D / 16][4], vf[D / 16][4];    // this warp's 16 keys of K and V, A fragments
  float dk[D / 16][4] = {}, dv[D / 16][4] = {};  // dK / scale and dV: its keys, its half of d
  for (int pair = 0; pair < pairs; ++pair) {
    const int buf = pair % 2, h = head_of(pair), i0 = tile_of(pair) * kTcBwdBlockM;
    [[maybe_unused]] const int rows = rows_in(tile_of(pair), a.N, kTcBwdBlockM);
    if (pair + 1 < pairs) stage_pair(pair + 1);  // the next pair flies while this one is used
    tc::cp_async_commit_group();                 // possibly empty: wait_group<1> stays right
    tc::cp_async_wait_group<1>();                // this pair's tiles (and K, V) have landed
    __syncthreads();
    if (pair == 0) {
      load_key_fragments<D>(kf, t.k, 16 * (warp % 2));
      load_key_fragments<D>(vf, t.v, 16 * (warp % 2));
    }
    const TcPair view{t.q[buf], t.dout[buf], t.k, t.lse[buf], t.drow[buf], t.pt, t.dst};
    probabilities_and_ds_tc<T, D, kCausal>(view, kf, vf, i0, j0, a);
    __syncthreads();  // P^T and dS^T of the pair are in shared memory
    if constexpr (kDK) accumulate_key_rows<T, D>(dk, view.dst, view.q);  // dK / scale += dS^T Q
    accumulate_key_rows<T, D>(dv, view.pt, view.dout);                   // dV += P^T dO
    if constexpr (kAtomicDQ) {
      float dq[D / 32][4] = {};
      accumulate_dq_tc<T, D>(dq, view);
      atomic_add_dq_tc<D>(dq_acc, dq, b, h, i0, rows, a);
    }
    __syncthreads();  // every warp is done with buffer `buf`, P^T and dS^T before they are refilled
  }
  tc::cp_async_wait_group<0>();  // no copy outlives the block (none when pairs > 0)
  if constexpr (kDK) store_key_rows_tc<T, D>(args.dk, dk, b, g, j0, keys, a.scale);
  store_key_rows_tc<T, D>(args.dv, dv, b, g, j0, keys, 1.f);
}

// One block of 4 warps per (32-row query block, head), over the visible
// 32-key tiles: dQ in each warp's fragments, written once; dK
// (kAtomicDK) and dV (kAtomicDV) of each key tile summed in fragments over
// the block's two 16-row sub-steps (each one (key tile, 16-row tile) pair
// of bwd_tc's steps) and added to f32 accumulators (B, Hkv, M, D) by
// atomics once per (block, key, d): a 32-row block is what makes the fused
// ONF's dK and dV atomics twice bwd_tc's dQ ones, whose key tiles are 32
// keys (docs/cuda.md#tensor-core-onfs). K of the next key tile flies by
// cp.async into the other buffer, V into its one buffer once every warp
// holds the current V's fragments. grid (query blocks, H, B).
template <class T, int D, bool kCausal, bool kAtomicDK, bool kAtomicDV>
__global__ void tc_query_tile_kernel(TcBackwardArgs args, const float* d_rows, float* dk_acc,
                                     float* dv_acc) {
  const AttnDims a = args.a;
  const TcQueryTile t = carve_tc_query_tile<D>(smem);
  const int block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int g = h / (a.H / a.Hkv);
  const int i0 = block * kTcFusedBlockM, rows = rows_in(block, a.N, kTcFusedBlockM);
  const T* k_g = static_cast<const T*>(args.k.data);
  const T* v_g = static_cast<const T*>(args.v.data);

  // The visible key tiles are a prefix (a later key is seen by fewer rows);
  // the block sees a key tile when its last row does.
  int key_tiles = 0;
  while (key_tiles < ceil_div(a.M, kTcBwdBlockN) &&
         tile_visible(kCausal, block, key_tiles, a.N, a.M, kTcFusedBlockM, kTcBwdBlockN))
    ++key_tiles;
  // Sub-step s (rows [i0 + 16 s, i0 + 16 s + 16)) runs on key tile kt
  // where it has rows and sees the tile: the (16-row tile, key tile) pairs
  // bwd_tc visits. The same for every thread of the block.
  auto sub_step_runs = [&](int s, int kt) {
    return s * kTcBwdBlockM < rows &&
           tile_visible(kCausal, kTcSubSteps * block + s, kt, a.N, a.M, kTcBwdBlockM, kTcBwdBlockN);
  };
  auto stage_key_tile = [&](int kt) {  // K into buffer kt % 2, V into its one buffer
    const int keys = rows_in(kt, a.M, kTcBwdBlockN);
    stage_tile<D>(t.k[kt % 2], k_g, args.k.s, b, g, kt * kTcBwdBlockN, keys, kTcBwdBlockN);
    stage_tile<D>(t.v, v_g, args.v.s, b, g, kt * kTcBwdBlockN, keys, kTcBwdBlockN);
  };

  // Stage 0: Q, dO and the rows' LSE (as the forward stored it) and D_i,
  // with K, V of key tile 0.
  stage_tile<D>(t.q, static_cast<const T*>(args.q.data), args.q.s, b, h, i0, rows, kTcFusedBlockM);
  stage_tile<D>(t.dout, static_cast<const T*>(args.dout.data), args.dout.s, b, h, i0, rows,
                kTcFusedBlockM);
  const int r = threadIdx.x % kTcFusedBlockM;
  if (threadIdx.x < kTcFusedBlockM)
    t.lse[r] =
        r < rows ? to_f32(static_cast<const T*>(args.lse.data)[at(args.lse.s, b, h, i0 + r)]) : 0.f;
  else if (threadIdx.x < 2 * kTcFusedBlockM)
    t.drow[r] = r < rows ? d_rows[(static_cast<long long>(b) * a.H + h) * a.N + i0 + r] : 0.f;
  if (key_tiles > 0) stage_key_tile(0);
  tc::cp_async_commit_group();

  const int warp = threadIdx.x / 32;
  float dq[kTcSubSteps][D / 32][4] =
      {};  // dQ / scale: each sub-step's rows, this warp's quarter of d
  for (int kt = 0; kt < key_tiles; ++kt) {
    const int buf = kt % 2, j0 = kt * kTcBwdBlockN;
    [[maybe_unused]] const int keys = rows_in(kt, a.M, kTcBwdBlockN);
    tc::cp_async_wait_group<0>();  // key tile kt (and Q, dO) has landed
    __syncthreads();
    std::uint32_t kf[D / 16][4], vf[D / 16][4];
    load_key_fragments<D>(kf, t.k[buf], 16 * (warp % 2));
    load_key_fragments<D>(vf, t.v, 16 * (warp % 2));
    __syncthreads();  // every warp holds V's fragments: its buffer may be refilled
    if (kt + 1 < key_tiles) stage_key_tile(kt + 1);  // flies while this tile is used
    tc::cp_async_commit_group();

    TcPair view[kTcSubSteps];
    for (int s = 0; s < kTcSubSteps; ++s) {
      view[s] = {t.q + s * kTcBwdBlockM * D,
                 t.dout + s * kTcBwdBlockM * D,
                 t.k[buf],
                 t.lse + s * kTcBwdBlockM,
                 t.drow + s * kTcBwdBlockM,
                 t.pt[s],
                 t.dst[s]};
      if (sub_step_runs(s, kt))
        probabilities_and_ds_tc<T, D, kCausal>(view[s], kf, vf, i0 + s * kTcBwdBlockM, j0, a);
    }
    __syncthreads();  // P^T and dS^T of both sub-steps are in shared memory
    float dk[D / 16][4] = {}, dv[D / 16][4] = {};  // the block's sums: this warp's keys, half of d
    for (int s = 0; s < kTcSubSteps; ++s) {
      if (!sub_step_runs(s, kt)) continue;
      if constexpr (kAtomicDK) accumulate_key_rows<T, D>(dk, view[s].dst, view[s].q);    // dS^T Q
      if constexpr (kAtomicDV) accumulate_key_rows<T, D>(dv, view[s].pt, view[s].dout);  // P^T dO
      accumulate_dq_tc<T, D>(dq[s], view[s]);
    }
    if constexpr (kAtomicDK) atomic_add_key_rows_tc<D>(dk_acc, dk, b, g, j0, keys, a);
    if constexpr (kAtomicDV) atomic_add_key_rows_tc<D>(dv_acc, dv, b, g, j0, keys, a);
    // No barrier here: the next step's two barriers come before its P^T,
    // dS^T writes and before K buffer `buf` is refilled.
  }
  tc::cp_async_wait_group<0>();  // no copy outlives the block (none when key_tiles > 0)
  for (int s = 0; s < kTcSubSteps; ++s)
    if (s * kTcBwdBlockM < rows)
      store_query_rows_tc<T, D>(args.dq, dq[s], b, h, i0 + s * kTcBwdBlockM,
                                rows - s * kTcBwdBlockM, a.scale);
}

// The launches of the two kernels, D a template argument here.
template <class T, bool kCausal, bool kDK, bool kAtomicDQ>
void launch_tc_key_tiles(const TcBackwardArgs& args, const float* d_rows, float* dq_acc) {
  const AttnDims& a = args.a;
  const dim3 grid(unsigned(ceil_div(a.M, kTcBwdBlockN)), unsigned(a.Hkv), unsigned(a.B));
  static_assert(tc_key_tile_bytes<128>() <= 48 * 1024, "within the default dynamic shared limit");
  if (a.D == 64)
    MOACERT_LAUNCH((tc_key_tile_kernel<T, 64, kCausal, kDK, kAtomicDQ>), grid, dim3(kTcBwdThreads),
                   tc_key_tile_bytes<64>(), args, d_rows, dq_acc);
  else
    MOACERT_LAUNCH((tc_key_tile_kernel<T, 128, kCausal, kDK, kAtomicDQ>), grid, dim3(kTcBwdThreads),
                   tc_key_tile_bytes<128>(), args, d_rows, dq_acc);
}

template <class T, bool kCausal, bool kAtomicDK, bool kAtomicDV>
void launch_tc_query_tiles(const TcBackwardArgs& args, const float* d_rows, float* dk_acc,
                           float* dv_acc) {
  const AttnDims& a = args.a;
  const dim3 grid(unsigned(ceil_div(a.N, kTcFusedBlockM)), unsigned(a.H), unsigned(a.B));
  static_assert(tc_query_tile_bytes<128>() <= 48 * 1024, "within the default dynamic shared limit");
  if (a.D == 64)
    MOACERT_LAUNCH((tc_query_tile_kernel<T, 64, kCausal, kAtomicDK, kAtomicDV>), grid,
                   dim3(kTcBwdThreads), tc_query_tile_bytes<64>(), args, d_rows, dk_acc, dv_acc);
  else
    MOACERT_LAUNCH((tc_query_tile_kernel<T, 128, kCausal, kAtomicDK, kAtomicDV>), grid,
                   dim3(kTcBwdThreads), tc_query_tile_bytes<128>(), args, d_rows, dk_acc, dv_acc);
}

// The head widths, storage and strides the tensor-core ONFs are compiled
// for; a refusal in words (std::invalid_argument) outside them.
inline void check_tc_backward(const char* onf, Storage storage, const TcBackwardArgs& args) {
  if (storage == Storage::f32)
    throw std::invalid_argument(std::string(onf) +
                                ": bf16 or f16 storage only (tensor-core mma inputs)");
  if (args.a.D != 64 && args.a.D != 128)
    throw std::invalid_argument(std::string(onf) + ": D = " + std::to_string(args.a.D) +
                                " is not in {64, 128}, the head widths it is compiled for");
  if (!chunked_rows(args.q.s) || !chunked_rows(args.k.s) || !chunked_rows(args.v.s) ||
      !chunked_rows(args.dout.s))
    throw std::invalid_argument(std::string(onf) +
                                ": q, k, v, do need unit d strides and 16-byte rows");
}

// The prologue the three fused tensor-core ONFs (fused_v1_tc, fused_v3_tc,
// fused_det_tc) share, written once so that they refuse, allocate and run
// their forward alike. Constructed, it has refused a problem outside the
// envelope (std::invalid_argument, before anything is allocated) and
// allocated D_i's rows and the f32 accumulators of the ONF's atomics (dK's
// where dk_acc, dV's where dv_acc; null otherwise). forward() returns the
// first allocation error, or launches flash_tc's forward (O and LSE to
// storage) and D_i = dO_i . O_i from the stored O (whose launch error the
// ONF's last cudaGetLastError reports, as for its own kernels); the
// backward kernels then read `tc`, d_rows(), dk_acc(), dv_acc().
class TcFusedPrologue {
 public:
  TcFusedPrologue(const char* onf, const FwdBwdArgs& args, bool dk_acc, bool dv_acc)
      : tc{args.a, args.q, args.k, args.v, args.dout, args.lse, args.dq, args.dk, args.dv},
        args_(args) {
    check_tc_backward(onf, args.storage, tc);
    const AttnDims& a = args.a;
    const long long kv = static_cast<long long>(a.B) * a.Hkv * a.M * a.D;
    d_rows_.emplace(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
    if (dk_acc) dk_acc_.emplace(kv, cuda_scratch::kDkAcc);
    if (dv_acc) dv_acc_.emplace(kv, cuda_scratch::kDvAcc);
  }

  int forward() const {
    for (const std::optional<DeviceBuffer>* buffer : {&d_rows_, &dk_acc_, &dv_acc_})
      if (*buffer && (*buffer)->error()) return (*buffer)->error();
    const AttnDims& a = args_.a;
    if (int e = launch_flash_tc({a, args_.storage, args_.q, args_.k, args_.v, args_.o, args_.lse}))
      return e;
    return dispatch_b16(args_.storage, a.causal, [&](auto t, auto) {
      launch_row_dot<decltype(t)>(a, args_.dout, args_.o, d_rows_->get());
      return 0;
    });
  }
  const float* d_rows() const { return d_rows_->get(); }
  float* dk_acc() const { return dk_acc_ ? dk_acc_->get() : nullptr; }
  float* dv_acc() const { return dv_acc_ ? dv_acc_->get() : nullptr; }

  const TcBackwardArgs tc;

 private:
  const FwdBwdArgs& args_;
  std::optional<DeviceBuffer> d_rows_, dk_acc_, dv_acc_;
};

}  // namespace moacert::kernels::MOACERT_CUDA_NS
