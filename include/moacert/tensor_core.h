// Tensor-core instructions for CUDA sources that build both for the device
// and for the host emulator (docs/simt.md#tensor-cores). Under nvcc each
// function is the one PTX instruction it is named after; under
// moacert-simt-c++ it is the emulator's warp collective of the same
// semantics: fragments in the PTX ISA's layouts, mma's accumulation by the
// stated model of tensor-core arithmetic, ldmatrix's rows checked for
// alignment and bounds.
//
//   mma_m16n8k16_bf16(d, a, b, c)  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
//   mma_m16n8k16_f16(d, a, b, c)   mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
//   mma_m16n8k16<T>(d, a, b, c)    the one of the two whose inputs are T
//                                  (__nv_bfloat16 or __half): a kernel
//                                  templated on its storage
//   ldmatrix<N>(r, row)            ldmatrix.sync.aligned.m8n8.xN.shared.b16, N in 1, 2, 4
//   ldmatrix<N, true>(r, row)      the same, .trans
//   cp_async_ca<B>(dst, src)       cp.async.ca.shared.global [dst], [src], B;  B in 4, 8, 16
//   cp_async_cg(dst, src)          cp.async.cg.shared.global [dst], [src], 16;
//   cp_async_commit_group()        cp.async.commit_group;
//   cp_async_wait_group<N>()       cp.async.wait_group N;
//
// A cp.async is in flight from its issue until its thread's wait_group
// covers its group: touching its destination, or writing its source, in
// that time is an `async copy race` on the emulator. Other threads read
// the destination after that wait and a __syncthreads.
//
// Every lane of the warp must call each of them at the same source line
// (they are .sync.aligned); the emulator reports a lane that does not as a
// `warp mask` hazard.
#pragma once

#include <cstdint>
#include <type_traits>

#include "moacert/simt.h"

namespace moacert::tc {

#if defined(__CUDACC__)

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2],
                                                  const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}

// The mma whose inputs are T (__nv_bfloat16 or __half).
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4],
                                             const std::uint32_t (&b)[2], const float (&c)[4]) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>,
                "mma.m16n8k16 takes bf16 or f16 inputs");
  if constexpr (std::is_same_v<T, __half>)
    mma_m16n8k16_f16(d, a, b, c);
  else
    mma_m16n8k16_bf16(d, a, b, c);
}

template <int N, bool Trans = false>
__device__ __forceinline__ void ldmatrix(std::uint32_t (&r)[N], const void* row) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (N == 1 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(shared));
  else if constexpr (N == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(shared));
  else if constexpr (N == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared));
  else if constexpr (N == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared));
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared));
}

template <int Bytes>
__device__ __forceinline__ void cp_async_ca(void* dst, const void* src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared), "l"(src), "n"(Bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_cg(void* dst, const void* src) {
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#else  // the host emulator

namespace detail {
inline void mma(::moacert::simt::detail::MmaInput input, float (&d)[4], const std::uint32_t (&a)[4],
                const std::uint32_t (&b)[2], const float (&c)[4],
                ::moacert::simt::detail::Site site) {
  ::moacert::simt::detail::MmaOperands lane{
      {a[0], a[1], a[2], a[3]}, {b[0], b[1]}, {c[0], c[1], c[2], c[3]}, {}};
  ::moacert::simt::detail::mma_m16n8k16(input, &lane, site);
  for (int i = 0; i < 4; ++i) d[i] = lane.d[i];
}
}  // namespace detail

inline void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                              const std::uint32_t (&b)[2], const float (&c)[4], MOACERT_SIMT_HERE) {
  detail::mma(::moacert::simt::detail::MmaInput::bf16, d, a, b, c, MOACERT_SIMT_SITE);
}
inline void mma_m16n8k16_f16(float (&d)[4], const std::uint32_t (&a)[4],
                             const std::uint32_t (&b)[2], const float (&c)[4], MOACERT_SIMT_HERE) {
  detail::mma(::moacert::simt::detail::MmaInput::f16, d, a, b, c, MOACERT_SIMT_SITE);
}

// The mma whose inputs are T (__nv_bfloat16 or __half); the caller's
// source line is the instruction's, as with the two above.
template <class T>
inline void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                         const float (&c)[4], MOACERT_SIMT_HERE) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>,
                "mma.m16n8k16 takes bf16 or f16 inputs");
  detail::mma(std::is_same_v<T, __half> ? ::moacert::simt::detail::MmaInput::f16
                                        : ::moacert::simt::detail::MmaInput::bf16,
              d, a, b, c, MOACERT_SIMT_SITE);
}

template <int N, bool Trans = false>
inline void ldmatrix(std::uint32_t (&r)[N], const void* row, MOACERT_SIMT_HERE) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
  ::moacert::simt::detail::ldmatrix(N, Trans, row, r, MOACERT_SIMT_SITE);
}

template <int Bytes>
inline void cp_async_ca(void* dst, const void* src, MOACERT_SIMT_HERE) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  ::moacert::simt::detail::async_copy(dst, src, Bytes, false, MOACERT_SIMT_SITE);
}
inline void cp_async_cg(void* dst, const void* src, MOACERT_SIMT_HERE) {
  ::moacert::simt::detail::async_copy(dst, src, 16, true, MOACERT_SIMT_SITE);
}
inline void cp_async_commit_group(MOACERT_SIMT_HERE) {
  ::moacert::simt::detail::async_commit_group(MOACERT_SIMT_SITE);
}
template <int N>
inline void cp_async_wait_group(MOACERT_SIMT_HERE) {
  static_assert(N >= 0, "cp.async.wait_group N: N >= 0");
  ::moacert::simt::detail::async_wait_group(N, MOACERT_SIMT_SITE);
}

#endif  // __CUDACC__

}  // namespace moacert::tc
