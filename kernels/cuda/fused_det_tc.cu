// attention.fwdbwd, fused_det_tc: the MoA papers' deterministic fused ONF on tensor cores, bf16 or
// f16 storage, f32 accumulation, composed of flash_tc's forward (launch_flash_tc: O and LSE to
// storage), D_i = dO_i . O_i (row_dot_kernel), and bwd_tc's pair steps (attention_tc_passes.cuh:
// P^T and dS^T on mma from the stored LSE, rounded to the b16 storage). No floating-point atomics,
// so bitwise deterministic whatever the block order: dQ over 32-row query blocks
// (tc_query_tile_kernel), dK and dV over 32-key tiles (tc_key_tile_kernel), each in fragments over
// a fixed order of pairs, written once. Unlike the SIMT fused ONFs, the forward is its own launch
// (its 64-row tiles are not the backward's 16-row ones).
#include "kernels/cuda/attention_passes.cuh"
#include "kernels/cuda/attention_tc_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

int launch_fused_det_tc(const FwdBwdArgs& args) {
  const TcFusedPrologue p("fused_det_tc", args, /*dk_acc=*/false, /*dv_acc=*/false);
  if (int e = p.forward()) return e;  // O, LSE and D_i
  const AttnDims& a = args.a;
  return dispatch_b16(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    launch_tc_query_tiles<T, kCausal, /*atomic dK=*/false, /*atomic dV=*/false>(p.tc, p.d_rows(),
                                                                                nullptr, nullptr);
    launch_tc_key_tiles<T, kCausal, /*dK=*/true, /*atomic dQ=*/false>(p.tc, p.d_rows(), nullptr);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
