// attention.fwdbwd, fused_v3_tc: the MoA papers' restructured fused ONF on tensor cores, bf16 or
// f16 storage, f32 accumulation, composed of flash_tc's forward (launch_flash_tc: O and LSE to
// storage), D_i = dO_i . O_i (row_dot_kernel), and bwd_tc's pair steps (attention_tc_passes.cuh:
// P^T and dS^T on mma from the stored LSE, rounded to the b16 storage). Over 32-row query blocks
// (tc_query_tile_kernel), dQ is kept in fragments and written once and only dK added by atomics; dV
// by its own kernel over 32-key tiles (tc_key_tile_kernel), in fragments, written once, no atomics:
// 1 atomic per (visible block pair, key, d), half of fused_v1_tc's. A last kernel rounds dK's
// accumulator to storage. Unlike the SIMT fused ONFs, the forward is its own launch (its 64-row
// tiles are not the backward's 16-row ones).
#include "kernels/cuda/attention_passes.cuh"
#include "kernels/cuda/attention_tc_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

int launch_fused_v3_tc(const FwdBwdArgs& args) {
  const AttnDims& a = args.a;
  const TcBackwardArgs tc{a,        args.q,  args.k,  args.v, args.dout,
                          args.lse, args.dq, args.dk, args.dv};
  check_tc_backward("fused_v3_tc", args.storage, tc);
  DeviceBuffer d_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kDRows);
  DeviceBuffer dk_acc(static_cast<long long>(a.B) * a.Hkv * a.M * a.D, cuda_scratch::kDkAcc);
  if (int e = first_error(d_rows.error(), dk_acc.error())) return e;
  if (int e = launch_flash_tc({a, args.storage, args.q, args.k, args.v, args.o, args.lse}))
    return e;
  return dispatch_b16(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    launch_row_dot<T>(a, args.dout, args.o, d_rows.get());
    launch_tc_query_tiles<T, kCausal, /*atomic dK=*/true, /*atomic dV=*/false>(
        tc, d_rows.get(), dk_acc.get(), nullptr);
    launch_tc_key_tiles<T, kCausal, /*dK=*/false, /*atomic dQ=*/false>(tc, d_rows.get(), nullptr);
    launch_scale_to_storage<T>(args.dk, dk_acc.get(), a.B, a.Hkv, a.M, a.D, a.scale);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
