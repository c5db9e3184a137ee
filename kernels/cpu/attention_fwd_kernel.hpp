// What the vectorised attention kernels (cpu.flash, cpu.split) share across
// Highway targets: their argument blocks and the storage <-> compute
// conversions. Target-independent; included by the per-target code.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/cpu/attention_fwd_flat.hpp"
#include "reference/format.hpp"

namespace moacert::kernels::cpu {

// The accumulation type of a storage type: f32 for the 16-bit formats.
template <class S>
using accum_of_t = std::conditional_t<std::is_same_v<S, double>, double, float>;

// Storage -> accumulation type, exactly.
template <class S>
inline accum_of_t<S> to_accum(S x) {
  return static_cast<accum_of_t<S>>(x);
}

// Compute type -> storage, one rounding (nearest, ties to even).
template <class S, class T>
inline S from_compute(T x) {
  if constexpr (std::is_same_v<S, bf16> || std::is_same_v<S, f16>) {
    return S(static_cast<float>(x));
  } else {
    return static_cast<S>(x);
  }
}
template <class S>
inline S from_accum(accum_of_t<S> x) {
  return from_compute<S>(x);
}

// One call of cpu.flash with flat strides (in elements) read up front.
struct FlashArgs {
  std::size_t B = 0, H = 0, Hkv = 0, N = 0, M = 0, D = 0;
  double scale = 1;
  bool causal = false;
  int threads = 1;
  Strides4 q, k, v, o, lse;
  const void* q_data = nullptr;
  const void* k_data = nullptr;
  const void* v_data = nullptr;
  void* o_data = nullptr;
  void* lse_data = nullptr;
};

// One call of cpu.split: q (B,H,1,D), k, v (B,Hkv,L,D), lens (B).
struct DecodeArgs {
  std::size_t B = 0, H = 0, Hkv = 0, L = 0, D = 0;
  std::size_t split_len = 256;  // cache positions per chunk
  double scale = 1;
  int threads = 1;
  Strides4 q, k, v, o, lse;
  std::ptrdiff_t lens_stride = 1;
  const void* q_data = nullptr;
  const void* k_data = nullptr;
  const void* v_data = nullptr;
  const std::int64_t* lens = nullptr;
  void* o_data = nullptr;
  void* lse_data = nullptr;
};

}  // namespace moacert::kernels::cpu
