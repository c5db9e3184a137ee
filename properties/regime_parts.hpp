// The classifiers of the parts that ops' arithmetic shares (a softmax's
// rows, RMSNorm's sums of squares, the gated MLP's GEMMs and gates), from
// which each op's classifier (properties/ops/) is composed; defined in
// regimes.cpp.
#pragma once

#include <functional>
#include <vector>

#include "properties/regimes.hpp"
#include "reference/matrix_rows.hpp"

namespace moacert::properties {

// A tensor's values in row-major order of its logical shape.
std::vector<double> dense(const AnyTensor& t);

// A tensor's rows (its extents but the last flattened, row-major), `count`
// of them from `first`, as doubles: a pointer valid until the next call.
// One head at a time, where the whole tensor in doubles would be gigabytes
// (decode's cache at L = 131072 is 1 GiB of doubles per tensor).
using RowsAsDouble = std::function<const double*(moa::extent_t first, moa::extent_t count)>;
RowsAsDouble rows_as_double(const AnyTensor& t);
RowsAsDouble rows_as_double(const std::vector<double>& row_major, moa::extent_t width);

// The softmax regimes of attention's rows: q (B, H, N, D) and k (B, Hkv, M,
// D); `lens` decode's cache lengths (empty: M for every batch).
void classify_softmax(const RowsAsDouble& q, const RowsAsDouble& k, const Dims& dm,
                      causal::Mask causal, double scale, const std::vector<double>& lens,
                      const FormatLimits& l, Regimes& out);

// The regimes of RMSNorm's rows: x (rows, D) row-major.
void classify_sums_of_squares(const double* x, moa::extent_t rows, moa::extent_t D, double eps,
                              const FormatLimits& l, Regimes& out);

// The regimes of the gated MLP's GEMMs x W1, x W3 and of silu over its gate
// arguments x W1: x (T, Dm) row-major, w1 and w3 (Dm, F) read a piece of a
// row at a time; with w2 (F, Dm), the down projection's too, over h =
// silu(x W1) * (x W3) in double.
void classify_gates(const double* x, const MatrixRows& w1, const MatrixRows& w3, moa::extent_t T,
                    moa::extent_t Dm, moa::extent_t F, Format f, const FormatLimits& l,
                    Regimes& out, const MatrixRows* w2 = nullptr);

}  // namespace moacert::properties
