// attention.fwdbwd, fused_v3: the MoA papers' restructured fused ONF. The
// query-tile kernel is fused_v1's (forward, D_i, dQ in shared memory) with
// only dK added by atomics; it also keeps its f32 LSE rows, from which a
// second kernel, parallel over key tiles, recomputes P and writes
// dV = sum P^T dO once, without atomics. So it executes exactly as many
// atomics as bwd_atomic, half of fused_v1's (tests/cuda/).
#include "kernels/cuda/attention_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

template <class T, bool kCausal>
__global__ void fused_v3_kernel(FwdBwdArgs args, float* dk_acc, float* lse_rows) {
  const AttnDims a = args.a;
  const QueryTile t = carve_query_tile(smem, a.D);
  const QueryPos p = query_pos(a);
  fused_forward<T, kCausal>(args, t, p);
  store_rows_f32(lse_rows, p, t.lse, a);  // for the dV kernel's P
  row_dot(t.drow, t.dout, t.acc, a.D);
  __syncthreads();
  backward_pass<T, kCausal, /*atomic dK=*/true, /*atomic dV=*/false>(t, p, args.k, args.v, dk_acc,
                                                                     nullptr, a);
  store_tile(static_cast<T*>(args.dq.data), args.dq.s, p.b, p.h, p.i0, p.rows, a.D, t.acc, a.scale);
}

}  // namespace

int launch_fused_v3(const FwdBwdArgs& args) {
  const AttnDims& a = args.a;
  DeviceBuffer dk_acc(static_cast<long long>(a.B) * a.Hkv * a.M * a.D, cuda_scratch::kDkAcc);
  DeviceBuffer lse_rows(static_cast<long long>(a.B) * a.H * a.N, cuda_scratch::kLseRows);
  if (int e = first_error(dk_acc.error(), lse_rows.error())) return e;
  return dispatch(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    MOACERT_LAUNCH((fused_v3_kernel<T, kCausal>), query_grid(a), dim3(kThreads),
                   query_tile_bytes(a.D), args, dk_acc.get(), lse_rows.get());
    MOACERT_LAUNCH((dv_kernel<T, float, kCausal>), key_grid(a), dim3(kThreads), key_tile_bytes(a.D),
                   a, args.q, args.k, args.dout, f32_rows(lse_rows.get(), a), args.dv);
    launch_scale_to_storage<T>(args.dk, dk_acc.get(), a.B, a.Hkv, a.M, a.D, a.scale);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
