// rmsnorm, cpu.fused: y = x / sqrt(mean(x²) + eps) · w, one pass over each
// row for its sum of squares (Highway-vectorised, four accumulators in a
// fixed order), then one pass that scales. Rows are independent: OpenMP over
// rows, deterministic for any thread count.
#pragma once

#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// x (T,D), w (D) -> y (T,D), any strides.
template <class T>
void rmsnorm_rows(moa::View<const T> x, moa::View<const T> w, double eps, moa::View<T> y,
                  int threads);

}  // namespace moacert::kernels::cpu
