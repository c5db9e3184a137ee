// A matrix read a piece of a row at a time, in doubles: a row-major
// moa::Tensor<double>'s row in place, or a case's input (any format, any
// layout) widened into the caller's buffer. mlp.swiglu's weights are 10.5
// GB of f32 at Llama 3.1 405B's widths and 21 GB in doubles, so the
// products over them (the oracle's a priori bounds, the regime classifier)
// read them through this, never widened whole. Implicit from either, so
// callers pass the matrix itself.
#pragma once

#include "reference/moa/moa.hpp"
#include "reference/tensor.hpp"

namespace moacert {

class MatrixRows {
 public:
  MatrixRows(const moa::Tensor<double>& m) : mat_(&m) {}
  MatrixRows(const AnyTensor& t) : tensor_(&t) {}
  moa::Shape shape() const { return mat_ ? mat_->shape() : tensor_->shape(); }
  // Row p's elements j0 .. j0 + w: in place, or widened into `buffer` (w
  // doubles).
  const double* row(moa::extent_t p, moa::extent_t j0, moa::extent_t w, double* buffer) const {
    if (mat_) return mat_->storage().data() + p * mat_->shape()[1] + j0;
    tensor_->get_row({p, j0}, w, buffer);
    return buffer;
  }

 private:
  const moa::Tensor<double>* mat_ = nullptr;
  const AnyTensor* tensor_ = nullptr;
};

}  // namespace moacert
