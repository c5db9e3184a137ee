// Layout's constructors by name. A test case or a generated case says "this
// input is padded", and every tensor of its problem, whatever its rank, gets
// a layout made by that constructor. The kind is not part of the layout: a
// layout is only its (shape):(strides) value; the kind says which
// constructor made it and LayoutArgs what that constructor was given.
#pragma once

#include <numeric>
#include <utility>
#include <vector>

#include "reference/moa/layout.hpp"

namespace moacert::moa {

// One entry per constructor of Layout that takes a shape and a rule (strided
// and bijective take raw strides, and have no kind).
enum class LayoutKind { row_major, col_major, permuted, padded, tiled, broadcast };

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
    case LayoutKind::broadcast:
      return "broadcast";
  }
  return "?";
}

// The kinds whose layouts are injective: what an output may be laid out in.
inline constexpr LayoutKind kInjectiveLayoutKinds[] = {LayoutKind::row_major, LayoutKind::col_major,
                                                       LayoutKind::permuted, LayoutKind::padded,
                                                       LayoutKind::tiled};

// What a constructor takes besides the shape; each kind reads its own fields.
struct LayoutArgs {
  std::vector<int> order;  // permuted, padded: storage order, slowest axis first
  Shape pad;               // padded: extra slots per axis
  Shape tile;              // tiled: tile extent per axis, dividing it
  std::vector<int> axes;   // broadcast: the axes of stride 0
};

// Layout::<kind>(shape, args...).
inline Layout make_layout(LayoutKind kind, const Shape& shape, const LayoutArgs& a) {
  switch (kind) {
    case LayoutKind::row_major:
      return Layout::row_major(shape);
    case LayoutKind::col_major:
      return Layout::col_major(shape);
    case LayoutKind::permuted:
      return Layout::permuted(shape, a.order);
    case LayoutKind::padded:
      return Layout::padded(shape, a.order, a.pad);
    case LayoutKind::tiled:
      return Layout::tiled(shape, a.tile);
    case LayoutKind::broadcast:
      return Layout::broadcast(shape, a.axes);
  }
  return Layout::row_major(shape);
}

// Arguments that make each kind a real instance of itself at every rank,
// for the tests that name a kind without choosing its arguments:
//   permuted   axes 1 and 2 swapped from rank 3 on ((B,H,N,D) stored as
//              BNHD, (B,H,N) as BNH), transposed at rank 2, itself at rank 1
//   padded     row-major order, the last axis padded by 3 (a row pitch that
//              no vector width divides) and the one before by 1
//   tiled      tiles of 2 along every even extent, of 1 along odd ones
//   broadcast  stride 0 along axis 0 (the batch)
inline LayoutArgs default_args(LayoutKind kind, const Shape& shape) {
  const int r = shape.rank();
  LayoutArgs a;
  a.order.resize(static_cast<std::size_t>(r));
  std::iota(a.order.begin(), a.order.end(), 0);
  switch (kind) {
    case LayoutKind::permuted:
      if (r >= 3) std::swap(a.order[1], a.order[2]);
      if (r == 2) std::swap(a.order[0], a.order[1]);
      break;
    case LayoutKind::padded:
      a.pad = Shape::filled(r, 0);
      if (r >= 1) a.pad[r - 1] = 3;
      if (r >= 2) a.pad[r - 2] = 1;
      break;
    case LayoutKind::tiled:
      a.tile = Shape::filled(r, 1);
      for (int k = 0; k < r; ++k)
        if (shape[k] % 2 == 0) a.tile[k] = 2;
      break;
    case LayoutKind::broadcast:
      if (r >= 1) a.axes = {0};
      break;
    default:
      break;
  }
  return a;
}

inline Layout make_layout(LayoutKind kind, const Shape& shape) {
  return make_layout(kind, shape, default_args(kind, shape));
}

}  // namespace moacert::moa
