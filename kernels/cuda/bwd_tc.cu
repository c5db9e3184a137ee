// attention.bwd on tensor cores (issue #30 item 1): FlashAttention-2's
// backward form, bf16 or f16 storage, f32 accumulation. After D_i = dO_i . O_i
// (row_dot_kernel, as bwd_fa2), one block of 4 warps per (32-key tile, kv
// head) stages K and V once and walks the group's query heads and the
// visible 16-row query tiles, Q and dO (and the rows' LSE and D_i) of the
// next tile in flight by cp.async while the current one is used. Per pair
// (attention_tc_passes.cuh): S^T = K Q^T and dP^T = V dO^T on mma, P^T and
// dS^T in f32 then rounded to the b16 storage in shared memory; dV += P^T dO and
// dK += dS^T Q into each warp's accumulator fragments, written once at the
// end; dQ's partial dS K on mma, added to an f32 accumulator by atomics
// (one per visible tile pair, query row and d), which a last kernel rounds
// to storage times the scale. Causal (bottom-right) and GQA as bwd_fa2;
// head widths D in {64, 128} (the variant's envelope).
#include "kernels/cuda/attention_passes.cuh"
#include "kernels/cuda/attention_tc_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

int launch_bwd_tc(const BwdArgs& args) {
  const AttnDims& a = args.a;
  const TcBackwardArgs tc{a,        args.q,  args.k,  args.v, args.dout,
                          args.lse, args.dq, args.dk, args.dv};
  check_tc_backward("bwd_tc", args.storage, tc);
  DeviceBuffer d_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
  DeviceBuffer dq_acc(static_cast<long long>(a.B) * a.H * a.N * a.D, cuda_scratch::kDqAcc);
  if (int e = first_error(d_rows.error(), dq_acc.error())) return e;
  return dispatch_b16(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    launch_row_dot<T>(a, args.dout, args.o, d_rows.get());
    launch_tc_key_tiles<T, kCausal, /*dK=*/true, /*atomic dQ=*/true>(tc, d_rows.get(),
                                                                     dq_acc.get());
    launch_scale_to_storage<T>(args.dq, dq_acc.get(), a.B, a.H, a.N, a.D, a.scale);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
