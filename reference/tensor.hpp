// A tensor whose element type is chosen at run time: the form in which a
// case's inputs, a kernel's outputs and a case file's data travel between
// the oracle, the kernels, the plugin loader and the reports.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "reference/format.hpp"
#include "reference/moa/moa.hpp"
#include "reference/tensor_storage.hpp"

namespace moacert {

// The element types a tensor can hold: the four float formats and int64
// (decode's lens).
enum class DType { f64, f32, bf16, f16, i64 };

constexpr DType dtype_of(Format f) {
  return static_cast<DType>(static_cast<int>(f));
}
constexpr int dtype_bytes(DType t) {
  return t == DType::f64 || t == DType::i64 ? 8 : t == DType::f32 ? 4 : 2;
}
constexpr std::string_view name(DType t) {
  return t == DType::i64 ? std::string_view("i64") : name(static_cast<Format>(static_cast<int>(t)));
}

template <class T>
inline constexpr DType dtype_v = DType::f64;
template <>
inline constexpr DType dtype_v<float> = DType::f32;
template <>
inline constexpr DType dtype_v<bf16> = DType::bf16;
template <>
inline constexpr DType dtype_v<f16> = DType::f16;
template <>
inline constexpr DType dtype_v<std::int64_t> = DType::i64;

// A non-owning reference to typed strided data: what a kernel receives.
struct TensorRef {
  DType dtype;
  void* data;
  moa::Layout layout;

  template <class T>
  moa::View<T> view() const {
    check<T>();
    return moa::View<T>(static_cast<T*>(data), layout);
  }
  template <class T>
  void check() const {
    if (dtype_v<std::remove_const_t<T>> != dtype) {
      throw std::invalid_argument("tensor holds " + std::string(name(dtype)) + ", read as " +
                                  std::string(name(dtype_v<std::remove_const_t<T>>)));
    }
  }
};

// An owning tensor: storage for its layout's cosize, 64-byte aligned.
class AnyTensor {
 public:
  AnyTensor() = default;
  AnyTensor(DType dtype, moa::Layout layout) : dtype_(dtype), layout_(std::move(layout)) {
    const std::size_t bytes = static_cast<std::size_t>(layout_.cosize()) * dtype_bytes(dtype_);
    storage_ = TensorStorage((bytes + 63) / 64 * 64);
  }

  DType dtype() const { return dtype_; }
  const moa::Layout& layout() const { return layout_; }
  moa::Shape shape() const { return layout_.shape(); }
  moa::extent_t size() const { return layout_.size(); }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  std::size_t storage_bytes() const { return storage_.size(); }

  TensorRef ref() { return {dtype_, data(), layout_}; }
  TensorRef ref() const { return {dtype_, const_cast<void*>(data()), layout_}; }

  template <class T>
  moa::View<T> view() {
    return ref().view<T>();
  }
  template <class T>
  moa::View<const T> view() const {
    return ref().view<const T>();
  }

  // The element at a logical index, widened exactly to double (every value
  // of every format, and int64 up to 2^53, is a double).
  double get(const moa::Index& idx) const {
    const std::byte* p = static_cast<const std::byte*>(data()) + layout_(idx) * dtype_bytes(dtype_);
    switch (dtype_) {
      case DType::f64:
        return load<double>(p);
      case DType::f32:
        return load<float>(p);
      case DType::bf16:
        return static_cast<float>(load<bf16>(p));
      case DType::f16:
        return static_cast<float>(load<f16>(p));
      case DType::i64:
        return static_cast<double>(load<std::int64_t>(p));
    }
    return 0;
  }

  // The `count` elements from `idx` along the last axis, widened to double
  // into `out`: a row read with the layout and the type resolved once, where
  // get() per element resolves both every time (the oracle converts rows of
  // hundreds of millions of elements).
  // @pre idx.rank() >= 1
  void get_row(moa::Index idx, moa::extent_t count, double* out) const {
    const int last = idx.rank() - 1;
    if (!layout_.is_flat()) {
      for (moa::extent_t e = 0; e < count; ++e, ++idx[last]) out[e] = get(idx);
      return;
    }
    const std::byte* p = static_cast<const std::byte*>(data()) + layout_(idx) * dtype_bytes(dtype_);
    const std::ptrdiff_t step = std::ptrdiff_t(layout_.stride(last)) * dtype_bytes(dtype_);
    auto widen = [&](auto type) {
      using T = decltype(type);
      for (moa::extent_t e = 0; e < count; ++e, p += step) {
        if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)
          out[e] = static_cast<float>(load<T>(p));
        else
          out[e] = static_cast<double>(load<T>(p));
      }
    };
    switch (dtype_) {
      case DType::f64:
        return widen(double{});
      case DType::f32:
        return widen(float{});
      case DType::bf16:
        return widen(bf16{});
      case DType::f16:
        return widen(f16{});
      case DType::i64:
        return widen(std::int64_t{});
    }
  }

  // Rows [first, first + count) of the tensor, its extents but the last
  // flattened in row-major order, widened to double into `out` one row
  // after another (get_row each).
  // @pre rank >= 1
  void get_rows(moa::extent_t first, moa::extent_t count, double* out) const {
    const moa::Shape s = shape();
    const int last = s.rank() - 1;
    const moa::extent_t width = s[last];
    for (moa::extent_t row = first; row < first + count; ++row, out += width) {
      moa::Index idx = moa::Index::filled(s.rank(), 0);  // the row's first element
      for (moa::extent_t rest = row, a = last - 1; a >= 0; --a) {
        idx[int(a)] = rest % s[int(a)];
        rest /= s[int(a)];
      }
      get_row(idx, width, out);
    }
  }

  // Stores `value` correctly rounded to the element type (nearest, ties to
  // even).
  void set(const moa::Index& idx, double value) {
    std::byte* p = static_cast<std::byte*>(data()) + layout_(idx) * dtype_bytes(dtype_);
    switch (dtype_) {
      case DType::f64:
        store(p, value);
        break;
      case DType::f32:
        store(p, static_cast<float>(value));
        break;
      case DType::bf16:
        store(p, bf16::from_double(value));
        break;
      case DType::f16:
        store(p, f16::from_double(value));
        break;
      case DType::i64:
        store(p, static_cast<std::int64_t>(value));
        break;
    }
  }

  // Stores `count` values along the last axis from `idx`, each as set()
  // would (correctly rounded), with the layout and the type resolved once:
  // the row-wise inverse of get_row, for generating cases of billions of
  // elements.
  // @pre idx.rank() >= 1
  void set_row(moa::Index idx, moa::extent_t count, const double* values) {
    const int last = idx.rank() - 1;
    if (!layout_.is_flat()) {
      for (moa::extent_t e = 0; e < count; ++e, ++idx[last]) set(idx, values[e]);
      return;
    }
    std::byte* p = static_cast<std::byte*>(data()) + layout_(idx) * dtype_bytes(dtype_);
    const std::ptrdiff_t step = std::ptrdiff_t(layout_.stride(last)) * dtype_bytes(dtype_);
    auto narrow = [&](auto round) {
      for (moa::extent_t e = 0; e < count; ++e, p += step) store(p, round(values[e]));
    };
    switch (dtype_) {
      case DType::f64:
        return narrow([](double v) { return v; });
      case DType::f32:
        return narrow([](double v) { return static_cast<float>(v); });
      case DType::bf16:
        return narrow([](double v) { return bf16::from_double(v); });
      case DType::f16:
        return narrow([](double v) { return f16::from_double(v); });
      case DType::i64:
        return narrow([](double v) { return static_cast<std::int64_t>(v); });
    }
  }

  // The same logical values in another layout.
  AnyTensor relayout(moa::Layout layout) const {
    AnyTensor out(dtype_, std::move(layout));
    const int bytes = dtype_bytes(dtype_);
    for (const moa::Index& i : moa::iota(shape())) {
      std::memcpy(static_cast<std::byte*>(out.data()) + out.layout_(i) * bytes,
                  static_cast<const std::byte*>(data()) + layout_(i) * bytes, bytes);
    }
    return out;
  }

 private:
  template <class T>
  static T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  template <class T>
  static void store(std::byte* p, T v) {
    std::memcpy(p, &v, sizeof v);
  }

  DType dtype_ = DType::f32;
  moa::Layout layout_;
  TensorStorage storage_;
};

}  // namespace moacert
