// attention.bwd on tensor cores (issue #30 item 1): FlashAttention-2's
// backward form, bf16 storage, f32 accumulation. After D_i = dO_i . O_i
// (row_dot_kernel, as bwd_fa2), one block of 4 warps per (32-key tile, kv
// head) stages K and V once and walks the group's query heads and the
// visible 16-row query tiles, Q and dO (and the rows' LSE and D_i) of the
// next tile in flight by cp.async while the current one is used. Per pair
// (attention_tc_passes.cuh): S^T = K Q^T and dP^T = V dO^T on mma, P^T and
// dS^T in f32 then rounded to bf16 in shared memory; dV += P^T dO and
// dK += dS^T Q into each warp's accumulator fragments, written once at the
// end; dQ's partial dS K on mma, added to an f32 accumulator by atomics
// (one per visible tile pair, query row and d), which a last kernel rounds
// to storage times the scale. Causal (bottom-right) and GQA as bwd_fa2;
// head widths D in {64, 128} (the variant's envelope).
#include "kernels/cuda/attention_passes.cuh"
#include "kernels/cuda/attention_tc_passes.cuh"

#include <stdexcept>
#include <string>

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

using std::uint32_t;

template <class T, int D, bool kCausal>
__global__ void bwd_tc_kernel(BwdArgs args, const float* d_rows, float* dq_acc) {
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
  uint32_t kf[D / 16][4], vf[D / 16][4];         // this warp's 16 keys of K and V, A fragments
  float dk[D / 16][4] = {}, dv[D / 16][4] = {};  // dK / scale and dV: its keys, its half of d
  for (int pair = 0; pair < pairs; ++pair) {
    const int buf = pair % 2, h = head_of(pair), i0 = tile_of(pair) * kTcBwdBlockM;
    const int rows = rows_in(tile_of(pair), a.N, kTcBwdBlockM);
    if (pair + 1 < pairs) stage_pair(pair + 1);  // the next pair flies while this one is used
    tc::cp_async_commit_group();                 // possibly empty: wait_group<1> stays right
    tc::cp_async_wait_group<1>();                // this pair's tiles (and K, V) have landed
    __syncthreads();
    if (pair == 0) {
      load_key_fragments<D>(kf, t.k, 16 * (warp % 2));
      load_key_fragments<D>(vf, t.v, 16 * (warp % 2));
    }
    const TcPair view{t.q[buf], t.dout[buf], t.k, t.lse[buf], t.drow[buf], t.pt, t.dst};
    probabilities_and_ds_tc<D, kCausal>(view, kf, vf, i0, j0, a);
    __syncthreads();  // P^T and dS^T of the pair are in shared memory
    accumulate_dk_dv_tc<D>(view, dk, dv);
    float dq[D / 32][4] = {};
    accumulate_dq_tc<D>(dq, view);
    atomic_add_dq_tc<D>(dq_acc, dq, b, h, i0, rows, a);
    __syncthreads();  // every warp is done with buffer `buf`, P^T and dS^T before they are refilled
  }
  tc::cp_async_wait_group<0>();  // no copy outlives the block (none when pairs > 0)
  store_key_rows_tc<T, D>(args.dk, dk, b, g, j0, keys, a.scale);
  store_key_rows_tc<T, D>(args.dv, dv, b, g, j0, keys, 1.f);
}

template <class T, int D, bool kCausal>
void launch_key_tiles(const BwdArgs& args, const float* d_rows, float* dq_acc) {
  const AttnDims& a = args.a;
  static_assert(tc_key_tile_bytes<D>() <= 48 * 1024, "within the default dynamic shared limit");
  const dim3 grid(unsigned(ceil_div(a.M, kTcBwdBlockN)), unsigned(a.Hkv), unsigned(a.B));
  MOACERT_LAUNCH((bwd_tc_kernel<T, D, kCausal>), grid, dim3(kTcBwdThreads), tc_key_tile_bytes<D>(),
                 args, d_rows, dq_acc);
}

}  // namespace

int launch_bwd_tc(const BwdArgs& args) {
  const AttnDims& a = args.a;
  if (args.storage != Storage::bf16)
    throw std::invalid_argument("bwd_tc: bf16 storage only (tensor-core mma inputs)");
  if (a.D != 64 && a.D != 128)
    throw std::invalid_argument("bwd_tc: D = " + std::to_string(a.D) +
                                " is not in {64, 128}, the head widths it is compiled for");
  if (!chunked_rows(args.q.s) || !chunked_rows(args.k.s) || !chunked_rows(args.v.s) ||
      !chunked_rows(args.dout.s))
    throw std::invalid_argument("bwd_tc: q, k, v, do need unit d strides and 16-byte rows");
  DeviceBuffer d_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
  DeviceBuffer dq_acc(static_cast<long long>(a.B) * a.H * a.N * a.D, cuda_scratch::kDqAcc);
  if (int e = first_error(d_rows.error(), dq_acc.error())) return e;
  return dispatch(args.storage, a.causal, [&](auto, auto causal) {
    using T = __nv_bfloat16;
    constexpr bool kCausal = decltype(causal)::value;
    launch_row_dot<T>(a, args.dout, args.o, d_rows.get());
    if (a.D == 64)
      launch_key_tiles<T, 64, kCausal>(args, d_rows.get(), dq_acc.get());
    else
      launch_key_tiles<T, 128, kCausal>(args, d_rows.get(), dq_acc.get());
    launch_scale_to_storage<T>(args.dq, dq_acc.get(), a.B, a.H, a.N, a.D, a.scale);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
