// What cpu.flash and cpu.split need of a layout: four flat strides read into
// named locals before the loops. A tiled layout (several (extent, stride)
// pairs on one axis) has no single stride per axis; such a tensor is copied
// into a row-major temporary (inputs) or computed into one and copied back
// (outputs), so the kernels see flat strides only.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "reference/moa/moa.hpp"
#include "reference/tensor.hpp"

namespace moacert::kernels::cpu {

// The per-axis strides, in elements, of a rank-4 attention tensor
// (B, H, N, D) or (B, Hkv, M, D), or a rank-3 one (B, H, N) with d = 0.
struct Strides4 {
  moa::extent_t b = 0, h = 0, n = 0, d = 0;
};

inline Strides4 strides_of(const moa::Layout& l) {
  Strides4 s;
  s.b = l.stride(0);
  s.h = l.stride(1);
  s.n = l.stride(2);
  if (l.rank() > 3) s.d = l.stride(3);
  return s;
}

// Copies the logical elements of `from` into `to` (same shape and dtype).
inline void copy_elements(const TensorRef& from, const TensorRef& to) {
  const int bytes = dtype_bytes(from.dtype);
  for (const moa::Index& i : moa::iota(from.layout.shape())) {
    std::memcpy(static_cast<std::byte*>(to.data) + to.layout(i) * bytes,
                static_cast<const std::byte*>(from.data) + from.layout(i) * bytes, bytes);
  }
}

// Runs fn(inputs, outputs) with every tensor in a flat layout: tiled ones
// travel through row-major temporaries. Flat ones (the common case) are
// passed through untouched.
template <class Fn>
void with_flat_layouts(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                       Fn&& fn) {
  std::vector<AnyTensor> temps;
  temps.reserve(inputs.size() + outputs.size());
  std::vector<TensorRef> in(inputs.begin(), inputs.end()), out(outputs.begin(), outputs.end());
  for (TensorRef& t : in) {
    if (t.layout.is_flat()) continue;
    temps.emplace_back(t.dtype, moa::Layout::row_major(t.layout.shape()));
    copy_elements(t, temps.back().ref());
    t = temps.back().ref();
  }
  std::vector<std::size_t> copied_back;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k].layout.is_flat()) continue;
    temps.emplace_back(out[k].dtype, moa::Layout::row_major(out[k].layout.shape()));
    out[k] = temps.back().ref();
    copied_back.push_back(k);
  }
  fn(std::span<const TensorRef>(in), std::span<const TensorRef>(out));
  for (std::size_t k : copied_back) copy_elements(out[k], outputs[k]);
}

}  // namespace moacert::kernels::cpu
