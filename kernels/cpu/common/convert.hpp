// Storage <-> compute conversions of the CPU kernels: the accumulation type
// of a storage format (f32 for the 16-bit formats), reads that are exact and
// the one rounding of a result to storage. Target-independent; included by
// the per-target (Highway) code too.
#pragma once

#include <type_traits>

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

}  // namespace moacert::kernels::cpu
