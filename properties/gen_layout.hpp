// Generators of shapes and layouts for the MoA core's laws, and for every
// strided kernel input: each layout is one of the MoA core's constructors
// (reference/moa/layout_kind.hpp) with random arguments. Sizes grow with
// RapidCheck's size.
#pragma once

#include <algorithm>
#include <numeric>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

#include "reference/moa/layout_kind.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::moa {

// How RapidCheck prints shapes and layouts in a counterexample.
inline void showValue(const IntVec& v, std::ostream& os) {
  os << v.str();
}
inline void showValue(const Layout& l, std::ostream& os) {
  os << l.str();
}

}  // namespace moacert::moa

namespace moacert::properties {

// A shape of rank in [min_rank, max_rank], each extent in [1, max_extent];
// extents grow with RapidCheck's size and shrink towards 1.
inline rc::Gen<moa::Shape> gen_shape(int min_rank, int max_rank, moa::extent_t max_extent) {
  return rc::gen::withSize([=](int size) {
    const moa::extent_t cap = std::clamp<moa::extent_t>(1 + size * max_extent / 100, 1, max_extent);
    return rc::gen::exec([=] {
      const int rank = *rc::gen::inRange(min_rank, max_rank + 1);
      moa::Shape s;
      for (int k = 0; k < rank; ++k) s.push_back(*rc::gen::inRange<moa::extent_t>(1, cap + 1));
      return s;
    });
  });
}

// A random permutation of 0..rank-1.
inline rc::Gen<std::vector<int>> gen_permutation(int rank) {
  std::vector<int> p(rank);
  std::iota(p.begin(), p.end(), 0);
  return rc::gen::exec([p] {
    std::vector<int> q = p;  // Fisher-Yates, shrinking towards the identity
    for (int k = static_cast<int>(q.size()) - 1; k > 0; --k)
      std::swap(q[k], q[*rc::gen::inRange(0, k + 1)]);
    return q;
  });
}

// The arguments of a random layout of `kind` for `shape`, drawn inside a
// generator (rc::gen::exec): a random storage order (permuted), 0..3 slots
// of padding per axis under a random order (padded), a random divisor of
// each extent as its tile (tiled), stride 0 on the batch axis and, half the
// time from rank 3 on, on the head axis (broadcast). The draws, and so the
// cases of a seed and the tokens that name them, are those of the
// generators before the kinds moved to the MoA core.
inline moa::LayoutArgs draw_layout_args(const moa::Shape& shape, moa::LayoutKind kind) {
  const int r = shape.rank();
  moa::LayoutArgs a;
  switch (kind) {
    case moa::LayoutKind::row_major:
    case moa::LayoutKind::col_major:
      break;
    case moa::LayoutKind::permuted:
      a.order = *gen_permutation(r);
      break;
    case moa::LayoutKind::padded:
      for (int k = 0; k < r; ++k) a.pad.push_back(*rc::gen::inRange<moa::extent_t>(0, 4));
      a.order = *gen_permutation(r);
      break;
    case moa::LayoutKind::tiled:
      for (int k = 0; k < r; ++k) {
        std::vector<moa::extent_t> divisors;
        for (moa::extent_t t = 1; t <= shape[k]; ++t)
          if (shape[k] % t == 0) divisors.push_back(t);
        a.tile.push_back(*rc::gen::elementOf(divisors));
      }
      break;
    case moa::LayoutKind::broadcast:
      a.axes = {0};
      if (r >= 3 && *rc::gen::arbitrary<bool>()) a.axes.push_back(1);
      break;
  }
  return a;
}

// A random layout of `kind`, drawn inside a generator.
inline moa::Layout draw_layout(const moa::Shape& shape, moa::LayoutKind kind) {
  return moa::make_layout(kind, shape, draw_layout_args(shape, kind));
}

inline rc::Gen<moa::Layout> gen_layout(const moa::Shape& shape, moa::LayoutKind kind) {
  return rc::gen::exec([=] { return draw_layout(shape, kind); });
}

// The injective kinds but broadcast's.
inline rc::Gen<moa::LayoutKind> gen_layout_kind() {
  using K = moa::LayoutKind;
  return rc::gen::element(K::row_major, K::col_major, K::permuted, K::padded, K::tiled);
}

}  // namespace moacert::properties
