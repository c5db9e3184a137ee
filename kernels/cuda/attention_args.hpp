// What a host caller hands the CUDA attention ONFs (kernels/cuda/*.cu):
// device pointers, element strides and the problem's extents. Plain C++,
// no CUDA type, so that the registry glue and the cost functions include
// it without the CUDA language.
#pragma once

#ifndef MOACERT_CUDA_NS
#error "include kernels/cuda/cuda_compat.cuh (or define MOACERT_CUDA_NS) first"
#endif

namespace moacert::kernels::MOACERT_CUDA_NS {

// Element strides of a rank-4 (B, heads, rows, D) and a rank-3
// (B, heads, rows) tensor: a layout is a value (CONTRIBUTING.md, style 1), and every
// kernel honours it.
struct Strides4 {
  long long b, h, n, d;
};
struct Strides3 {
  long long b, h, n;
};

// One attention problem as the kernels see it: reference/problem.hpp's
// Dims (the attention axes) narrowed to int, with the scale and the mask
// resolved. Built in one place, attn_dims (backend_glue.hpp), for the
// problems check_supported admits only, where the narrowing is exact.
struct AttnDims {
  int B, H, Hkv, N, M, D;
  float scale;
  bool causal;
};

// f16 only for the tensor-core ONFs, whose mma takes bf16 or f16 inputs
// (dispatch_b16, attention_common.cuh).
enum class Storage { f32, bf16, f16 };

// A device tensor: its data (f32, bf16 or f16, as the call's storage) and its
// strides.
struct Tensor4 {
  void* data;
  Strides4 s;
};
struct Tensor3 {
  void* data;
  Strides3 s;
};

// attention.fwdbwd: q, k, v, do in; o, lse, dq, dk, dv out.
struct FwdBwdArgs {
  AttnDims a;
  Storage storage;
  Tensor4 q, k, v, dout;
  Tensor4 o;
  Tensor3 lse;
  Tensor4 dq, dk, dv;
};

// attention.bwd: q, k, v, o, lse, do in; dq, dk, dv out.
struct BwdArgs {
  AttnDims a;
  Storage storage;
  Tensor4 q, k, v, o;
  Tensor3 lse;
  Tensor4 dout;
  Tensor4 dq, dk, dv;
};

// attention.fwd: q, k, v in; o, lse out.
struct FwdArgs {
  AttnDims a;
  Storage storage;
  Tensor4 q, k, v;
  Tensor4 o;
  Tensor3 lse;
};

// The launchers, one per ONF source. Each allocates its scratch, launches
// its kernels in order on the default stream and returns the first CUDA
// error (cudaSuccess is 0).
int launch_fused_v1(const FwdBwdArgs& args);
int launch_fused_v3(const FwdBwdArgs& args);
int launch_fused_det(const FwdBwdArgs& args);
int launch_bwd_atomic(const BwdArgs& args);
int launch_bwd_fa2(const BwdArgs& args);
// The tensor-core ONFs throw std::invalid_argument outside their envelope.
int launch_bwd_tc(const BwdArgs& args);
int launch_fused_v1_tc(const FwdBwdArgs& args);
int launch_fused_v3_tc(const FwdBwdArgs& args);
int launch_fused_det_tc(const FwdBwdArgs& args);
int launch_flash_fwd(const FwdArgs& args);
int launch_flash_tc(const FwdArgs& args);  // throws std::invalid_argument outside its envelope

}  // namespace moacert::kernels::MOACERT_CUDA_NS
