// Layouts γ as values.
//
// A layout maps a logical index of a shape to an offset in memory. It is a
// value (shape):(strides) and prints as `(4,3):(3,1)`. Row-major,
// column-major, permuted, padded, broadcast and tiled layouts are
// constructors of this one type, never a convention of a function.
//
// Each logical axis is a mode: a list of (extent, stride) pairs, fastest
// first, as in CuTe. A plain axis has one pair; a tiled axis of extent n and
// tile t has two, (t, n/t), and the coordinate i splits as i % t, i / t. Such
// a layout prints in CuTe's nested notation, `((2,2),3):((3,6),1)`.
#pragma once

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "reference/moa/shape.hpp"

namespace moacert::moa {

inline constexpr int kMaxModeDepth = 4;

class Layout {
 public:
  // One logical axis: `depth` (extent, stride) pairs, fastest first.
  struct Mode {
    int depth = 1;
    std::array<extent_t, kMaxModeDepth> extent{};
    std::array<extent_t, kMaxModeDepth> stride{};

    extent_t size() const {
      extent_t s = 1;
      for (int d = 0; d < depth; ++d) s *= extent[d];
      return s;
    }
    // The offset contributed by coordinate i of this axis.
    extent_t offset(extent_t i) const {
      if (depth == 1) return i * stride[0];
      extent_t off = 0;
      for (int d = 0; d < depth; ++d) {
        off += (i % extent[d]) * stride[d];
        i /= extent[d];
      }
      return off;
    }
  };

  Layout() = default;

  // ---- constructors ------------------------------------------------------

  // Any flat strides >= 0; stride 0 is broadcast. Promises nothing about
  // aliasing (see `bijective` for that promise).
  // @pre shape.rank() == strides.rank(), extents >= 0, strides >= 0
  static Layout strided(const Shape& shape, const Strides& strides) {
    Layout l;
    if (shape.rank() != strides.rank()) {
      throw ShapeError("layout " + shape.str() + ":" + strides.str() + ": rank of shape (" +
                       std::to_string(shape.rank()) + ") and strides (" +
                       std::to_string(strides.rank()) + ") differ");
    }
    for (int k = 0; k < shape.rank(); ++k) {
      Mode m;
      m.extent[0] = shape[k];
      m.stride[0] = strides[k];
      l.modes_.push_back(m);
    }
    l.validate();
    return l;
  }

  // Flat strides that must not alias: refused, naming two axes, when two
  // coordinates would share an offset.
  // @post γ is injective on ι(shape)
  static Layout bijective(const Shape& shape, const Strides& strides) {
    Layout l = strided(shape, strides);
    l.require_injective();
    return l;
  }

  // Row-major (C order): the last axis is contiguous.
  // @post γ(i) == row_major_offset(shape, i), a bijection onto [0, τ)
  static Layout row_major(const Shape& shape) {
    return permuted(shape, identity_perm(shape.rank()));
  }

  // Column-major (Fortran order): the first axis is contiguous.
  static Layout col_major(const Shape& shape) {
    std::vector<int> order(shape.rank());
    std::iota(order.rbegin(), order.rend(), 0);
    return permuted(shape, order);
  }

  // Storage in the axis order `order`, slowest first: permuted((B,H,N,D),
  // {0,2,1,3}) stores a logical BHND tensor as BNHD. A bijection onto [0, τ).
  // @pre order is a permutation of 0..rank-1
  static Layout permuted(const Shape& shape, const std::vector<int>& order) {
    return padded(shape, order, Shape::filled(shape.rank(), 0));
  }

  // Like `permuted`, but axis k occupies extent[k] + pad[k] slots, so rows
  // (and every other axis) can be padded to a pitch. Injective, not onto.
  static Layout padded(const Shape& shape, const std::vector<int>& order, const Shape& pad) {
    const std::string what = "layout of shape " + shape.str();
    check_perm(order, shape.rank(), what);
    if (pad.rank() != shape.rank()) {
      throw ShapeError(what + ": padding " + pad.str() + " has the wrong rank");
    }
    Strides strides = Strides::filled(shape.rank(), 0);
    extent_t step = 1;
    for (int pos = shape.rank() - 1; pos >= 0; --pos) {
      const int axis = order[pos];
      if (pad[axis] < 0) {
        throw ShapeError(what + ": axis " + std::to_string(axis) + " has negative padding " +
                         std::to_string(pad[axis]));
      }
      strides[axis] = step;
      extent_t slots = 0;
      if (__builtin_add_overflow(shape[axis], pad[axis], &slots) ||
          __builtin_mul_overflow(step, std::max<extent_t>(slots, 1), &step)) {
        throw ShapeError(what + ": the span of the layout overflows int64 at axis " +
                         std::to_string(axis));
      }
    }
    return strided(shape, strides);
  }

  // Row-major padded: pad[k] extra slots on axis k (e.g. a row pitch).
  static Layout padded(const Shape& shape, const Shape& pad) {
    return padded(shape, identity_perm(shape.rank()), pad);
  }

  // Row-major, except that each axis in `axes` has stride 0: all its
  // coordinates read the same elements (a batch or a head shared by all).
  // Aliases wherever such an axis has extent > 1, by design.
  // @pre each entry of axes is in 0..rank-1
  // @post γ(i) == row_major_offset(shape, i with every broadcast coordinate 0)
  static Layout broadcast(const Shape& shape, const std::vector<int>& axes) {
    Strides strides = row_major(shape).strides();
    for (int axis : axes) {
      if (axis < 0 || axis >= shape.rank()) {
        throw ShapeError("broadcast layout of shape " + shape.str() + ": axis " +
                         std::to_string(axis) + " is out of range");
      }
      strides[axis] = 0;
    }
    return strided(shape, strides);
  }

  // Blocked: each axis k is cut into tiles of extent tile[k]; tiles are laid
  // out row-major, and each tile is row-major and contiguous inside.
  // @pre tile[k] > 0 divides shape[k]
  // @post a bijection onto [0, τ(shape)): every element is visited once
  static Layout tiled(const Shape& shape, const Shape& tile) {
    const std::string what = "tiled layout of shape " + shape.str() + " by tile " + tile.str();
    if (tile.rank() != shape.rank()) throw ShapeError(what + ": tile has the wrong rank");
    checked_size(shape, what);
    const int r = shape.rank();
    Shape tiles = Shape::filled(r, 0);
    for (int k = 0; k < r; ++k) {
      if (tile[k] <= 0) {
        throw ShapeError(what + ": axis " + std::to_string(k) + " has tile extent " +
                         std::to_string(tile[k]) + ", must be positive");
      }
      if (shape[k] % tile[k] != 0) {
        throw ShapeError(what + ": axis " + std::to_string(k) + " extent " +
                         std::to_string(shape[k]) + " is not a multiple of its tile " +
                         std::to_string(tile[k]));
      }
      tiles[k] = shape[k] / tile[k];
    }
    const extent_t tile_size = tau(tile);
    Layout l;
    extent_t inner = 1, outer = tile_size;
    std::vector<Mode> modes(r);
    for (int k = r - 1; k >= 0; --k) {
      Mode& m = modes[k];
      m.depth = 2;
      m.extent = {tile[k], tiles[k], 0, 0};
      m.stride = {inner, outer, 0, 0};
      inner *= tile[k];
      outer *= tiles[k];
    }
    for (const Mode& m : modes) l.modes_.push_back(m);
    l.validate();
    return l;
  }

  // ---- observers -----------------------------------------------------------

  int rank() const { return static_cast<int>(modes_.size()); }
  const Mode& mode(int k) const { return modes_[k]; }

  Shape shape() const {
    Shape s;
    for (const Mode& m : modes_) s.push_back(m.size());
    return s;
  }
  extent_t size() const { return tau(shape()); }

  // True when every axis is a single (extent, stride) pair.
  bool is_flat() const {
    return std::all_of(modes_.begin(), modes_.end(), [](const Mode& m) { return m.depth == 1; });
  }

  // The stride of a flat axis.
  extent_t stride(int k) const {
    if (modes_[k].depth != 1) {
      throw ShapeError("layout " + str() + ": axis " + std::to_string(k) +
                       " is tiled and has no single stride");
    }
    return modes_[k].stride[0];
  }
  Strides strides() const {
    Strides s;
    for (int k = 0; k < rank(); ++k) s.push_back(stride(k));
    return s;
  }

  // One past the largest offset: the storage an owner must allocate.
  extent_t cosize() const {
    extent_t last = 0;
    for (const Mode& m : modes_) {
      for (int d = 0; d < m.depth; ++d) {
        if (m.extent[d] == 0) return 0;
        last += (m.extent[d] - 1) * m.stride[d];
      }
    }
    return last + 1;
  }

  // γ: the offset of a full index.
  // @pre idx.rank() == rank(), in_bounds(shape(), idx)
  extent_t operator()(const Index& idx) const {
    extent_t off = 0;
    for (int k = 0; k < idx.rank(); ++k) off += modes_[k].offset(idx[k]);
    return off;
  }

  // ψ on the layout: a partial index i of rank r <= rank() fixes the first r
  // axes; the result is the offset of that sub-array and the layout of its
  // remaining axes. ψ(j, ψ(i, A)) == ψ(i ++ j, A).
  std::pair<extent_t, Layout> psi(const Index& idx) const {
    if (idx.rank() > rank() || !in_bounds(shape(), idx)) {
      throw ShapeError("layout " + str() + ": index " + idx.str() + " is out of bounds");
    }
    extent_t off = 0;
    for (int k = 0; k < idx.rank(); ++k) off += modes_[k].offset(idx[k]);
    Layout rest;
    rest.modes_.assign(modes_.begin() + idx.rank(), modes_.end());
    return {off, rest};
  }

  // The same storage seen with its logical axes reordered: result axis k is
  // this layout's axis perm[k] (a transpose when rank is 2).
  Layout permute(const std::vector<int>& perm) const {
    check_perm(perm, rank(), "layout " + str());
    Layout out;
    for (int axis : perm) out.modes_.push_back(modes_[axis]);
    return out;
  }

  // True when γ is injective on ι(shape()). Proven by the sorted-stride test
  // (each stride reaches past everything the smaller strides can span); when
  // that test is inconclusive, decided exhaustively for small layouts.
  bool is_injective() const { return find_alias().empty(); }

  // Throws naming the two axes (or the index pair) that alias.
  void require_injective() const {
    const std::string why = find_alias();
    if (!why.empty()) throw ShapeError("layout " + str() + ": " + why);
  }

  // "(4,3):(3,1)"; tiled modes print nested, "((2,2),3):((3,6),1)".
  std::string str() const {
    auto group = [this](bool strides) {
      std::string s = "(";
      for (int k = 0; k < rank(); ++k) {
        if (k) s += ',';
        const Mode& m = modes_[k];
        if (m.depth > 1) s += '(';
        for (int d = 0; d < m.depth; ++d) {
          if (d) s += ',';
          s += std::to_string(strides ? m.stride[d] : m.extent[d]);
        }
        if (m.depth > 1) s += ')';
      }
      return s + ")";
    };
    return group(false) + ":" + group(true);
  }

  friend bool operator==(const Layout& a, const Layout& b) {
    if (a.rank() != b.rank()) return false;
    for (int k = 0; k < a.rank(); ++k) {
      const Mode &x = a.modes_[k], &y = b.modes_[k];
      if (x.depth != y.depth) return false;
      for (int d = 0; d < x.depth; ++d)
        if (x.extent[d] != y.extent[d] || x.stride[d] != y.stride[d]) return false;
    }
    return true;
  }

 private:
  static std::vector<int> identity_perm(int rank) {
    std::vector<int> p(rank);
    std::iota(p.begin(), p.end(), 0);
    return p;
  }

  static void check_perm(const std::vector<int>& perm, int rank, const std::string& what) {
    if (static_cast<int>(perm.size()) != rank) {
      throw ShapeError(what + ": axis order has " + std::to_string(perm.size()) +
                       " entries for rank " + std::to_string(rank));
    }
    std::vector<bool> seen(rank, false);
    for (int k = 0; k < rank; ++k) {
      if (perm[k] < 0 || perm[k] >= rank || seen[perm[k]]) {
        throw ShapeError(what + ": axis order entry " + std::to_string(k) + " (" +
                         std::to_string(perm[k]) + ") is not a permutation of 0.." +
                         std::to_string(rank - 1));
      }
      seen[perm[k]] = true;
    }
  }

  // Refuses negative extents or strides and spans that overflow int64.
  void validate() const {
    Shape s;
    for (int k = 0; k < rank(); ++k) {
      const Mode& m = modes_[k];
      for (int d = 0; d < m.depth; ++d) {
        if (m.extent[d] < 0 || m.stride[d] < 0) {
          const bool extent = m.extent[d] < 0;
          throw ShapeError("layout " + str() + ": axis " + std::to_string(k) + " has negative " +
                           (extent ? "extent " : "stride ") +
                           std::to_string(extent ? m.extent[d] : m.stride[d]));
        }
      }
    }
    checked_size(shape(), "layout " + str());
    extent_t last = 0;
    for (int k = 0; k < rank(); ++k) {
      const Mode& m = modes_[k];
      for (int d = 0; d < m.depth; ++d) {
        extent_t reach = 0;
        if (m.extent[d] > 0 && (__builtin_mul_overflow(m.extent[d] - 1, m.stride[d], &reach) ||
                                __builtin_add_overflow(last, reach, &last))) {
          throw ShapeError("layout " + str() + ": the span of the layout overflows int64 at axis " +
                           std::to_string(k));
        }
      }
    }
  }

  // Empty when injective, else why not.
  std::string find_alias() const {
    struct Leaf {
      extent_t extent, stride;
      int axis;
    };
    std::vector<Leaf> leaves;
    for (int k = 0; k < rank(); ++k) {
      const Mode& m = modes_[k];
      for (int d = 0; d < m.depth; ++d) {
        if (m.extent[d] == 0) return {};  // no index at all: trivially injective
        if (m.extent[d] > 1) leaves.push_back({m.extent[d], m.stride[d], k});
      }
    }
    std::sort(leaves.begin(), leaves.end(),
              [](const Leaf& a, const Leaf& b) { return a.stride < b.stride; });
    // Sorted-stride test: if every stride exceeds the largest offset the
    // smaller-strided leaves reach, offsets are a mixed-radix number system.
    extent_t reach = 0;
    bool proven = true;
    for (const Leaf& leaf : leaves) {
      if (leaf.stride == 0) {
        return "axis " + std::to_string(leaf.axis) + " has stride 0 over extent " +
               std::to_string(leaf.extent) + ", so its coordinates alias";
      }
      if (leaf.stride <= reach) {
        proven = false;
        break;
      }
      reach += (leaf.extent - 1) * leaf.stride;
    }
    if (proven) return {};
    // Inconclusive: decide exhaustively when the span is small.
    const extent_t span = cosize();
    constexpr extent_t kExhaustiveLimit = extent_t{1} << 24;
    if (span > kExhaustiveLimit || size() > kExhaustiveLimit) {
      return "cannot prove the layout injective (strides overlap and the span " +
             std::to_string(span) + " is too large to check exhaustively)";
    }
    std::vector<extent_t> owner(span, -1);
    const Shape s = shape();
    extent_t linear = 0;
    for (const Index& idx : iota(s)) {
      const extent_t off = (*this)(idx);
      if (owner[off] >= 0) {
        Index first = Index::filled(s.rank(), 0);
        for (extent_t rem = owner[off], k = s.rank() - 1; k >= 0; --k) {
          first[static_cast<int>(k)] = rem % s[static_cast<int>(k)];
          rem /= s[static_cast<int>(k)];
        }
        int a = -1, b = -1;  // the first and last axes on which the two indices differ
        for (int k = 0; k < s.rank(); ++k) {
          if (first[k] == idx[k]) continue;
          if (a < 0) a = k;
          b = k;
        }
        if (a == b) {
          return "axis " + std::to_string(a) + " aliases itself: indices " + first.str() + " and " +
                 idx.str() + " share offset " + std::to_string(off);
        }
        return "axes " + std::to_string(a) + " and " + std::to_string(b) + " alias: indices " +
               first.str() + " and " + idx.str() + " share offset " + std::to_string(off);
      }
      owner[off] = linear++;
    }
    return {};
  }

  std::vector<Mode> modes_;
};

}  // namespace moacert::moa
