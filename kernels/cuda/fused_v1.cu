// attention.fwdbwd, fused_v1: the MoA papers' first fused ONF. One kernel,
// one block per (query tile, head): the forward's online softmax over the
// visible key tiles gives O and LSE, then D_i = dO_i . O_i, then a second
// pass over the same key tiles recomputes P = exp(S - LSE) and
// dS = P (dP - D), keeps dQ in shared memory and adds each tile's
// dK = dS^T Q and dV = P^T dO to f32 accumulators by atomics: 2 atomics per
// (visible tile pair, key, d), twice bwd_atomic's (tests/cuda/). A last
// kernel rounds each accumulator to storage. No N x M intermediate.
#include "kernels/cuda/attention_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

template <class T, bool kCausal>
__global__ void fused_v1_kernel(FwdBwdArgs args, float* dk_acc, float* dv_acc) {
  const AttnDims a = args.a;
  const QueryTile t = carve_query_tile(smem, a.D);
  const QueryPos p = query_pos(a);
  fused_forward<T, kCausal>(args, t, p);
  row_dot(t.drow, t.dout, t.acc, a.D);  // D_i from the f32 O
  __syncthreads();
  backward_pass<T, kCausal, /*atomic dK=*/true, /*atomic dV=*/true>(t, p, args.k, args.v, dk_acc,
                                                                    dv_acc, a);
  store_tile(static_cast<T*>(args.dq.data), args.dq.s, p.b, p.h, p.i0, p.rows, a.D, t.acc, a.scale);
}

}  // namespace

int launch_fused_v1(const FwdBwdArgs& args) {
  const AttnDims& a = args.a;
  const long long kv = static_cast<long long>(a.B) * a.Hkv * a.M * a.D;
  DeviceBuffer dk_acc(kv, cuda_scratch::kDkAcc), dv_acc(kv, cuda_scratch::kDvAcc);
  if (int e = first_error(dk_acc.error(), dv_acc.error())) return e;
  return dispatch(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    MOACERT_LAUNCH((fused_v1_kernel<T, decltype(causal)::value>), query_grid(a), dim3(kThreads),
                   query_tile_bytes(a.D), args, dk_acc.get(), dv_acc.get());
    launch_scale_to_storage<T>(args.dk, dk_acc.get(), a.B, a.Hkv, a.M, a.D, a.scale);
    launch_scale_to_storage<T>(args.dv, dv_acc.get(), a.B, a.Hkv, a.M, a.D, 1.f);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
