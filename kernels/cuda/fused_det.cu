// attention.fwdbwd, fused_det: no floating-point atomics, so bitwise
// deterministic whatever the block order. The query-tile kernel is
// fused_v1's forward, D_i and dQ (owned, written once) with no atomics; it
// keeps its f32 LSE and D_i rows, from which a key-tile kernel recomputes
// P and dS and accumulates dK and dV in registers over the group's query
// heads and visible query tiles, in a fixed order.
#include "kernels/cuda/attention_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

template <class T, bool kCausal>
__global__ void fused_det_kernel(FwdBwdArgs args, float* lse_rows, float* d_rows) {
  const AttnDims a = args.a;
  const QueryTile t = carve_query_tile(smem, a.D);
  const QueryPos p = query_pos(a);
  fused_forward<T, kCausal>(args, t, p);
  store_rows_f32(lse_rows, p, t.lse, a);
  row_dot(t.drow, t.dout, t.acc, a.D);
  __syncthreads();
  store_rows_f32(d_rows, p, t.drow, a);
  backward_pass<T, kCausal, /*atomic dK=*/false, /*atomic dV=*/false>(t, p, args.k, args.v, nullptr,
                                                                      nullptr, a);
  store_tile(static_cast<T*>(args.dq.data), args.dq.s, p.b, p.h, p.i0, p.rows, a.D, t.acc, a.scale);
}

}  // namespace

int launch_fused_det(const FwdBwdArgs& args) {
  const AttnDims& a = args.a;
  const long long rows = static_cast<long long>(a.B) * a.H * a.N;
  DeviceBuffer lse_rows(rows, cuda_scratch::kLseRows), d_rows(rows, cuda_scratch::kDRows);
  if (int e = first_error(lse_rows.error(), d_rows.error())) return e;
  return dispatch(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    constexpr bool kCausal = decltype(causal)::value;
    MOACERT_LAUNCH((fused_det_kernel<T, kCausal>), query_grid(a), dim3(kThreads),
                   query_tile_bytes(a.D), args, lse_rows.get(), d_rows.get());
    MOACERT_LAUNCH((dkdv_kernel<T, float, kCausal, /*atomic dQ=*/false>), key_grid(a),
                   dim3(kThreads), key_tile_bytes(a.D), a, args.q, args.k, args.v, args.dout,
                   f32_rows(lse_rows.get(), a), f32_rows(d_rows.get(), a), args.dk, args.dv,
                   static_cast<float*>(nullptr));
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
