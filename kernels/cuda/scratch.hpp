// The names of the scratch buffers the CUDA launchers allocate, written
// once: a launcher labels its device buffers with them (DeviceBuffer,
// attention_common.cuh), the emulator counts each buffer's traffic under
// its label, and the cost functions (cost.cpp) model the traffic of each
// under the same name. The op's own tensors go by the ops table's names
// ("q", "dk", reference/ops.hpp). Plain constants: nvcc and g++ read this
// header alike.
#pragma once

namespace moacert::kernels::cuda_scratch {

inline constexpr const char* kDkAcc = "dk_acc";      // f32 (B, Hkv, M, D), dK by atomics
inline constexpr const char* kDvAcc = "dv_acc";      // f32 (B, Hkv, M, D), dV by atomics
inline constexpr const char* kDqAcc = "dq_acc";      // f32 (B, H, N, D), dQ by atomics
inline constexpr const char* kLseRows = "lse_rows";  // f32 (B, H, N): a fused kernel's LSE
inline constexpr const char* kDRows = "d_rows";      // f32 (B, H, N): D_i = dO_i . O_i
inline constexpr const char* kMPart = "m_part";      // decode: f32 (B, H, splits) maxima
inline constexpr const char* kLPart = "l_part";      // decode: f32 (B, H, splits) sums
inline constexpr const char* kAccPart = "acc_part";  // decode: f32 (B, H, splits, D)
inline constexpr const char* kHidden = "h";          // swiglu: f32 (T, F) silu(x W1) * (x W3)

}  // namespace moacert::kernels::cuda_scratch
