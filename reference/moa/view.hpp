// Strided views: a pointer and a layout, the element type a template
// parameter. ψ indexes a view fully (an element) or partially (a sub-array
// view); rav lists its elements in row-major order.
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "reference/moa/layout.hpp"

namespace moacert::moa {

template <class T>
class View {
 public:
  using value_type = std::remove_const_t<T>;

  View() = default;
  View(T* data, Layout layout) : data_(data), layout_(std::move(layout)) {}

  // A view of const elements from one of mutable ones.
  operator View<const T>() const { return View<const T>(data_, layout_); }

  T* data() const { return data_; }
  const Layout& layout() const { return layout_; }
  Shape shape() const { return layout_.shape(); }
  int rank() const { return layout_.rank(); }
  extent_t size() const { return layout_.size(); }

  // ψ with a full index: the element.
  // @pre idx.rank() == rank(), in bounds
  T& operator()(const Index& idx) const { return data_[layout_(idx)]; }
  template <class... I>
  requires(std::is_integral_v<I>&&...) T& operator()(I... i) const {
    return data_[layout_(Index{static_cast<extent_t>(i)...})];
  }

  // ψ with a partial index: the sub-array it selects.
  View sub(const Index& idx) const {
    auto [off, rest] = layout_.psi(idx);
    return View(data_ + off, std::move(rest));
  }

 private:
  T* data_ = nullptr;
  Layout layout_;
};

// ψ (MoA): psi(i, A) is A's element when i is a full index, the sub-array
// otherwise. ψ(j, ψ(i, A)) == ψ(i ++ j, A).
template <class T>
View<T> psi(const Index& idx, const View<T>& a) {
  return a.sub(idx);
}

// rav: the elements of a view in row-major logical order.
template <class T>
std::vector<std::remove_const_t<T>> rav(const View<T>& a) {
  std::vector<std::remove_const_t<T>> out;
  out.reserve(static_cast<std::size_t>(a.size()));
  for (const Index& idx : iota(a.shape())) out.push_back(a(idx));
  return out;
}

// An owning array: storage sized to its layout's cosize, viewed through it.
template <class T>
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Layout layout)
      : layout_(std::move(layout)), storage_(static_cast<std::size_t>(layout_.cosize())) {}
  explicit Tensor(const Shape& shape) : Tensor(Layout::row_major(shape)) {}

  // A tensor in `layout` holding `values` (row-major logical order).
  static Tensor from_rav(Layout layout, const std::vector<T>& values) {
    Tensor t(std::move(layout));
    if (static_cast<extent_t>(values.size()) != t.size()) {
      throw ShapeError("tensor of layout " + t.layout_.str() + " needs " +
                       std::to_string(t.size()) + " values, got " + std::to_string(values.size()));
    }
    std::size_t i = 0;
    for (const Index& idx : iota(t.shape())) t.view()(idx) = values[i++];
    return t;
  }

  View<T> view() { return View<T>(storage_.data(), layout_); }
  View<const T> view() const { return View<const T>(storage_.data(), layout_); }
  const Layout& layout() const { return layout_; }
  Shape shape() const { return layout_.shape(); }
  extent_t size() const { return layout_.size(); }
  std::vector<T>& storage() { return storage_; }
  const std::vector<T>& storage() const { return storage_; }

 private:
  Layout layout_;
  std::vector<T> storage_;
};

}  // namespace moacert::moa
