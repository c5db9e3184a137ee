// The laws of the MoA core as RapidCheck properties over random shapes and
// layouts (rank up to 5, extents up to 12), beyond the exhaustive small set.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>  // needs gtest.h first

#include <algorithm>
#include <vector>

#include "properties/gen_layout.hpp"

namespace moacert::properties {
namespace {

using moa::extent_t;
using moa::Index;
using moa::Layout;
using moa::LayoutKind;
using moa::Shape;

// A random layout of a random shape, tagged with its kind.
struct Drawn {
  LayoutKind kind;
  Layout layout;
};

Drawn draw_layout() {
  const Shape shape = *gen_shape(1, 5, 12);
  const LayoutKind kind = *gen_layout_kind();
  RC_TAG(name(kind));
  return {kind, *gen_layout(shape, kind)};
}

// Law: γ is injective on ι(ρ); the bijective constructors are onto [0, τ).
RC_GTEST_PROP(LayoutProps, GammaIsInjective, ()) {
  const Drawn d = draw_layout();
  const Layout& l = d.layout;
  std::vector<char> seen(static_cast<std::size_t>(l.cosize()), 0);
  for (const Index& i : moa::iota(l.shape())) {
    const extent_t off = l(i);
    RC_ASSERT(off >= 0);
    RC_ASSERT(off < l.cosize());
    RC_ASSERT(!seen[static_cast<std::size_t>(off)]);
    seen[static_cast<std::size_t>(off)] = 1;
  }
  RC_ASSERT(l.is_injective());
  if (d.kind != LayoutKind::padded) RC_ASSERT(l.cosize() == l.size());
}

// Law: ψ(j, ψ(i, A)) == ψ(i ++ j, A) for a random index and split.
RC_GTEST_PROP(LayoutProps, PsiOfPsiIsPsiOfTheJoinedIndex, ()) {
  const Layout l = draw_layout().layout;
  const Shape s = l.shape();
  Index full;
  for (int k = 0; k < s.rank(); ++k) full.push_back(*rc::gen::inRange<extent_t>(0, s[k]));
  const int cut = *rc::gen::inRange(0, s.rank() + 1);
  std::vector<float> storage(static_cast<std::size_t>(l.cosize()));
  const moa::View<float> a(storage.data(), l);
  const moa::View<float> sub = moa::psi(full.take(cut), a);
  RC_ASSERT(&sub(full.drop(cut)) == &a(full));
  RC_ASSERT(sub.layout().rank() == l.rank() - cut);
}

// Law: permuting the logical axes and permuting back is the identity, and
// the permuted view reads the same element at the permuted index.
RC_GTEST_PROP(LayoutProps, PermuteAndBackIsTheIdentity, ()) {
  const Layout l = draw_layout().layout;
  const std::vector<int> p = *gen_permutation(l.rank());
  std::vector<int> inverse(p.size());
  for (std::size_t k = 0; k < p.size(); ++k) inverse[p[k]] = static_cast<int>(k);
  const Layout t = l.permute(p);
  RC_ASSERT(t.permute(inverse) == l);
  for (const Index& i : moa::iota(l.shape())) {
    Index j = i;
    for (int k = 0; k < l.rank(); ++k) j[k] = i[p[k]];
    RC_ASSERT(t(j) == l(i));
  }
}

// Law: a tiled layout visits each element of [0, τ) exactly once.
RC_GTEST_PROP(LayoutProps, TiledVisitsEachElementOnce, ()) {
  const Shape s = *gen_shape(1, 4, 12);
  const Layout l = *gen_layout(s, LayoutKind::tiled);
  std::vector<int> hits(static_cast<std::size_t>(moa::tau(s)), 0);
  for (const Index& i : moa::iota(s)) ++hits[static_cast<std::size_t>(l(i))];
  RC_ASSERT(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
}

// Law: `bijective` accepts exactly the injective flat layouts: random
// strides either build a layout that never repeats an offset, or are
// refused.
RC_GTEST_PROP(LayoutProps, BijectiveAcceptsExactlyTheInjectiveStrides, ()) {
  const Shape s = *gen_shape(1, 3, 6);
  moa::Strides st;
  for (int k = 0; k < s.rank(); ++k) st.push_back(*rc::gen::inRange<extent_t>(0, 8));
  const Layout plain = Layout::strided(s, st);
  std::vector<char> seen(static_cast<std::size_t>(plain.cosize()), 0);
  bool injective = true;
  for (const Index& i : moa::iota(s)) {
    char& c = seen[static_cast<std::size_t>(plain(i))];
    injective = injective && !c;
    c = 1;
  }
  RC_TAG(injective ? "injective" : "aliasing");
  bool accepted = true;
  try {
    Layout::bijective(s, st);
  } catch (const moa::ShapeError&) {
    accepted = false;
  }
  RC_ASSERT(accepted == injective);
}

}  // namespace
}  // namespace moacert::properties
