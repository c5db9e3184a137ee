// Causal visibility, written once for host and device code: query row i of
// N sees key j of M when j <= i + (M - N), the rows aligned with the last N
// keys (bottom-right, as for a KV cache; docs/design.md, "Ops"). The DNF,
// the CPU kernels, the oracle's units, the cost functions and the CUDA ONFs
// (kernels/cuda/, compiled by nvcc or on the host emulator) all read it
// from here. Plain integer arithmetic, constexpr and without a library
// call, so that nvcc compiles it for the device too.
#pragma once

#if defined(__CUDACC__)
#define MOACERT_HOST_DEVICE __host__ __device__
#else
#define MOACERT_HOST_DEVICE
#endif

namespace moacert::causal {

// The last key row i sees: i + (M - N); below 0 the row sees no key.
template <class I>
MOACERT_HOST_DEVICE constexpr I last_key(I i, I N, I M) {
  return i + (M - N);
}

// Whether row i sees key j (every key without `causal`).
template <class I>
MOACERT_HOST_DEVICE constexpr bool sees(bool causal, I i, I j, I N, I M) {
  return !causal || j <= last_key(i, N, M);
}

// The first row that sees key j: j - (M - N); rows at or past it see j
// (the visible rows of a key are a suffix, as its visible keys a prefix).
template <class I>
MOACERT_HOST_DEVICE constexpr I first_row(I j, I N, I M) {
  return j - (M - N);
}

}  // namespace moacert::causal
