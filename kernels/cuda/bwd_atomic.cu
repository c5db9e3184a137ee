// attention.bwd, bwd_atomic: the MoA papers' backward in three kernels.
// (1) D_i = dO_i . O_i; (2) dV over key tiles, P recomputed from the given
// LSE, written once; (3) over query tiles, P and dS recomputed, dQ kept in
// shared memory and written once, each tile's dK = dS^T Q added to an f32
// accumulator by atomics, which a last kernel rounds to storage (times the
// scale). One atomic per (visible tile pair, key, d): the baseline of the
// fused kernels' atomic-count law (tests/cuda/).
#include "kernels/cuda/attention_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

template <class T, bool kCausal>
__global__ void dq_dk_kernel(BwdArgs args, const float* d_rows, float* dk_acc) {
  const AttnDims a = args.a;
  const QueryTile t = carve_query_tile(smem, a.D);
  const QueryPos p = query_pos(a);
  load_tile(t.q, static_cast<const T*>(args.q.data), args.q.s, p.b, p.h, p.i0, p.rows, a.D,
            kBlockM);
  load_tile(t.dout, static_cast<const T*>(args.dout.data), args.dout.s, p.b, p.h, p.i0, p.rows, a.D,
            kBlockM);
  load_rows(t.lse, static_cast<const T*>(args.lse.data), args.lse.s, p.b, p.h, p.i0, p.rows);
  const Rows<float> d = f32_rows(d_rows, a);
  load_rows(t.drow, d.data, d.s, p.b, p.h, p.i0, p.rows);
  // backward_pass's first barrier orders these loads before their use
  backward_pass<T, kCausal, /*atomic dK=*/true, /*atomic dV=*/false>(t, p, args.k, args.v, dk_acc,
                                                                     nullptr, a);
  store_tile(static_cast<T*>(args.dq.data), args.dq.s, p.b, p.h, p.i0, p.rows, a.D, t.acc, a.scale);
}

}  // namespace

int launch_bwd_atomic(const BwdArgs& args) {
  const AttnDims& a = args.a;
  DeviceBuffer d_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
  DeviceBuffer dk_acc(static_cast<long long>(a.B) * a.Hkv * a.M * a.D, cuda_scratch::kDkAcc);
  if (int e = first_error(d_rows.error(), dk_acc.error())) return e;
  return dispatch(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    launch_row_dot<T>(a, args.dout, args.o, d_rows.get());
    MOACERT_LAUNCH((dv_kernel<T, T, kCausal>), key_grid(a), dim3(kThreads), key_tile_bytes(a.D), a,
                   args.q, args.k, args.dout,
                   Rows<T>{static_cast<const T*>(args.lse.data), args.lse.s}, args.dv);
    MOACERT_LAUNCH((dq_dk_kernel<T, kCausal>), query_grid(a), dim3(kThreads), query_tile_bytes(a.D),
                   args, static_cast<const float*>(d_rows.get()), dk_acc.get());
    launch_scale_to_storage<T>(args.dk, dk_acc.get(), a.B, a.Hkv, a.M, a.D, a.scale);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
