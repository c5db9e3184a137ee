// The MoA shape ρ, multi-indices and index generation ι.
//
// A Shape is the vector of extents ρA of an array A; an Index is a vector of
// coordinates. Both are small fixed-capacity vectors of int64, so they are
// cheap values. ι of a shape enumerates every index of that shape in
// row-major (lexicographic) order, the order in which rav lays out an array.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>

namespace moacert::moa {

using extent_t = std::int64_t;
inline constexpr int kMaxRank = 8;

// Every refusal of a shape or layout is a ShapeError whose message names the
// object (printed as a layout or shape) and the offending axis.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A fixed-capacity vector of int64 (rank <= kMaxRank): the common storage of
// Shape, Index and Strides.
class IntVec {
 public:
  constexpr IntVec() = default;
  IntVec(std::initializer_list<extent_t> values) : IntVec(std::span<const extent_t>(values)) {}
  explicit IntVec(std::span<const extent_t> values) {
    if (values.size() > static_cast<std::size_t>(kMaxRank)) {
      throw ShapeError("rank " + std::to_string(values.size()) + " exceeds the maximum rank " +
                       std::to_string(kMaxRank));
    }
    for (extent_t v : values) v_[rank_++] = v;
  }

  static IntVec filled(int rank, extent_t value) {
    IntVec out;
    for (int k = 0; k < rank; ++k) out.push_back(value);
    return out;
  }

  constexpr int rank() const { return rank_; }
  constexpr bool empty() const { return rank_ == 0; }
  constexpr extent_t operator[](int k) const { return v_[k]; }
  constexpr extent_t& operator[](int k) { return v_[k]; }
  const extent_t* begin() const { return v_.data(); }
  const extent_t* end() const { return v_.data() + rank_; }
  extent_t* begin() { return v_.data(); }
  extent_t* end() { return v_.data() + rank_; }
  std::span<const extent_t> span() const { return {v_.data(), static_cast<std::size_t>(rank_)}; }

  void push_back(extent_t value) {
    if (rank_ == kMaxRank)
      throw ShapeError("rank exceeds the maximum rank " + std::to_string(kMaxRank));
    v_[rank_++] = value;
  }

  // The first `count` entries, and the entries from `first` on.
  IntVec take(int count) const { return IntVec(span().subspan(0, count)); }
  IntVec drop(int first) const { return IntVec(span().subspan(first)); }

  // Concatenation: a ++ b.
  friend IntVec operator+(const IntVec& a, const IntVec& b) {
    IntVec out = a;
    for (extent_t v : b) out.push_back(v);
    return out;
  }

  friend bool operator==(const IntVec& a, const IntVec& b) {
    if (a.rank_ != b.rank_) return false;
    for (int k = 0; k < a.rank_; ++k)
      if (a.v_[k] != b.v_[k]) return false;
    return true;
  }

  // "(4,3)"; a rank-0 vector prints as "()".
  std::string str() const {
    std::string s = "(";
    for (int k = 0; k < rank_; ++k) {
      if (k) s += ',';
      s += std::to_string(v_[k]);
    }
    return s + ")";
  }

 private:
  std::array<extent_t, kMaxRank> v_{};
  int rank_ = 0;
};

using Shape = IntVec;    // ρ: extents, each >= 0
using Index = IntVec;    // a (full or partial) multi-index
using Strides = IntVec;  // γ's per-axis step in elements

// Product of the extents, refusing negative extents and int64 overflow.
// `what` names the object in the message.
inline extent_t checked_size(const Shape& shape, const std::string& what) {
  extent_t size = 1;
  for (int k = 0; k < shape.rank(); ++k) {
    if (shape[k] < 0) {
      throw ShapeError(what + ": axis " + std::to_string(k) + " has negative extent " +
                       std::to_string(shape[k]));
    }
    if (__builtin_mul_overflow(size, shape[k], &size)) {
      throw ShapeError(what + ": the product of the extents overflows int64 at axis " +
                       std::to_string(k));
    }
  }
  return size;
}

// Refuses extents of zero where an op or constructor requires every axis to
// be non-empty.
inline void require_positive(const Shape& shape, const std::string& what) {
  for (int k = 0; k < shape.rank(); ++k) {
    if (shape[k] <= 0) {
      throw ShapeError(what + ": axis " + std::to_string(k) + " has extent " +
                       std::to_string(shape[k]) + ", must be positive");
    }
  }
}

// τ, the number of elements of an array of this shape (checked).
inline extent_t tau(const Shape& shape) {
  return checked_size(shape, "shape " + shape.str());
}

// ι over a shape: every index of `shape` in row-major order.
// @post visits exactly τ(shape) indices, each once, lexicographically ascending.
class IndexRange {
 public:
  explicit IndexRange(Shape shape) : shape_(shape) { tau(shape_); }

  class iterator {
   public:
    using value_type = Index;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const Shape* shape, bool end) : shape_(shape), end_(end) {
      idx_ = Index::filled(shape->rank(), 0);
      for (extent_t e : *shape) end_ = end_ || e == 0;
    }
    const Index& operator*() const { return idx_; }
    iterator& operator++() {
      for (int k = shape_->rank() - 1; k >= 0; --k) {
        if (++idx_[k] < (*shape_)[k]) return *this;
        idx_[k] = 0;
      }
      end_ = true;  // wrapped around every axis (or rank 0: the one index is done)
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& other) const {
      return end_ == other.end_ && (end_ || idx_ == other.idx_);
    }

   private:
    const Shape* shape_ = nullptr;
    Index idx_;
    bool end_ = true;
  };

  iterator begin() const { return iterator(&shape_, false); }
  iterator end() const { return iterator(&shape_, true); }

 private:
  Shape shape_;
};

inline IndexRange iota(const Shape& shape) {
  return IndexRange(shape);
}

// The row-major position of `idx` in `shape` (the inverse of ι's order).
inline extent_t row_major_offset(const Shape& shape, const Index& idx) {
  extent_t off = 0;
  for (int k = 0; k < shape.rank(); ++k) off = off * shape[k] + idx[k];
  return off;
}

// True when 0 <= idx[k] < shape[k] on the first idx.rank() axes.
inline bool in_bounds(const Shape& shape, const Index& idx) {
  if (idx.rank() > shape.rank()) return false;
  for (int k = 0; k < idx.rank(); ++k)
    if (idx[k] < 0 || idx[k] >= shape[k]) return false;
  return true;
}

}  // namespace moacert::moa
