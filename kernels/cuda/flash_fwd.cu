// attention.fwd, flash: one block per (query tile, head); K and V tiles in
// shared memory, online softmax over the visible key tiles (causal,
// bottom-right: fully masked tiles are never loaded), GQA/MQA by the head
// map h -> h / (H / Hkv), O and LSE written once. Its forward is the fused
// kernels' forward_pass, so their o and lse are this kernel's bit for bit.
#include "kernels/cuda/attention_passes.cuh"

namespace moacert::kernels::MOACERT_CUDA_NS {
namespace {

template <class T, bool kCausal>
__global__ void flash_fwd_kernel(FwdArgs args) {
  const AttnDims a = args.a;
  const QueryTile t = carve_query_tile(smem, a.D);
  const QueryPos p = query_pos(a);
  load_tile(t.q, static_cast<const T*>(args.q.data), args.q.s, p.b, p.h, p.i0, p.rows, a.D,
            kBlockM);
  forward_pass<T, kCausal>(t, p, args.k, args.v, a);
  store_forward<T>(t, p, args.o, args.lse, a);
}

}  // namespace

int launch_flash_fwd(const FwdArgs& args) {
  const AttnDims& a = args.a;
  return dispatch(args.storage, a.causal, [&](auto t, auto causal) {
    using T = decltype(t);
    MOACERT_LAUNCH((flash_fwd_kernel<T, decltype(causal)::value>), query_grid(a), dim3(kThreads),
                   query_tile_bytes(a.D), args);
    return static_cast<int>(cudaGetLastError());
  });
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
