// attention.fwdbwd, fused_v1_tc: the MoA papers' first fused ONF on tensor cores, bf16 or f16
// storage, f32 accumulation, composed of flash_tc's forward (launch_flash_tc: O and LSE to
// storage), D_i = dO_i . O_i (row_dot_kernel), and bwd_tc's pair steps (attention_tc_passes.cuh:
// P^T and dS^T on mma from the stored LSE, rounded to the b16 storage). Over 32-row query blocks
// (tc_query_tile_kernel, two 16-row sub-steps per key tile), dQ is kept in fragments and written
// once, and dK = dS^T Q and dV = P^T dO of both sub-steps are summed in fragments and added to f32
// accumulators by atomics, 2 per (visible block pair, key, d): exactly twice bwd_tc's 1 per
// (visible pair, query row, d) where N and M are multiples of 32, its key tiles being 32 keys. A
// last kernel rounds each accumulator to storage.
// Unlike the SIMT fused ONFs, the forward is its own launch (its 64-row
// tiles are not the backward's 16-row ones).
#include "kernels/cuda/attention_passes.cuh"
#include "kernels/cuda/attention_tc_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {

int launch_fused_v1_tc(const FwdBwdArgs& args) {
  const TcFusedPrologue p("fused_v1_tc", args, /*dk_acc=*/true, /*dv_acc=*/true);
  if (int e = p.forward()) return e;  // O, LSE and D_i
  const AttnDims& a = args.a;
  return dispatch_b16(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    launch_tc_query_tiles<T, kCausal, /*atomic dK=*/true, /*atomic dV=*/true>(
        p.tc, p.d_rows(), p.dk_acc(), p.dv_acc());
    launch_scale_to_storage<T>(args.dk, p.dk_acc(), a.B, a.Hkv, a.M, a.D, a.scale);
    launch_scale_to_storage<T>(args.dv, p.dv_acc(), a.B, a.Hkv, a.M, a.D, 1.f);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
