// attention.decode's head (b, h) with its kv head's cache streamed from the
// case (docs/oracle.md, "decode: the cache streamed at the MPFI pass"). A
// head reads its kv head's K and V whole: at L = 131072, D = 128, 33.5
// million elements, which the MPFI pass converted at 64 bits (about 128
// bytes an element) were 4 GiB, four times the case's own K and V. So the
// MPFI pass converts q alone (OracleOp::streamed_at_mpfi) and this reads the
// cache's rows from the case kStreamedKeys at a time, widened to double
// (exact) and converted into a block of T that is reused.
//
// The operations are dnf::attention_decode's on that head: each score's
// dot is Reductions<T>::dots on its key row alone, which a block of rows
// leaves unchanged; the softmax is dnf::softmax_of_dots; and each value
// sum goes on from block to block (dnf::plain_weighted_sum_onto), the plain
// loops' operations in their order. For a T whose Reductions are the plain
// loops (MPFI, double) the values are the DNF's bit for bit
// (tests/oracle/test_streamed_decode.cpp).
#pragma once

#include <algorithm>
#include <vector>

#include "reference/case.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/reductions.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/named.hpp"

namespace moacert::oracle::detail {

// Keys per block: 64 rows of D = 128 are 8192 elements, 3 MiB of MPFI at
// the 1024-bit cap.
inline constexpr moa::extent_t kStreamedKeys = 64;

// The elements one streamed head holds beside its softmax row: a block of
// K or V rows and a row of doubles (counted as elements).
inline double streamed_decode_scratch(const Dims& d) {
  return double(std::min(kStreamedKeys, d.M) + 1) * double(d.D);
}

// Head (b, h) of the case's decode: q_row (D) its query converted, `scale`
// the attention scale; writes o (D) and lse.
template <class T>
void streamed_decode_head(const Case& c, const moa::View<const T>& q_row, const T& scale,
                          moa::extent_t b, moa::extent_t h, moa::extent_t len, T* o, T& lse) {
  using S = dnf::ScalarTraits<T>;
  const Dims& d = c.problem.dims;
  const moa::extent_t g = h / (d.H / d.Hkv);
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  std::vector<T> block(static_cast<std::size_t>(std::min(kStreamedKeys, len) * d.D));
  std::vector<double> row(static_cast<std::size_t>(d.D));
  // Rows j0 .. j0 + n - 1 of kv head (b, g) of `cache` (B, Hkv, L, D), as
  // an (n, D) view of T.
  auto rows = [&](const AnyTensor& cache, moa::extent_t j0, moa::extent_t n) {
    for (moa::extent_t j = 0; j < n; ++j) {
      cache.get_row({b, g, j0 + j, 0}, d.D, row.data());
      for (std::size_t x = 0; x < row.size(); ++x)
        block[static_cast<std::size_t>(j * d.D) + x] = S::from_double(row[x]);
    }
    return moa::View<const T>(block.data(), moa::Layout::row_major(moa::Shape{n, d.D}));
  };
  auto for_each_block = [&](auto&& f) {
    for (moa::extent_t j0 = 0; j0 < len; j0 += kStreamedKeys)
      f(j0, std::min(kStreamedKeys, len - j0));
  };

  dnf::SoftmaxRow<T> softmax = dnf::unscored_row<T>(d.M, len);
  for_each_block([&](moa::extent_t j0, moa::extent_t n) {
    dnf::Reductions<T>::dots(q_row, rows(in["k"], j0, n), n, softmax.p.data() + j0);
  });
  dnf::softmax_of_dots(softmax, len, len, scale);
  std::fill(o, o + d.D, S::zero());
  for_each_block([&](moa::extent_t j0, moa::extent_t n) {
    dnf::plain_weighted_sum_onto(softmax.p.data() + j0, rows(in["v"], j0, n), n, o);
  });
  lse = softmax.lse;
}

}  // namespace moacert::oracle::detail
