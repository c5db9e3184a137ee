// attention.bwd, bwd_fa2: FlashAttention-2's backward form. After
// D_i = dO_i . O_i, one block per (key tile, kv head) loops over the
// group's query heads and the visible query tiles, keeps dK and dV in
// registers and writes them once, and adds each tile pair's dQ partial
// dS K to an f32 accumulator by atomics; a last kernel rounds it to
// storage (times the scale). One atomic per (visible tile pair, query row,
// d).
#include "kernels/cuda/attention_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

int launch_bwd_fa2(const BwdArgs& args) {
  const AttnDims& a = args.a;
  DeviceBuffer d_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
  DeviceBuffer dq_acc(static_cast<long long>(a.B) * a.H * a.N * a.D, cuda_scratch::kDqAcc);
  if (int e = first_error(d_rows.error(), dq_acc.error())) return e;
  return dispatch(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    launch_row_dot<T>(a, args.dout, args.o, d_rows.get());
    MOACERT_LAUNCH((dkdv_kernel<T, T, kCausal, /*atomic dQ=*/true>), key_grid(a), dim3(kThreads),
                   key_tile_bytes(a.D), a, args.q, args.k, args.v, args.dout,
                   Rows<T>{static_cast<const T*>(args.lse.data), args.lse.s},
                   f32_rows(d_rows.get(), a), args.dk, args.dv, dq_acc.get());
    launch_scale_to_storage<T>(args.dq, dq_acc.get(), a.B, a.H, a.N, a.D, a.scale);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
