// The vectorised exponential of cpu.flash and cpu.split, and its error
// bound, which the a priori bounds (docs/bounds.md) and docs/performance.md
// cite.
//
// VecExp is Highway's hwy/contrib/math `Exp` (libhwy-dev 1.0.3,
// hwy/contrib/math/math-inl.h), whose header documents:
//   Max Error: ULP = 1,  Valid Range: float32 [-FLT_MAX, +104],
//                                    float64 [-DBL_MAX, +706].
// So for every x <= 0 it argues about (the kernels only take exp of
// S - m <= 0 and of m_old - m_new <= 0) the result is within 1 ulp of e^x
// in the lane type, i.e. a relative error of at most 2u (u = 2^-24 for f32,
// 2^-53 for f64) where the result is normal. Below x = -104 (f32) or -1000
// (f64) it returns exactly 0 (e^-104 < 2^-149, below f32's smallest
// subnormal; likewise for f64), and e^-inf = 0; in between the result may be
// subnormal, with an absolute error below the subnormal spacing. A NaN input
// gives 0, not NaN: the kernels never feed it one from finite inputs.
//
// Per-target header (included once per Highway target by foreach_target).
#if defined(MOACERT_KERNELS_CPU_VEC_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOACERT_KERNELS_CPU_VEC_EXP_INL_H_
#undef MOACERT_KERNELS_CPU_VEC_EXP_INL_H_
#else
#define MOACERT_KERNELS_CPU_VEC_EXP_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {

// e^x lane-wise, within 1 ulp (see above).
template <class D, class V>
HWY_INLINE V VecExp(D d, V x) {
  return hwy::HWY_NAMESPACE::Exp(d, x);
}

}  // namespace moacert::kernels::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
