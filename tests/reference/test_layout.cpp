// The laws of the MoA core, checked exhaustively on every coordinate of every
// small shape (rank <= 3, extents 1..4), and its refusals of bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <vector>

#include "reference/format.hpp"
#include "reference/moa/layout_kind.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::moa {
namespace {

// Every shape of rank 0..3 with extents in 1..4.
std::vector<Shape> small_shapes() {
  std::vector<Shape> out{Shape{}};
  for (int rank = 1; rank <= 3; ++rank) {
    for (const Index& e : iota(Shape::filled(rank, 4))) {
      Shape s;
      for (extent_t x : e) s.push_back(x + 1);
      out.push_back(s);
    }
  }
  return out;
}

std::vector<std::vector<int>> all_permutations(int rank) {
  std::vector<int> p(rank);
  std::iota(p.begin(), p.end(), 0);
  std::vector<std::vector<int>> out;
  do out.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return out;
}

// Every divisor tiling of a shape.
std::vector<Shape> all_tiles(const Shape& s) {
  std::vector<Shape> out;
  for (const Index& t : iota(s)) {
    Shape tile;
    bool divides = true;
    for (int k = 0; k < s.rank(); ++k) {
      tile.push_back(t[k] + 1);
      divides = divides && s[k] % (t[k] + 1) == 0;
    }
    if (divides) out.push_back(tile);
  }
  return out;
}

// Every layout constructor applied to every small shape, with the promise
// each makes: `onto` when the image is exactly [0, τ).
struct Case {
  Layout layout;
  bool onto;
};

std::vector<Case> all_small_layouts() {
  std::vector<Case> out;
  for (const Shape& s : small_shapes()) {
    out.push_back({Layout::row_major(s), true});
    out.push_back({Layout::col_major(s), true});
    for (const auto& p : all_permutations(s.rank())) {
      out.push_back({Layout::permuted(s, p), true});
      Shape pad;
      for (int k = 0; k < s.rank(); ++k) pad.push_back((k + 1) % 3);
      out.push_back({Layout::padded(s, p, pad), false});
    }
    for (const Shape& t : all_tiles(s)) out.push_back({Layout::tiled(s, t), true});
  }
  return out;
}

// Law: γ is injective on ι(ρ), and its image lies in [0, cosize); for the
// bijective constructors the image is exactly [0, τ).
TEST(LayoutLaws, GammaIsInjectiveOnEverySmallShape) {
  const auto cases = all_small_layouts();
  ASSERT_GT(cases.size(), 1000u);
  for (const Case& c : cases) {
    std::set<extent_t> offsets;
    for (const Index& i : iota(c.layout.shape())) {
      const extent_t off = c.layout(i);
      ASSERT_GE(off, 0) << c.layout.str();
      ASSERT_LT(off, c.layout.cosize()) << c.layout.str();
      ASSERT_TRUE(offsets.insert(off).second) << c.layout.str() << " repeats offset " << off;
    }
    ASSERT_EQ(static_cast<extent_t>(offsets.size()), c.layout.size()) << c.layout.str();
    EXPECT_TRUE(c.layout.is_injective()) << c.layout.str();
    if (c.onto) {
      EXPECT_EQ(c.layout.cosize(), c.layout.size()) << c.layout.str();
    }
  }
}

// Law: a tiled layout visits each element of [0, τ) exactly once, and tile
// by tile: the offsets of one tile are contiguous.
TEST(LayoutLaws, TiledLayoutVisitsEveryElementOnce) {
  for (const Shape& s : small_shapes()) {
    for (const Shape& t : all_tiles(s)) {
      const Layout l = Layout::tiled(s, t);
      std::vector<int> hits(static_cast<std::size_t>(tau(s)), 0);
      for (const Index& i : iota(s)) ++hits[static_cast<std::size_t>(l(i))];
      for (int h : hits) ASSERT_EQ(h, 1) << l.str();
      const extent_t tile_size = tau(t);
      for (const Index& i : iota(s)) {
        Index tile_origin = i;
        for (int k = 0; k < s.rank(); ++k) tile_origin[k] = i[k] / t[k] * t[k];
        const extent_t base = l(tile_origin);
        ASSERT_EQ(base % tile_size, 0) << l.str();
        ASSERT_LT(l(i) - base, tile_size) << l.str() << " at " << i.str();
      }
    }
  }
}

// Law: a broadcast layout reads, at every index, the row-major element of
// that index with each broadcast coordinate set to 0.
// @post γ_broadcast(i) == γ_row_major(i with i[a] = 0 for each a in axes)
TEST(LayoutLaws, BroadcastReadsTheFirstCoordinateOfItsAxes) {
  for (const Shape& s : small_shapes()) {
    for (int a = 0; a < s.rank(); ++a) {
      for (const std::vector<int>& axes : {std::vector<int>{a}, std::vector<int>{0, a}}) {
        const Layout l = Layout::broadcast(s, axes), rm = Layout::row_major(s);
        for (const Index& i : iota(s)) {
          Index j = i;
          for (int x : axes) j[x] = 0;
          ASSERT_EQ(l(i), rm(j)) << l.str() << " at " << i.str();
        }
        bool aliases = false;
        for (int x : axes) aliases = aliases || s[x] > 1;
        EXPECT_EQ(l.is_injective(), !aliases) << l.str();
      }
    }
  }
  EXPECT_THROW(Layout::broadcast(Shape{2, 3}, {2}), ShapeError);
}

// Law: each layout kind names its constructor: make_layout(kind, s, args)
// is Layout::<kind>(s, args...), and the default arguments give, at every
// rank, a layout of that kind (injective but for broadcast, onto [0, τ)
// but for padded; permuted differs from row-major where two swapped axes
// are longer than 1, padded spans more once there are two rows).
TEST(LayoutKinds, NameTheirConstructors) {
  for (const Shape& s : small_shapes()) {
    if (s.rank() == 0) continue;
    const Layout rm = Layout::row_major(s);
    EXPECT_EQ(make_layout(LayoutKind::row_major, s), rm);
    EXPECT_EQ(make_layout(LayoutKind::col_major, s), Layout::col_major(s));
    for (LayoutKind k : kInjectiveLayoutKinds) {
      const Layout l = make_layout(k, s);
      EXPECT_EQ(l.shape(), s) << name(k) << " " << l.str();
      EXPECT_TRUE(l.is_injective()) << name(k) << " " << l.str();
      if (k != LayoutKind::padded) {
        EXPECT_EQ(l.cosize(), l.size()) << name(k) << " " << l.str();
      }
    }
    const int a = s.rank() >= 3 ? 1 : 0, b = a + 1;
    if (s.rank() >= 2 && s[a] > 1 && s[b] > 1) {
      EXPECT_NE(make_layout(LayoutKind::permuted, s), rm) << s.str();
    }
    if (s.rank() >= 2 && s[s.rank() - 2] > 1) {  // the row pitch shows
      EXPECT_GT(make_layout(LayoutKind::padded, s).cosize(), rm.cosize());
    }
    EXPECT_EQ(make_layout(LayoutKind::broadcast, s), Layout::broadcast(s, {0}));
    const LayoutArgs args{.order = {}, .pad = {}, .tile = Shape::filled(s.rank(), 1), .axes = {}};
    EXPECT_EQ(make_layout(LayoutKind::tiled, s, args), Layout::tiled(s, args.tile));
  }
}

// Law: ψ(j, ψ(i, A)) == ψ(i ++ j, A) for every split of every full index.
TEST(LayoutLaws, PsiOfPsiIsPsiOfTheJoinedIndex) {
  for (const Case& c : all_small_layouts()) {
    const Layout& l = c.layout;
    std::vector<int> storage(static_cast<std::size_t>(std::max<extent_t>(l.cosize(), 1)));
    const View<int> a(storage.data(), l);
    for (const Index& full : iota(l.shape())) {
      for (int cut = 0; cut <= full.rank(); ++cut) {
        const View<int> sub = psi(full.take(cut), a);
        ASSERT_EQ(sub.rank(), l.rank() - cut);
        ASSERT_EQ(&sub(full.drop(cut)), &a(full)) << l.str() << " split at " << cut;
        ASSERT_EQ(&psi(full.drop(cut), sub)(Index{}), &a(full)) << l.str();
      }
    }
  }
}

// Law: viewing through a permuted layout and back is the identity, and the
// transposed view reads A[i,j] at (j,i).
TEST(LayoutLaws, PermuteAndBackIsTheIdentity) {
  for (const Case& c : all_small_layouts()) {
    const Layout& l = c.layout;
    for (const auto& p : all_permutations(l.rank())) {
      std::vector<int> inverse(p.size());
      for (std::size_t k = 0; k < p.size(); ++k) inverse[p[k]] = static_cast<int>(k);
      const Layout t = l.permute(p);
      ASSERT_EQ(t.permute(inverse), l) << l.str();
      for (const Index& i : iota(l.shape())) {
        Index j = i;
        for (int k = 0; k < l.rank(); ++k) j[k] = i[p[k]];
        ASSERT_EQ(t(j), l(i)) << l.str() << " permuted by " << t.str();
      }
    }
  }
}

// Law: rank-2 row-major γ is i*n + j and column-major is i + j*m.
TEST(LayoutLaws, RowAndColumnMajorMatchTheirFormulas) {
  for (extent_t m = 1; m <= 9; ++m) {
    for (extent_t n = 1; n <= 9; ++n) {
      const Layout r = Layout::row_major({m, n}), c = Layout::col_major({m, n});
      for (extent_t i = 0; i < m; ++i) {
        for (extent_t j = 0; j < n; ++j) {
          ASSERT_EQ(r({i, j}), i * n + j);
          ASSERT_EQ(c({i, j}), i + j * m);
        }
      }
    }
  }
}

// ι enumerates every index once in row-major order; rav follows it.
TEST(MoaCore, IotaIsRowMajorAndRavFollowsIt) {
  for (const Shape& s : small_shapes()) {
    extent_t expect = 0;
    for (const Index& i : iota(s)) ASSERT_EQ(row_major_offset(s, i), expect++) << s.str();
    ASSERT_EQ(expect, tau(s));
  }
  EXPECT_EQ(std::distance(iota(Shape{3, 0, 2}).begin(), iota(Shape{3, 0, 2}).end()), 0);

  // A column-major 2x3 array whose storage is 0..5 ravels as its transpose.
  std::vector<int> storage{0, 1, 2, 3, 4, 5};
  const View<int> a(storage.data(), Layout::col_major({2, 3}));
  EXPECT_EQ(rav(a), (std::vector<int>{0, 2, 4, 1, 3, 5}));
  const auto t = Tensor<int>::from_rav(Layout::padded({2, 3}, {0, 2}), {7, 8, 9, 10, 11, 12});
  EXPECT_EQ(t.storage().size(), 8u);
  EXPECT_EQ(rav(t.view()), (std::vector<int>{7, 8, 9, 10, 11, 12}));
}

TEST(MoaCore, LayoutsPrintAsShapeColonStrides) {
  EXPECT_EQ(Layout::row_major({4, 3}).str(), "(4,3):(3,1)");
  EXPECT_EQ(Layout::col_major({4, 3}).str(), "(4,3):(1,4)");
  EXPECT_EQ(Layout::permuted({2, 3, 4}, {0, 2, 1}).str(), "(2,3,4):(12,1,3)");
  EXPECT_EQ(Layout::padded({4, 3}, {0, 2}).str(), "(4,3):(5,1)");
  EXPECT_EQ(Layout::strided({4, 3}, {0, 1}).str(), "(4,3):(0,1)");
  EXPECT_EQ(Layout::tiled({4, 6}, {2, 3}).str(), "((2,2),(3,2)):((3,12),(1,6))");
  EXPECT_EQ(Layout::row_major({}).str(), "():()");
}

// Bad input is refused with a message naming the layout and the axis.
void expect_refusal(const std::function<void()>& make, const std::string& fragment) {
  try {
    make();
    ADD_FAILURE() << "accepted; expected a refusal mentioning '" << fragment << "'";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << fragment;
  }
}

TEST(MoaCoreRefuses, NegativeExtents) {
  expect_refusal([] { Layout::row_major({4, -3}); }, "axis 1 has negative extent -3");
  expect_refusal([] { Layout::strided({2, -1}, {1, 1}); }, "axis 1 has negative extent");
  expect_refusal([] { Layout::padded({4, 3}, {0, -1}); }, "axis 1 has negative padding");
}

TEST(MoaCoreRefuses, ZeroExtentsWhereForbidden) {
  expect_refusal(
      [] {
        require_positive({4, 0, 2}, "attention.fwd q");
      },
      "attention.fwd q: axis 1 has extent 0, must be positive");
  expect_refusal([] { Layout::tiled({4, 6}, {2, 0}); }, "axis 1 has tile extent 0");
  expect_refusal([] { Layout::tiled({4, 6}, {3, 3}); }, "axis 0 extent 4 is not a multiple");
  // Zero extents are allowed where nothing forbids them: an empty array.
  EXPECT_EQ(Layout::row_major({3, 0}).size(), 0);
}

TEST(MoaCoreRefuses, AliasingStridesWhereABijectionIsPromised) {
  expect_refusal([] { Layout::bijective({4, 3}, {1, 1}); }, "(4,3):(1,1): axes 0 and 1 alias");
  expect_refusal([] { Layout::bijective({4, 3}, {2, 1}); }, "axes 0 and 1 alias");
  expect_refusal([] { Layout::bijective({2, 5}, {1, 0}); }, "axis 1 has stride 0");
  expect_refusal([] { Layout::bijective({2, 3, 4}, {12, 4, 4}); }, "axes 1 and 2 alias");
  // Overlapping strides that still never collide are accepted.
  EXPECT_TRUE(Layout::bijective({2, 2}, {3, 2}).is_injective());
  EXPECT_NO_THROW(Layout::bijective({4, 3}, {3, 1}));
  // Broadcast is fine when no bijection is promised.
  EXPECT_FALSE(Layout::strided({2, 5}, {1, 0}).is_injective());
}

TEST(MoaCoreRefuses, SizesThatOverflowInt64) {
  const extent_t big = extent_t{1} << 31;
  expect_refusal([] { tau({big, big, 4}); }, "overflows int64 at axis 2");
  expect_refusal([] { Layout::row_major({big, big, 4}); }, "overflows int64 at axis");
  expect_refusal(
      [] {
        Layout::strided({3, 2}, {extent_t{1} << 62, 1});
      },
      "overflows int64 at axis 0");
  const extent_t huge = extent_t{1} << 40;
  expect_refusal(
      [] {
        Layout::padded({huge, 2}, {0, huge});
      },
      "span of the layout overflows int64 at axis 0");
}

TEST(MoaCoreRefuses, OutOfBoundsPsiAndRankMismatch) {
  const Layout l = Layout::row_major({4, 3});
  expect_refusal([&] { l.psi({4}); }, "index (4) is out of bounds");
  expect_refusal([&] { l.psi({1, 2, 0}); }, "out of bounds");
  expect_refusal([] { Layout::strided({4, 3}, {1}); }, "rank of shape (2) and strides (1) differ");
  expect_refusal([] { Layout::permuted({4, 3}, {0, 0}); }, "is not a permutation");
  expect_refusal([] { Layout::tiled({4, 6}, {2, 3}).stride(0); }, "axis 0 is tiled");
}

// The 16-bit storage formats round to nearest even and keep NaN a NaN.
TEST(Formats, SixteenBitStorageRoundsToNearestEven) {
  EXPECT_EQ(bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bf16(1.00390625f).bits, 0x3f80);  // exactly halfway, ties to even (down)
  EXPECT_EQ(bf16(1.01171875f).bits, 0x3f82);  // halfway, ties to even (up)
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x7f80)), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(static_cast<float>(bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(f16(65520.0f).bits, 0x7c00);       // the overflow threshold rounds to inf
  EXPECT_EQ(f16(5.9604645e-8f).bits, 0x0001);  // the smallest subnormal
  EXPECT_EQ(info(Format::bf16).precision, 8);
  EXPECT_EQ(parse_format("f16"), Format::f16);
  EXPECT_EQ(parse_format("f8"), std::nullopt);
}

}  // namespace
}  // namespace moacert::moa
