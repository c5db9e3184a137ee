// What a host caller hands the CUDA row-wise and GEMM ONFs
// (rmsnorm.cu, swiglu.cu, decode.cu): device pointers and element strides.
// Plain C++, no CUDA type.
#pragma once

#include "kernels/cuda/attention_args.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {

struct Strides2 {
  long long r, c;
};
struct Tensor2 {
  void* data;
  Strides2 s;
};
struct Tensor1 {
  void* data;
  long long s;
};

// rmsnorm: y (T, D) = x / sqrt(mean(x^2) + eps) * w.
struct RmsNormArgs {
  int T, D;
  float eps;
  Storage storage;
  Tensor2 x;
  Tensor1 w;
  Tensor2 y;
};

// mlp.swiglu: y (T, Dm) = (silu(x w1) * (x w3)) w2.
struct SwiGluArgs {
  int T, Dm, F;
  Storage storage;
  Tensor2 x, w1, w3, w2;
  Tensor2 y;
};

// attention.decode: q (B,H,1,D), k, v (B,Hkv,L,D), lens (B) int64; o, lse.
struct DecodeArgs {
  AttnDims a;  // N = 1, M = L
  Storage storage;
  Tensor4 q, k, v;
  Tensor1 lens;  // int64
  Tensor4 o;
  Tensor3 lse;
};

int launch_rmsnorm(const RmsNormArgs& args);
int launch_swiglu(const SwiGluArgs& args);
int launch_decode(const DecodeArgs& args);

}  // namespace moacert::kernels::MOACERT_CUDA_NS
