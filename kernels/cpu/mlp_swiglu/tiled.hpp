// mlp.swiglu, cpu.tiled: y = (silu(x W1) ∘ (x W3)) W2 on the packed GEMM of
// gemm.hpp. G = x W1 is one GEMM; x W3 is the second, and silu(G) ∘ (x W3)
// is its epilogue (applied as each output tile is finished), so the product
// x W3 is never stored on its own; then y = H W2 (or y += H W2 for a
// residual).
#pragma once

#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// x (T,Dm), w1, w3 (Dm,F), w2 (F,Dm) -> y (T,Dm); with `accumulate`, y += ...
template <class T>
void mlp_swiglu_tiled(moa::View<const T> x, moa::View<const T> w1, moa::View<const T> w3,
                      moa::View<const T> w2, moa::View<T> y, bool accumulate, int threads);

}  // namespace moacert::kernels::cpu
