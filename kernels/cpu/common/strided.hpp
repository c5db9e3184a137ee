// Flat strided tensors, the one definition every CPU kernel reads its
// layouts through: a pointer and one stride per axis, in elements, read into
// the kernel's argument block before its loops (CONTRIBUTING.md, style 6). A tiled layout
// (several (extent, stride) pairs on one axis) has no single stride per
// axis; with_flat_layouts copies such a tensor into a row-major temporary
// (inputs) or computes into one and copies back (outputs), so the kernels
// that take it see flat strides only.
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "reference/moa/moa.hpp"
#include "reference/tensor.hpp"

namespace moacert::kernels::cpu {

// An extent of the problem (reference/problem.hpp's Dims, signed) in the
// loops' unsigned type, read once where a kernel's settings are read.
inline std::size_t extent(moa::extent_t e) {
  return static_cast<std::size_t>(e);
}

// x rounded up to a whole number of `to` (vectors, tiles).
// @pre to >= 1   @post result % to == 0, x <= result < x + to
inline std::size_t round_up(std::size_t x, std::size_t to) {
  return (x + to - 1) / to * to;
}

// A rank-R tensor with one stride per axis: element (i_0, ..., i_{R-1}) is
// p[Σ_k i_k s[k]]. P may be `const void` / `void` in an argument block that
// serves several storage types; as<S>() gives the typed tensor.
template <class P, int R>
struct Strided {
  P* p = nullptr;
  std::array<moa::extent_t, R> s{};

  // The first element of the innermost axis at the R - 1 leading indices.
  template <class... I>
  requires(sizeof...(I) == R - 1) P* row(I... i) const {
    return offset(std::array<moa::extent_t, R - 1>{moa::extent_t(i)...});
  }
  // The element at R indices.
  template <class... I>
  requires(sizeof...(I) == R) decltype(auto) at(I... i) const {
    return *offset(std::array<moa::extent_t, R>{moa::extent_t(i)...});
  }
  // The stride of the innermost axis: 1 for contiguous rows.
  moa::extent_t inner() const { return s[R - 1]; }

  template <class S>
  Strided<S, R> as() const {
    return {static_cast<S*>(p), s};
  }

 private:
  template <std::size_t K>
  P* offset(const std::array<moa::extent_t, K>& idx) const {
    moa::extent_t at = 0;
    for (std::size_t k = 0; k < K; ++k) at += idx[k] * s[k];
    return p + at;
  }
};

// The strides of a flat layout of rank R.
// @pre l.is_flat(), l.rank() == R
template <int R>
std::array<moa::extent_t, R> strides_of(const moa::Layout& l) {
  std::array<moa::extent_t, R> s{};
  for (int k = 0; k < R; ++k) s[std::size_t(k)] = l.stride(k);
  return s;
}

// A view with one stride per axis as a Strided of its rank (a view without
// data, an absent operand, as the empty Strided).
template <int R, class P>
Strided<P, R> strided(const moa::View<P>& x) {
  if (x.data() == nullptr) return {};
  return {x.data(), strides_of<R>(x.layout())};
}
// A tensor of the call, type-erased, as a Strided of rank R: an input
// (read only) or an output.
// @pre t.layout.is_flat(), t.layout.rank() == R
template <int R>
Strided<const void, R> strided_in(const TensorRef& t) {
  return {t.data, strides_of<R>(t.layout)};
}
template <int R>
Strided<void, R> strided_out(const TensorRef& t) {
  return {t.data, strides_of<R>(t.layout)};
}

// The same tensor with its element type erased: for an argument block that
// serves several storage types (Strided::as gives it back).
template <class P, int R>
auto erased(const Strided<P, R>& x) {
  using V = std::conditional_t<std::is_const_v<P>, const void, void>;
  return Strided<V, R>{x.p, x.s};
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
