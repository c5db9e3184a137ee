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

namespace moacert {

// Which keys row i of N sees of M under a causal mask: bottom-right aligned
// (the rows aligned with the last N keys, as for a KV cache: moacert's own
// convention) or top-left (with the first N keys: ONNX's is_causal,
// PyTorch's is_causal), which a kernel declares (reference/conventions.hpp).
// The two agree where N = M.
enum class CausalAlignment { bottom_right, top_left };

}  // namespace moacert

namespace moacert::causal {

// The last key row i sees: i + (M - N); below 0 the row sees no key.
template <class I>
MOACERT_HOST_DEVICE constexpr I last_key(I i, I N, I M) {
  return i + (M - N);
}

// A causal mask as one value: whether it masks, and how it is aligned. A
// plain bool is the bottom-right mask (every kernel of moacert's own).
struct Mask {
  bool on = false;
  CausalAlignment alignment = CausalAlignment::bottom_right;
  MOACERT_HOST_DEVICE constexpr Mask(bool masks = false,
                                     CausalAlignment a = CausalAlignment::bottom_right)
      : on(masks), alignment(a) {}
  MOACERT_HOST_DEVICE constexpr explicit operator bool() const { return on; }
  friend constexpr bool operator==(const Mask&, const Mask&) = default;
};

// The last key row i sees under `mask`'s alignment: i + (M - N)
// bottom-right, i top-left; below 0 the row sees no key.
template <class I>
MOACERT_HOST_DEVICE constexpr I last_key(const Mask& mask, I i, I N, I M) {
  return mask.alignment == CausalAlignment::top_left ? i : last_key(i, N, M);
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

// The same under `mask`'s alignment: j top-left.
template <class I>
MOACERT_HOST_DEVICE constexpr I first_row(const Mask& mask, I j, I N, I M) {
  return mask.alignment == CausalAlignment::top_left ? j : first_row(j, N, M);
}

// Whether row i sees key j under `mask`.
template <class I>
MOACERT_HOST_DEVICE constexpr bool sees(const Mask& mask, I i, I j, I N, I M) {
  return !mask.on || j <= last_key(mask, i, N, M);
}

}  // namespace moacert::causal
