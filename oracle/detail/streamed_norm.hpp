// rmsnorm's units at the MPFI pass, their rows streamed from the case
// (docs/oracle.md, "The rows streamed at the MPFI pass"). A row of
// rmsnorm reads its row of x and the weight whole: converted into MPFI at
// 64 bits (about 128 bytes an element), the pass's rows at T = 16,
// D = 16384 held the 16 MiB its chunks never go below
// (detail::chunk_limit), sixteen times the case's x and w in f32. So the
// MPFI pass converts neither (OracleOp::streamed_at_mpfi), and a unit
// reads both from the case kStreamedWidth elements at a time, widened to
// double (exact) and converted into a block it reuses, and hands each
// element of y on as it is made.
//
// The operations are dnf::rmsnorm_row's, in its order, on the same values:
// every value is the DNF's bit for bit (tests/oracle/test_oracle_mp.cpp,
// StreamedUnits).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "reference/case.hpp"
#include "reference/dnf/norm_mlp.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/named.hpp"

namespace moacert::oracle::detail {

// Elements per block: 256 of MPFI at the 1024-bit cap are 96 KiB.
inline constexpr moa::extent_t kStreamedWidth = 256;

// The row of an input that starts at `start` (its last index 0), `width`
// elements, read from the case a block at a time: element d of the row is
// valid until the next call that leaves its block.
template <class T>
class StreamedRow {
 public:
  StreamedRow(const AnyTensor& input, moa::Index start, moa::extent_t width)
      : input_(&input), start_(std::move(start)), width_(width) {}

  const T& operator()(moa::extent_t d) {
    if (d < first_ || d >= first_ + moa::extent_t(block_.size())) read_block_of(d);
    return block_[static_cast<std::size_t>(d - first_)];
  }

 private:
  void read_block_of(moa::extent_t d) {
    first_ = d - d % kStreamedWidth;
    const moa::extent_t n = std::min(kStreamedWidth, width_ - first_);
    moa::Index at = start_;
    at[at.rank() - 1] = first_;
    row_.resize(static_cast<std::size_t>(n));
    input_->get_row(at, n, row_.data());
    block_.resize(row_.size());
    for (std::size_t x = 0; x < row_.size(); ++x)
      block_[x] = dnf::ScalarTraits<T>::from_double(row_[x]);
  }

  const AnyTensor* input_;
  moa::Index start_;
  moa::extent_t width_, first_ = 0;
  std::vector<T> block_;
  std::vector<double> row_;
};

// The elements a streamed row holds: a block of x and one of w, each with
// its doubles (counted as elements: at most twice their bytes), and the
// element of y it hands on.
inline double streamed_norm_scratch(const Dims& d) {
  return 4.0 * double(std::min(kStreamedWidth, d.D)) + 1;
}

// Row t of y, each element handed to emit(output, row_major_flat, value)
// as it is made: the row is never held whole.
template <class T, class Emit>
void streamed_norm_row(const Case& c, moa::extent_t t, Emit&& emit) {
  const moa::extent_t D = c.problem.dims.D;
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  StreamedRow<T> x(in["x"], moa::Index{t, 0}, D), w(in["w"], moa::Index{0}, D);
  const int y_out = static_cast<int>(output_position(c.problem.op, "y"));
  T y;  // assigned as the DNF assigns its output's elements
  dnf::rmsnorm_row<T>(D, c.problem.params.eps, x, w, [&](moa::extent_t d, const auto& value) {
    y = value;
    emit(y_out, t * D + d, y);
  });
}

}  // namespace moacert::oracle::detail
