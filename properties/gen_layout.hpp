// Generators of shapes and layouts for the MoA core's laws, and for every
// strided kernel input: row-major, column-major, random axis permutations,
// padded strides and tiled layouts. Sizes grow with RapidCheck's size.
#pragma once

#include <algorithm>
#include <numeric>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

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

enum class LayoutKind { row_major, col_major, permuted, padded, tiled };

inline const char* name(LayoutKind k) {
  switch (k) {
    case LayoutKind::row_major:
      return "row-major";
    case LayoutKind::col_major:
      return "col-major";
    case LayoutKind::permuted:
      return "permuted";
    case LayoutKind::padded:
      return "padded";
    case LayoutKind::tiled:
      return "tiled";
  }
  return "?";
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

// A layout of `shape` of the given kind. Tiled layouts take, per axis, a
// random divisor of the extent as the tile; padded ones pad each axis by
// 0..3 slots under a random storage order.
inline rc::Gen<moa::Layout> gen_layout(const moa::Shape& shape, LayoutKind kind) {
  return rc::gen::exec([=] {
    const int r = shape.rank();
    switch (kind) {
      case LayoutKind::row_major:
        return moa::Layout::row_major(shape);
      case LayoutKind::col_major:
        return moa::Layout::col_major(shape);
      case LayoutKind::permuted:
        return moa::Layout::permuted(shape, *gen_permutation(r));
      case LayoutKind::padded: {
        moa::Shape pad;
        for (int k = 0; k < r; ++k) pad.push_back(*rc::gen::inRange<moa::extent_t>(0, 4));
        return moa::Layout::padded(shape, *gen_permutation(r), pad);
      }
      case LayoutKind::tiled: {
        moa::Shape tile;
        for (int k = 0; k < r; ++k) {
          std::vector<moa::extent_t> divisors;
          for (moa::extent_t t = 1; t <= shape[k]; ++t)
            if (shape[k] % t == 0) divisors.push_back(t);
          tile.push_back(*rc::gen::elementOf(divisors));
        }
        return moa::Layout::tiled(shape, tile);
      }
    }
    return moa::Layout::row_major(shape);
  });
}

inline rc::Gen<LayoutKind> gen_layout_kind() {
  return rc::gen::element(LayoutKind::row_major, LayoutKind::col_major, LayoutKind::permuted,
                          LayoutKind::padded, LayoutKind::tiled);
}

}  // namespace moacert::properties
