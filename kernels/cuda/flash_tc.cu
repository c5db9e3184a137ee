// attention.fwd on tensor cores (issue #30 item 1): one block of 4 warps
// per (64-row query tile, head); each warp owns 16 query rows. K and V
// tiles of 32 keys are staged in shared memory by cp.async, double
// buffered (tile kt + 1 in flight while tile kt is used), and read into
// mma fragments with ldmatrix; Q's fragments are loaded once. S = Q K^T and
// O += P V are mma.m16n8k16 (T in: bf16 or f16 storage, f32 accumulate); the online softmax
// runs in f32 on the accumulator fragments, its row max and sum reduced
// over the 4 lanes that share a row. Causal (bottom-right) and GQA as
// flash_fwd.cu: fully masked key tiles are never loaded, head h reads kv
// head h / (H / Hkv). Head widths D in {64, 128} (the variant's envelope).
//
// MOACERT_PLANTED_FRAGMENT_LAYOUT (tests/cuda/): V's fragments are loaded
// without .trans, i.e. in the wrong layout; values come out wrong and
// certify must say so.
#include "kernels/cuda/attention_tc_passes.cuh"

#include <cstdint>
#include <stdexcept>
#include <string>

#ifndef MOACERT_PLANTED_FRAGMENT_LAYOUT
#define MOACERT_PLANTED_FRAGMENT_LAYOUT 0
#endif

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

using cuda_tiles::kTcBlockM;
using cuda_tiles::kTcBlockN;
using std::uint16_t;
using std::uint32_t;

constexpr int kTcWarps = kTcBlockM / 16;  // each warp owns 16 query rows
constexpr int kTcThreads = 32 * kTcWarps;

// The shared memory (b16 elements): Q (kTcBlockM, D), then K and V, two
// buffers each of (kTcBlockN, D), all rows 16-byte aligned for ldmatrix.
__host__ __device__ constexpr int q_at() {
  return 0;
}
__host__ __device__ constexpr int k_at(int D, int buf) {
  return kTcBlockM * D + buf * kTcBlockN * D;
}
__host__ __device__ constexpr int v_at(int D, int buf) {
  return kTcBlockM * D + 2 * kTcBlockN * D + buf * kTcBlockN * D;
}
__host__ __device__ constexpr size_t tc_shared_bytes(int D) {
  return sizeof(uint16_t) * size_t(kTcBlockM + 4 * kTcBlockN) * D;
}

template <class T, int D, bool kCausal>
__global__ void flash_tc_kernel(FwdArgs args) {
  const AttnDims a = args.a;
  uint16_t* sh = reinterpret_cast<uint16_t*>(smem);
  const int q_tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int g_kv = h / (a.H / a.Hkv);
  const int i0 = q_tile * kTcBlockM, rows = rows_in(q_tile, a.N, kTcBlockM);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int grp = lane / 4, tig = lane % 4;  // the PTX ISA's groupID, threadID_in_group
  const T* k_g = static_cast<const T*>(args.k.data);
  const T* v_g = static_cast<const T*>(args.v.data);

  int key_tiles = 0;
  while (key_tiles < ceil_div(a.M, kTcBlockN) &&
         tile_visible(kCausal, q_tile, key_tiles, a.N, a.M, kTcBlockM, kTcBlockN))
    ++key_tiles;

  // Stage 0: Q with K, V of tile 0.
  stage_tile<D>(sh + q_at(), static_cast<const T*>(args.q.data), args.q.s, b, h, i0, rows,
                kTcBlockM);
  if (key_tiles > 0) {
    stage_tile<D>(sh + k_at(D, 0), k_g, args.k.s, b, g_kv, 0, rows_in(0, a.M, kTcBlockN),
                  kTcBlockN);
    stage_tile<D>(sh + v_at(D, 0), v_g, args.v.s, b, g_kv, 0, rows_in(0, a.M, kTcBlockN),
                  kTcBlockN);
  }
  tc::cp_async_commit_group();

  // This warp's rows are r0 + grp (fragment entries 0, 1) and r0 + grp + 8
  // (entries 2, 3).
  const int r0 = warp * 16;
  float o[D / 8][4] = {};
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.f, 0.f};
  uint32_t qf[D / 16][4];

  for (int kt = 0; kt < key_tiles; ++kt) {
    const int buf = kt % 2, j0 = kt * kTcBlockN;
    if (kt + 1 < key_tiles) {  // the next tile flies while this one is used
      const int next = kt + 1, keys = rows_in(next, a.M, kTcBlockN);
      stage_tile<D>(sh + k_at(D, next % 2), k_g, args.k.s, b, g_kv, next * kTcBlockN, keys,
                    kTcBlockN);
      stage_tile<D>(sh + v_at(D, next % 2), v_g, args.v.s, b, g_kv, next * kTcBlockN, keys,
                    kTcBlockN);
    }
    tc::cp_async_commit_group();   // possibly empty: wait_group<1> stays right
    tc::cp_async_wait_group<1>();  // tile kt (and Q) has landed
    __syncthreads();
    if (kt == 0) {
      const int mat = lane / 8, row = r0 + 8 * (mat % 2) + lane % 8, col = 8 * (mat / 2);
      for (int ks = 0; ks < D / 16; ++ks)
        tc::ldmatrix<4>(qf[ks], sh + q_at() + row * D + ks * 16 + col);
    }
    const uint16_t* k_s = sh + k_at(D, buf);
    const uint16_t* v_s = sh + v_at(D, buf);

    // S (16 rows, kTcBlockN keys) = Q K^T: B[k = d][n = key] is K's row
    // `key`, so ldmatrix without .trans gives its fragment.
    float s[kTcBlockN / 8][4];
    for (int nt = 0; nt < kTcBlockN / 8; ++nt) {
      for (int e = 0; e < 4; ++e) s[nt][e] = 0.f;
      for (int ks = 0; ks < D / 16; ++ks) {
        uint32_t kf[2];
        const int l16 = lane % 16;
        tc::ldmatrix<2>(kf, k_s + (nt * 8 + l16 % 8) * D + ks * 16 + 8 * (l16 / 8));
        const float c[4] = {s[nt][0], s[nt][1], s[nt][2], s[nt][3]};
        tc::mma_m16n8k16<T>(s[nt], qf[ks], kf, c);
      }
    }

    // Online softmax of this warp's two rows per lane: scale, mask, max,
    // exp, sum; the 4 lanes of a group hold a row between them.
    float alpha[2];
    for (int half = 0; half < 2; ++half) {
      const int i = i0 + r0 + grp + 8 * half;
      float row_max = kNegInf;
      for (int nt = 0; nt < kTcBlockN / 8; ++nt)
        for (int e = 0; e < 2; ++e) {
          const int j = j0 + nt * 8 + 2 * tig + e;
          const bool visible = i < a.N && j < a.M && sees(kCausal, i, j, a.N, a.M);
          float& x = s[nt][2 * half + e];
          x = visible ? a.scale * x : kNegInf;
          row_max = fmaxf(row_max, x);
        }
      row_max = fmaxf(row_max, __shfl_xor_sync(0xffffffffu, row_max, 1));
      row_max = fmaxf(row_max, __shfl_xor_sync(0xffffffffu, row_max, 2));
      const float m_new = fmaxf(m[half], row_max);
      float sum = 0.f;
      if (m_new == kNegInf) {  // no visible key yet: -inf - -inf would be NaN
        alpha[half] = 1.f;
        for (int nt = 0; nt < kTcBlockN / 8; ++nt)
          for (int e = 0; e < 2; ++e) s[nt][2 * half + e] = 0.f;
      } else {
        alpha[half] = expf(m[half] - m_new);  // exp(-inf) = 0 on the first visible tile
        for (int nt = 0; nt < kTcBlockN / 8; ++nt)
          for (int e = 0; e < 2; ++e) {
            float& x = s[nt][2 * half + e];
            x = expf(x - m_new);  // exp(-inf) = 0 for a masked key
            sum += x;
          }
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      l[half] = alpha[half] * l[half] + sum;
      m[half] = m_new;
    }
    for (int dt = 0; dt < D / 8; ++dt)
      for (int e = 0; e < 4; ++e) o[dt][e] *= alpha[e / 2];

    // O += P V: P's accumulator fragments of two key n-tiles are the A
    // fragment of one k-step; B[k = key][n = d] is V row-major, so
    // ldmatrix .trans gives its fragment.
    for (int ks = 0; ks < kTcBlockN / 16; ++ks) {
      const uint32_t pf[4] = {
          pack<T>(s[2 * ks][0], s[2 * ks][1]), pack<T>(s[2 * ks][2], s[2 * ks][3]),
          pack<T>(s[2 * ks + 1][0], s[2 * ks + 1][1]), pack<T>(s[2 * ks + 1][2], s[2 * ks + 1][3])};
      for (int dt = 0; dt < D / 8; ++dt) {
        uint32_t vf[2];
        const uint16_t* v_row = v_s + (ks * 16 + lane % 16) * D + dt * 8;
#if MOACERT_PLANTED_FRAGMENT_LAYOUT
        tc::ldmatrix<2>(vf, v_row);  // planted: V's fragment in A's layout, not transposed
#else
        tc::ldmatrix<2, true>(vf, v_row);
#endif
        const float c[4] = {o[dt][0], o[dt][1], o[dt][2], o[dt][3]};
        tc::mma_m16n8k16<T>(o[dt], pf, vf, c);
      }
    }
    __syncthreads();  // every warp is done with buffer `buf` before it is refilled
  }
  tc::cp_async_wait_group<0>();  // no copy outlives the block (none with key_tiles > 0)

  // O = acc / l and LSE = m + log l; a row that saw no key has O = 0 and
  // LSE = -inf. Each lane stores its fragment entries; lane tig == 0 its
  // rows' LSE.
  T* o_g = static_cast<T*>(args.o.data);
  for (int half = 0; half < 2; ++half) {
    const int r = r0 + grp + 8 * half;
    if (r >= rows) continue;
    for (int dt = 0; dt < D / 8; ++dt)
      for (int e = 0; e < 2; ++e)
        o_g[at(args.o.s, b, h, i0 + r, dt * 8 + 2 * tig + e)] =
            from_f32<T>(l[half] > 0.f ? o[dt][2 * half + e] / l[half] : 0.f);
    if (tig == 0)
      static_cast<T*>(args.lse.data)[at(args.lse.s, b, h, i0 + r)] =
          from_f32<T>(l[half] > 0.f ? m[half] + logf(l[half]) : kNegInf);
  }
}

template <class T, int D, bool kCausal>
int launch_tc(const FwdArgs& args) {
  const AttnDims& a = args.a;
  const size_t bytes = tc_shared_bytes(D);
  static_assert(tc_shared_bytes(D) <= 48 * 1024, "within the default dynamic shared limit");
  const dim3 grid(unsigned(ceil_div(a.N, kTcBlockM)), unsigned(a.H), unsigned(a.B));
  MOACERT_LAUNCH((flash_tc_kernel<T, D, kCausal>), grid, dim3(kTcThreads), bytes, args);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_flash_tc(const FwdArgs& args) {
  const AttnDims& a = args.a;
  if (a.D != 64 && a.D != 128)
    throw std::invalid_argument("flash_tc: D = " + std::to_string(a.D) +
                                " is not in {64, 128}, the head widths it is compiled for");
  if (!chunked_rows(args.q.s) || !chunked_rows(args.k.s) || !chunked_rows(args.v.s))
    throw std::invalid_argument("flash_tc: q, k, v need unit d strides and 16-byte rows");
  return dispatch_b16(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    return a.D == 64 ? launch_tc<T, 64, kCausal>(args) : launch_tc<T, 128, kCausal>(args);
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
