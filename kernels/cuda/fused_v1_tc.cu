// attention.fwdbwd, fused_v1_tc: the MoA papers' first fused ONF on tensor
// cores, bf16 storage, f32 accumulation. The forward is flash_tc's
// (launch_flash_tc: O and LSE to storage), then D_i = dO_i . O_i
// (row_dot_kernel), then one block of 4 warps per (16-row query tile,
// head) walks the visible 32-key tiles, K and V of the next tile in flight
// by cp.async while the current one is used, and runs bwd_tc's per-pair
// steps (attention_tc_passes.cuh): P^T and dS^T on mma, rounded to bf16;
// the pair's dK = dS^T Q and dV = P^T dO added to f32 accumulators by
// atomics, 2 per (visible pair, key, d); dQ kept in fragments and written
// once. A last kernel rounds each accumulator to storage. Unlike the SIMT
// fused_v1, the forward is its own launch (its 64-row tiles are not the
// backward's 16-row ones) and the backward's P is recomputed from the
// stored bf16 LSE.
#include "kernels/cuda/attention_passes.cuh"
#include "kernels/cuda/attention_tc_passes.cuh"

#include <stdexcept>
#include <string>

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

using std::uint32_t;

template <class T, int D, bool kCausal>
__global__ void fused_v1_tc_kernel(FwdBwdArgs args, const float* d_rows, float* dk_acc,
                                   float* dv_acc) {
  const AttnDims a = args.a;
  const TcQueryTile t = carve_tc_query_tile<D>(smem);
  const int q_tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int g = h / (a.H / a.Hkv);
  const int i0 = q_tile * kTcBwdBlockM, rows = rows_in(q_tile, a.N, kTcBwdBlockM);
  const T* k_g = static_cast<const T*>(args.k.data);
  const T* v_g = static_cast<const T*>(args.v.data);

  // The visible key tiles are a prefix (a later key is seen by fewer rows).
  int key_tiles = 0;
  while (key_tiles < ceil_div(a.M, kTcBwdBlockN) &&
         tile_visible(kCausal, q_tile, key_tiles, a.N, a.M, kTcBwdBlockM, kTcBwdBlockN))
    ++key_tiles;

  // Stage 0: Q, dO and the rows' LSE (as the forward stored it) and D_i,
  // with K, V of key tile 0.
  stage_tile<D>(t.q, static_cast<const T*>(args.q.data), args.q.s, b, h, i0, rows, kTcBwdBlockM);
  stage_tile<D>(t.dout, static_cast<const T*>(args.dout.data), args.dout.s, b, h, i0, rows,
                kTcBwdBlockM);
  const int r = threadIdx.x % kTcBwdBlockM;
  if (threadIdx.x < kTcBwdBlockM)
    t.lse[r] =
        r < rows ? to_f32(static_cast<const T*>(args.lse.data)[at(args.lse.s, b, h, i0 + r)]) : 0.f;
  else if (threadIdx.x < 2 * kTcBwdBlockM)
    t.drow[r] = r < rows ? d_rows[(static_cast<long long>(b) * a.H + h) * a.N + i0 + r] : 0.f;
  if (key_tiles > 0) {
    const int keys = rows_in(0, a.M, kTcBwdBlockN);
    stage_tile<D>(t.k[0], k_g, args.k.s, b, g, 0, keys, kTcBwdBlockN);
    stage_tile<D>(t.v[0], v_g, args.v.s, b, g, 0, keys, kTcBwdBlockN);
  }
  tc::cp_async_commit_group();

  const int warp = threadIdx.x / 32;
  float dq[D / 32][4] = {};  // dQ / scale: the tile's rows, this warp's quarter of d
  for (int kt = 0; kt < key_tiles; ++kt) {
    const int buf = kt % 2, j0 = kt * kTcBwdBlockN, keys = rows_in(kt, a.M, kTcBwdBlockN);
    if (kt + 1 < key_tiles) {  // the next key tile flies while this one is used
      const int next = kt + 1, next_keys = rows_in(next, a.M, kTcBwdBlockN);
      stage_tile<D>(t.k[next % 2], k_g, args.k.s, b, g, next * kTcBwdBlockN, next_keys,
                    kTcBwdBlockN);
      stage_tile<D>(t.v[next % 2], v_g, args.v.s, b, g, next * kTcBwdBlockN, next_keys,
                    kTcBwdBlockN);
    }
    tc::cp_async_commit_group();   // possibly empty: wait_group<1> stays right
    tc::cp_async_wait_group<1>();  // key tile kt (and Q, dO) has landed
    __syncthreads();
    uint32_t kf[D / 16][4], vf[D / 16][4];
    load_key_fragments<D>(kf, t.k[buf], 16 * (warp % 2));
    load_key_fragments<D>(vf, t.v[buf], 16 * (warp % 2));
    const TcPair view{t.q, t.dout, t.k[buf], t.lse, t.drow, t.pt, t.dst};
    probabilities_and_ds_tc<D, kCausal>(view, kf, vf, i0, j0, a);
    __syncthreads();  // P^T and dS^T of the pair are in shared memory
    float dk[D / 16][4] = {}, dv[D / 16][4] = {};
    accumulate_dk_dv_tc<D>(view, dk, dv);
    atomic_add_key_rows_tc<D>(dk_acc, dk, b, g, j0, keys, a);
    atomic_add_key_rows_tc<D>(dv_acc, dv, b, g, j0, keys, a);
    accumulate_dq_tc<D>(dq, view);
    __syncthreads();  // every warp is done with buffer `buf`, P^T and dS^T before they are refilled
  }
  tc::cp_async_wait_group<0>();  // no copy outlives the block (none when key_tiles > 0)
  store_query_rows_tc<T, D>(args.dq, dq, b, h, i0, rows, a.scale);
}

template <class T, int D, bool kCausal>
void launch_query_tiles(const FwdBwdArgs& args, const float* d_rows, float* dk_acc, float* dv_acc) {
  const AttnDims& a = args.a;
  static_assert(tc_query_tile_bytes<D>() <= 48 * 1024, "within the default dynamic shared limit");
  const dim3 grid(unsigned(ceil_div(a.N, kTcBwdBlockM)), unsigned(a.H), unsigned(a.B));
  MOACERT_LAUNCH((fused_v1_tc_kernel<T, D, kCausal>), grid, dim3(kTcBwdThreads),
                 tc_query_tile_bytes<D>(), args, d_rows, dk_acc, dv_acc);
}

}  // namespace

int launch_fused_v1_tc(const FwdBwdArgs& args) {
  const AttnDims& a = args.a;
  if (!chunked_rows(args.dout.s))
    throw std::invalid_argument("fused_v1_tc: do needs unit d strides and 16-byte rows");
  const long long kv = static_cast<long long>(a.B) * a.Hkv * a.M * a.D;
  DeviceBuffer d_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
  DeviceBuffer dk_acc(kv, cuda_scratch::kDkAcc), dv_acc(kv, cuda_scratch::kDvAcc);
  if (int e = first_error(d_rows.error(), first_error(dk_acc.error(), dv_acc.error()))) return e;
  // flash_tc refuses what is outside the envelope (storage, D, strides)
  if (int e = launch_flash_tc({a, args.storage, args.q, args.k, args.v, args.o, args.lse}))
    return e;
  return dispatch(args.storage, a.causal, [&](auto, auto causal) {
    using T = __nv_bfloat16;
    constexpr bool kCausal = decltype(causal)::value;
    launch_row_dot<T>(a, args.dout, args.o, d_rows.get());
    if (a.D == 64)
      launch_query_tiles<T, 64, kCausal>(args, d_rows.get(), dk_acc.get(), dv_acc.get());
    else
      launch_query_tiles<T, 128, kCausal>(args, d_rows.get(), dk_acc.get(), dv_acc.get());
    launch_scale_to_storage<T>(args.dk, dk_acc.get(), a.B, a.Hkv, a.M, a.D, a.scale);
    launch_scale_to_storage<T>(args.dv, dv_acc.get(), a.B, a.Hkv, a.M, a.D, 1.f);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
