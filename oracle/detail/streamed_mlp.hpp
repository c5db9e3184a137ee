// mlp.swiglu's units with the weights streamed (docs/oracle.md, "mlp.swiglu:
// the weights streamed"): a row t of y = (silu(x W1) ∘ (x W3)) W2 needs
// every weight, 3·Dm·F elements, 10.5 GB of f32 at Llama 3.1 405B's widths
// (Dm = 16384, F = 53248). Converted into a pass's intervals they were 42 GB
// of the first pass's and 84 GB of the double-double pass's. So these units
// read only their row of x (ops/rows.cpp), and the weights are read from
// the case a row at a time, widened to double (exact) and converted one
// element at a time.
//
// The sums are the DNF's (dnf::mlp_swiglu, reference/dnf/norm_mlp.hpp):
// each element of x W1, x W3 and H W2 adds its terms from zero in the
// order of p, the operations of dnf::matmul; only the loops are nested the
// other way (p outermost, so that a weight's row is read once and whole,
// where the DNF's j-then-p walks W1 down its columns). The double-double
// and MPFI passes, and the reference first pass, run this: their
// enclosures are the DNF's. The vectorised first pass runs all the
// selected rows together in blocks (fast_mlp.cpp).
#pragma once

#include <algorithm>
#include <vector>

#include "reference/case.hpp"
#include "reference/dnf/norm_mlp.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/named.hpp"

namespace moacert::oracle::detail {

// The elements one streamed row holds: x_t, gate, up and y, and a weight's
// row of doubles (counted as elements: at most twice its bytes).
inline double streamed_mlp_scratch(const Dims& d) {
  return 2.0 * double(d.Dm) + 2.0 * double(d.F) + double(std::max(d.Dm, d.F));
}

// The vectorised first pass's blocks (fast_mlp.cpp): each thread reads
// kStreamedRowsPerBlock rows of a weight at a time, kStreamedColumns
// columns of them, into doubles. Terms per block as fast_reductions.cpp's
// kBlock; 256 columns keep R = 16 rows' sums of W1 and W3 (128 KiB) and
// the block (64 KiB) in a core's L2.
inline constexpr moa::extent_t kStreamedRowsPerBlock = 32;
inline constexpr moa::extent_t kStreamedColumns = 256;
inline double streamed_block_doubles(const Dims& d) {
  return double(kStreamedRowsPerBlock) * double(std::min(kStreamedColumns, std::max(d.Dm, d.F)));
}

// Row t of y, each element handed to emit(output, row_major_flat, value).
template <class T, class Emit>
void streamed_mlp_row(const Case& c, moa::extent_t t, Emit&& emit) {
  using S = dnf::ScalarTraits<T>;
  const Dims& d = c.problem.dims;
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  const AnyTensor &x = in["x"], &w1 = in["w1"], &w3 = in["w3"], &w2 = in["w2"];
  std::vector<double> row(static_cast<std::size_t>(std::max(d.Dm, d.F)));
  auto widened = [&](const AnyTensor& m, moa::extent_t r, moa::extent_t width) {
    m.get_row({r, 0}, width, row.data());
    return row.data();
  };
  std::vector<T> xt(static_cast<std::size_t>(d.Dm));
  const double* xr = widened(x, t, d.Dm);
  for (std::size_t p = 0; p < xt.size(); ++p) xt[p] = S::from_double(xr[p]);

  std::vector<T> gate(static_cast<std::size_t>(d.F), S::zero()), up = gate;
  for (moa::extent_t p = 0; p < d.Dm; ++p) {
    const T& xp = xt[static_cast<std::size_t>(p)];
    const double* r1 = widened(w1, p, d.F);
    for (std::size_t f = 0; f < gate.size(); ++f) gate[f] += xp * S::from_double(r1[f]);
    const double* r3 = widened(w3, p, d.F);
    for (std::size_t f = 0; f < up.size(); ++f) up[f] += xp * S::from_double(r3[f]);
  }
  for (std::size_t f = 0; f < gate.size(); ++f) gate[f] = dnf::silu(gate[f]) * up[f];
  up = {};

  std::vector<T> y(static_cast<std::size_t>(d.Dm), S::zero());
  for (moa::extent_t f = 0; f < d.F; ++f) {
    const T& hf = gate[static_cast<std::size_t>(f)];
    const double* r2 = widened(w2, f, d.Dm);
    for (std::size_t j = 0; j < y.size(); ++j) y[j] += hf * S::from_double(r2[j]);
  }
  const int y_out = static_cast<int>(output_position(c.problem.op, "y"));
  for (moa::extent_t j = 0; j < d.Dm; ++j)
    emit(y_out, t * d.Dm + j, y[static_cast<std::size_t>(j)]);
}

}  // namespace moacert::oracle::detail
