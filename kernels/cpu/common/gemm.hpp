// A blocked, packed GEMM of our own (no BLAS): C (m,n) = A (m,k) · B (k,n)
// with an epilogue, in f32 and f64, for mlp.swiglu (cpu.tiled) and block
// (cpu.composed).
//
// ONF (the Goto/BLIS loop nest, cut into tasks): OpenMP tasks are (MC rows)
// × (NC_TASK columns) blocks of C, scheduled dynamically, each with its own
// packing and no barrier inside; in a task, pc over k by KC (B block packed
// into NR-wide panels, A block into MR-high slivers), then jr, ir and a
// register micro-kernel of MR × NR = 6 × (2 vectors) accumulators,
// Highway-vectorised with runtime dispatch. Packing reads any strides, so every operand may be
// strided. Each C element sums its k-blocks in ascending order whatever the
// thread count: deterministic, no atomics.
#pragma once

#include <algorithm>

#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// The GEMM's tiles, one definition for the kernel (gemm.cpp) and its
// scratch (gemm_scratch_elements): MR x NR micro-tiles, NR = 2 vectors of
// the dispatched target's lanes.
struct GemmTiles {
  static constexpr moa::extent_t mr = 6;         // micro-tile rows
  static constexpr moa::extent_t mc = 144;       // rows of a packed A block (a multiple of MR)
  static constexpr moa::extent_t kc = 256;       // depth of a packed block
  static constexpr moa::extent_t nc_task = 256;  // columns of a task's packed B block, at most
  static constexpr moa::extent_t nr(moa::extent_t lanes) { return 2 * lanes; }
  // NC_TASK in whole NR-wide panels, at least one.
  static constexpr moa::extent_t nc_task_of(moa::extent_t nr_) {
    return std::max(nr_, nc_task / nr_ * nr_);
  }
};

enum class Epilogue {
  store,       // C = A B
  accumulate,  // C += A B (a residual already in C)
  silu_mul,    // C = silu(G) ∘ (A B), G a (m,n) operand; silu(z) = z / (1 + exp(-z))
};

template <class T>
void gemm(moa::View<const T> a, moa::View<const T> b, moa::View<T> c, Epilogue epilogue,
          moa::View<const T> gate, int threads);

// C = A B with the store epilogue.
template <class T>
void gemm(moa::View<const T> a, moa::View<const T> b, moa::View<T> c, int threads) {
  gemm<T>(a, b, c, Epilogue::store, moa::View<const T>(), threads);
}

// The packing buffers of one call, all threads, in elements.
double gemm_scratch_elements(int element_bytes, moa::extent_t m, moa::extent_t n, moa::extent_t k,
                             int threads);

}  // namespace moacert::kernels::cpu
