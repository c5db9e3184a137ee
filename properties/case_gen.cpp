#include "properties/case_gen.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "include/moacert/splitmix64.hpp"
#include "properties/gen_layout.hpp"
#include "properties/regimes.hpp"

namespace moacert::properties {

using moa::extent_t;
using moa::Layout;
using moa::Shape;

const char* name(Values v) {
  switch (v) {
    case Values::uniform:
      return "uniform";
    case Values::normal:
      return "normal";
    case Values::large_logits:
      return "large-logits";
    case Values::ties:
      return "ties";
    case Values::dominant:
      return "dominant-key";
    case Values::tiny_scale:
      return "tiny-scale";
    case Values::extreme:
      return "extreme-magnitudes";
    case Values::exp_overflow:
      return "exp-overflow";
    case Values::underflowing_tile:
      return "underflowing-tile";
    case Values::no_key_rows:
      return "no-key-rows";
    case Values::one_hot:
      return "one-hot";
    case Values::silu_range:
      return "silu-range";
    case Values::cancellation:
      return "cancellation";
    case Values::rms_range:
      return "rms-range";
  }
  return "?";
}

std::string describe(const CaseSpec& s) {
  const Problem& p = s.problem;
  const Dims& d = p.dims;
  std::ostringstream os;
  os << info(p.op).name << ' ' << name(p.format);
  switch (p.op) {
    case Op::rmsnorm:
      os << " T=" << d.T << " D=" << d.D << " eps=" << p.params.eps;
      break;
    case Op::mlp_swiglu:
      os << " T=" << d.T << " Dm=" << d.Dm << " F=" << d.F;
      break;
    case Op::block:
      os << " B=" << d.B << " N=" << d.N << " Dm=" << d.Dm << " H=" << d.H << " Hkv=" << d.Hkv
         << " D=" << d.D << " F=" << d.F << " eps=" << p.params.eps;
      break;
    default:
      os << " B=" << d.B << " H=" << d.H << " Hkv=" << d.Hkv << " N=" << d.N
         << (p.op == Op::attention_decode ? " L=" : " M=") << d.M << " D=" << d.D
         << (p.causal() ? " causal" : "") << " scale=" << p.scale();
  }
  os << " values=" << name(s.values) << " seed=" << s.seed;
  if (!s.lens.empty()) {
    os << " lens=(";
    for (std::size_t b = 0; b < s.lens.size(); ++b) os << (b ? "," : "") << s.lens[b];
    os << ')';
  }
  const auto inputs = info(p.op).inputs;
  for (std::size_t k = 0; k < s.layouts.size(); ++k)
    os << "\n  " << inputs[k] << ' ' << s.layouts[k].str();
  return os.str();
}

void showValue(const CaseSpec& s, std::ostream& os) {
  os << describe(s);
}

namespace {

// One of `choices`, drawn with the given weights; shrinks towards the first.
template <class T>
T pick_weighted(const std::vector<std::pair<int, T>>& choices) {
  int total = 0;
  for (const auto& c : choices) total += c.first;
  int r = *rc::gen::inRange(0, total);
  for (const auto& c : choices) {
    if (r < c.first) return c.second;
    r -= c.first;
  }
  return choices.front().second;
}

bool is_attention(Op op) {
  return op == Op::attention_fwd || op == Op::attention_bwd || op == Op::attention_fwdbwd ||
         op == Op::attention_decode;
}

// An extent in `r`: mostly small (from r.lo, growing with RapidCheck's
// size), now and then r.lo, and now and then one of t-1, t, t+1 for a tile
// t of the kernels under test. Over every extent (r free) these are
// generation 1's draws.
rc::Gen<extent_t> gen_extent(extent_t max_small, const std::vector<extent_t>& tiles,
                             ExtentRange r = {}) {
  if (r.fixed()) return rc::gen::just(r.lo);
  std::vector<extent_t> straddle;
  for (extent_t t : tiles)
    for (extent_t e : {t - 1, t, t + 1})
      if (e >= 1 && r.contains(e)) straddle.push_back(e);
  return rc::gen::withSize([=](int size) {
    const extent_t cap = std::clamp<extent_t>(1 + size * max_small / 100, 1, max_small);
    const extent_t top = r.lo + std::min(cap - 1, r.hi - r.lo);
    const rc::Gen<extent_t> small = rc::gen::inRange<extent_t>(r.lo, top + 1);
    if (straddle.empty() || size < 30) {
      return rc::gen::weightedOneOf<extent_t>({{8, small}, {1, rc::gen::just(r.lo)}});
    }
    return rc::gen::weightedOneOf<extent_t>(
        {{8, small}, {1, rc::gen::just(r.lo)}, {1, rc::gen::elementOf(straddle)}});
  });
}

// `g`'s values, each shrinking towards r.lo as an integer does, not only
// within `g`: a deployment-scale counterexample shrinks to the smallest
// extent that still fails, below the large ones too.
rc::Gen<extent_t> shrinking_to(ExtentRange r, rc::Gen<extent_t> g) {
  return [r, g](const rc::Random& random, int size) {
    return rc::shrinkable::shrinkRecur(g(random, size).value(), [r](extent_t x) {
      return rc::shrink::towards<extent_t>(x, r.lo);
    });
  };
}

// A deployment-scale extent in `r`, past `floor` and at most `limit`: t-1,
// t or t+1 for a tile t in [floor, limit) (the tiles given and the powers
// of two there), or any. Where `r` holds none, an extent of `r` as
// gen_extent draws it.
rc::Gen<extent_t> gen_large(extent_t floor, extent_t limit, std::vector<extent_t> tiles,
                            ExtentRange r) {
  if (r.fixed()) return rc::gen::just(r.lo);
  for (extent_t t = 1; t < limit; t *= 2) tiles.push_back(t);
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  std::vector<extent_t> straddle;
  for (extent_t t : tiles)
    if (t >= floor && t < limit)
      for (extent_t e : {t - 1, t, t + 1})
        if (r.contains(e)) straddle.push_back(e);
  const extent_t lo = std::max(r.lo, floor + 1), hi = std::min(r.hi, limit);
  if (straddle.empty() && lo > hi) return gen_extent(40, tiles, r);
  if (straddle.empty()) return shrinking_to(r, rc::gen::inRange<extent_t>(lo, hi + 1));
  if (lo > hi) return shrinking_to(r, rc::gen::elementOf(straddle));
  return shrinking_to(
      r, rc::gen::weightedOneOf<extent_t>(
             {{1, rc::gen::elementOf(straddle)}, {1, rc::gen::inRange<extent_t>(lo, hi + 1)}}));
}

// The draw of a dimension: `free_draw` where --shape leaves it free (the
// draws of generation 1), else an extent of its range.
extent_t draw_dim(const ShapeConstraints& shape, extent_t Dims::*field,
                  const rc::Gen<extent_t>& free_draw, extent_t max_small,
                  const std::vector<extent_t>& tiles) {
  const ExtentRange r = shape.range(field);
  return r == ExtentRange{} ? *free_draw : *gen_extent(max_small, tiles, r);
}

// Head counts: MHA (H = Hkv), GQA (H a multiple of Hkv > 1) or MQA (Hkv = 1);
// under --shape, an Hkv of its range with a multiple in H's range, and one
// of the first such multiples.
void draw_heads(Dims& d, const ShapeConstraints& shape) {
  if (shape.constrained(&Dims::H) || shape.constrained(&Dims::Hkv)) {
    const std::vector<extent_t> groups = shape.head_groups(8);
    if (groups.empty()) throw std::logic_error("draw_heads: constraints not checked");
    d.Hkv = *rc::gen::elementOf(groups);
    const ExtentRange k = shape.head_multiples(d.Hkv);
    d.H = d.Hkv * *rc::gen::inRange<extent_t>(k.lo, k.lo + std::min<extent_t>(3, k.hi - k.lo) + 1);
    return;
  }
  const int kind = *rc::gen::inRange(0, 3);
  if (kind == 0) {
    d.Hkv = d.H = *rc::gen::inRange<extent_t>(1, 4);
  } else if (kind == 1) {
    d.Hkv = *rc::gen::inRange<extent_t>(2, 3);
    d.H = d.Hkv * *rc::gen::inRange<extent_t>(2, 4);
  } else {
    d.Hkv = 1;
    d.H = *rc::gen::inRange<extent_t>(2, 5);
  }
}

bool allows_broadcast(Op op, int input) {
  // Batch (and head) broadcast of the attention tensors; never of lens, nor
  // of attention.bwd's o and lse, which must stay the forward of q, k, v.
  if (op == Op::attention_decode && input == 3) return false;
  if (op == Op::attention_bwd && (input == 3 || input == 4)) return false;
  return is_attention(op);
}

// The constructor of one input's layout: mostly row-major; broadcast only
// where the op allows it.
moa::LayoutKind draw_kind(Op op, int input, bool strided) {
  using P = moa::LayoutKind;
  if (!strided || is_index_input(Problem{op, Format::f32, {}, {}}, input)) return P::row_major;
  std::vector<std::pair<int, P>> choices = {
      {4, P::row_major}, {1, P::col_major}, {1, P::permuted}, {1, P::padded}};
  if (allows_broadcast(op, input)) choices.push_back({1, P::broadcast});
  return pick_weighted(choices);
}

}  // namespace

namespace {

// The dimensions of a case at the small scale of generation 1: every extent
// below about 40 (f32) but the straddles of `tiles`.
void draw_small_dims(Op op, Dims& d, extent_t big, const ShapeConstraints& shape,
                     const std::vector<extent_t>& tiles) {
  auto range = [&](extent_t Dims::*field) { return shape.range(field); };
  switch (op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
    case Op::attention_decode:
      d.B = draw_dim(shape, &Dims::B, rc::gen::inRange<extent_t>(1, 3), 2, {});
      draw_heads(d, shape);
      d.N = op == Op::attention_decode ? 1 : *gen_extent(big, tiles, range(&Dims::N));
      d.M = *gen_extent(big, tiles, range(&Dims::M));
      d.D = draw_dim(
          shape, &Dims::D,
          rc::gen::weightedOneOf<extent_t>({{6, gen_extent(big / 2, tiles)},
                                            {1, rc::gen::element<extent_t>(1, 3, 59, 111, 128)}}),
          big / 2, tiles);
      break;
    case Op::rmsnorm:
      d.T = *gen_extent(8, {}, range(&Dims::T));
      d.D = draw_dim(
          shape, &Dims::D,
          rc::gen::weightedOneOf<extent_t>({{6, gen_extent(4 * big, tiles)},
                                            {1, rc::gen::element<extent_t>(1, 3, 59, 111, 128)}}),
          4 * big, tiles);
      break;
    case Op::mlp_swiglu:
      d.T = *gen_extent(big / 2, tiles, range(&Dims::T));
      d.Dm = *gen_extent(big, tiles, range(&Dims::Dm));
      d.F = *gen_extent(big, tiles, range(&Dims::F));
      break;
    case Op::block:
      d.B = draw_dim(shape, &Dims::B, rc::gen::inRange<extent_t>(1, 3), 2, {});
      draw_heads(d, shape);
      d.N = *gen_extent(8, {}, range(&Dims::N));
      d.M = d.N;
      d.D = *gen_extent(8, {}, range(&Dims::D));
      d.Dm = *gen_extent(16, {}, range(&Dims::Dm));
      d.F = *gen_extent(16, {}, range(&Dims::F));
      break;
  }
}

// The dimensions of a deployment-scale case: past kLargeExtent (decode's
// cache length past kLargeDecodeLength) along one or two of the axes a
// kernel tiles, where its tails are, and small along the others (B = 1,
// one or two heads), so that the full oracle and the emulated simt.*
// variants afford it (docs/performance.md#deployment-scale-cases).
void draw_large_dims(Op op, Dims& d, const ShapeConstraints& shape,
                     const std::vector<extent_t>& small_tiles,
                     const std::vector<extent_t>& large_tiles, extent_t long_axis_limit) {
  auto range = [&](extent_t Dims::*field) { return shape.range(field); };
  auto large = [&](extent_t Dims::*field, extent_t limit) {
    return *gen_large(kLargeExtent, limit, large_tiles, range(field));
  };
  auto small = [&](extent_t Dims::*field, extent_t max_small) {
    return *gen_extent(max_small, small_tiles, range(field));
  };
  auto one_or_two_heads = [&] {
    if (shape.constrained(&Dims::H) || shape.constrained(&Dims::Hkv)) return draw_heads(d, shape);
    d.Hkv = 1;
    d.H = *rc::gen::inRange<extent_t>(1, 3);
  };
  // D: a head width of deployed models, or a straddle of a small tile.
  auto head_width = [&] {
    return draw_dim(shape, &Dims::D,
                    rc::gen::weightedOneOf<extent_t>({{2, gen_extent(40, small_tiles)},
                                                      {1, rc::gen::element<extent_t>(64, 128)}}),
                    40, small_tiles);
  };
  switch (op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd: {
      d.B = range(&Dims::B).lo;
      one_or_two_heads();
      // Long queries, long keys, or both (then shorter).
      const int which = *rc::gen::inRange(0, 3);
      d.N = which == 1 ? small(&Dims::N, 40) : large(&Dims::N, which == 2 ? 513 : long_axis_limit);
      d.M = which == 0 ? small(&Dims::M, 40) : large(&Dims::M, which == 2 ? 513 : long_axis_limit);
      d.D = head_width();
      break;
    }
    case Op::attention_decode:
      d.B = draw_dim(shape, &Dims::B, rc::gen::inRange<extent_t>(1, 3), 2, {});
      one_or_two_heads();
      d.N = 1;
      d.M =
          *gen_large(kLargeDecodeLength, 2 * kLargeDecodeLength + 1, large_tiles, range(&Dims::M));
      d.D = head_width();
      break;
    case Op::rmsnorm:
      d.T = small(&Dims::T, 8);
      d.D = large(&Dims::D, 4097);
      break;
    case Op::mlp_swiglu: {
      // One long axis of the three GEMMs, the others short.
      const int which = *rc::gen::inRange(0, 3);
      d.T = which == 0 ? large(&Dims::T, 1025) : small(&Dims::T, 4);
      d.Dm = which == 1 ? large(&Dims::Dm, 1025) : small(&Dims::Dm, 16);
      d.F = which == 2 ? large(&Dims::F, 1025) : small(&Dims::F, 16);
      break;
    }
    case Op::block: {
      d.B = range(&Dims::B).lo;
      one_or_two_heads();
      const int which = *rc::gen::inRange(0, 3);
      d.N = which == 0 ? large(&Dims::N, 513) : small(&Dims::N, 8);
      d.M = d.N;
      d.D = small(&Dims::D, 8);
      d.Dm = which == 1 ? large(&Dims::Dm, 1025) : small(&Dims::Dm, 16);
      d.F = which == 2 ? large(&Dims::F, 1025) : small(&Dims::F, 16);
      break;
    }
  }
}

// The tiles straddled from generation 2: the declared ones with the common
// ones up to `up_to`, each once.
std::vector<extent_t> with_common_tiles(std::vector<extent_t> tiles, extent_t up_to) {
  for (extent_t t : kCommonTiles)
    if (t <= up_to) tiles.push_back(t);
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  return tiles;
}

// From generation 3, the families aimed at `op`'s numerical regimes
// (properties/regimes.hpp), equally likely among themselves; block's from
// generation 4.
std::vector<Values> regime_families(Op op, int generation) {
  switch (op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      return {Values::exp_overflow, Values::underflowing_tile, Values::one_hot,
              Values::no_key_rows};
    case Op::attention_decode:  // lens >= 1: no row without a key
      return {Values::exp_overflow, Values::underflowing_tile, Values::one_hot};
    case Op::mlp_swiglu:
      return {Values::silu_range, Values::cancellation};
    case Op::rmsnorm:
      return {Values::rms_range};
    case Op::block:
      if (generation < 4) return {};
      // An underflowing tile's key leads by more than a one-hot row's: it
      // reaches softmax.dominant-key too.
      return {Values::exp_overflow, Values::underflowing_tile, Values::ties,
              Values::rms_range,    Values::silu_range,        Values::cancellation};
  }
  return {};
}

// RapidCheck's nominal full size: at it, inRange draws over the whole range.
constexpr int kFullSize = 100;

// The shape a regime's family needs, where --shape allows it: causal rows
// with no key (N > M), two whole key tiles for one to underflow.
void shape_for_regime(CaseSpec& s, const ShapeConstraints& shape) {
  Problem& p = s.problem;
  Dims& d = p.dims;
  if (p.op == Op::block) {
    // Self-attention rows: a tie needs two keys, an underflowing tile two
    // whole tiles, silu-range a row to negate; aim_block's rows two
    // components of the model width.
    const Values v = s.values;
    const extent_t rows = v == Values::underflowing_tile                 ? 2 * kUnderflowTile
                          : v == Values::ties || v == Values::silu_range ? 2
                                                                         : 1;
    const ExtentRange n = shape.range(&Dims::N), dm = shape.range(&Dims::Dm);
    d.N = std::clamp(std::max(d.N, rows), n.lo, n.hi);
    d.M = d.N;
    if (v == Values::underflowing_tile || v == Values::cancellation)
      d.Dm = std::clamp(std::max<extent_t>(d.Dm, 2), dm.lo, dm.hi);
    return;
  }
  if (s.values == Values::no_key_rows) {
    p.params.causal = true;
    if (d.N <= d.M) {
      const extent_t half = std::max(shape.range(&Dims::M).lo, d.N / 2);
      if (half < d.N) {
        d.M = half;
      } else if (shape.range(&Dims::N).contains(d.M + 1)) {
        d.N = d.M + 1;
      }
    }
  }
  if (s.values == Values::underflowing_tile) {
    const ExtentRange r = shape.range(&Dims::M);
    d.M = std::clamp(std::max(d.M, 2 * kUnderflowTile), r.lo, r.hi);
  }
}

// The longest extent of attention's long-only axis (long queries, or long
// keys, the other axis small). Generation 2's 1025 drew a length past 1024
// only as 1025, in about one attention.fwd case of 320, so that a scratch
// of 1024 keys was caught by 4 seeds of 10 (tests/planted); from
// generation 3 attention.fwd reaches 2049 and passes 1024 in about one case
// of 20 (9 seeds of 10 caught it: docs/performance.md#planted-tiled-kernels).
// The backward ops, whose long-key cases cost 5 to 15 s
// each, keep 1025 (docs/performance.md#deployment-scale-cases).
extent_t long_axis_limit(Op op, int generation) {
  return op == Op::attention_fwd && generation >= 3 ? 2049 : 1025;
}

}  // namespace

int large_one_in(Op op) {
  return op == Op::attention_bwd || op == Op::attention_fwdbwd ? 10 : 6;
}

bool is_large(const Problem& p) {
  if (p.op == Op::attention_decode) return p.dims.M > kLargeDecodeLength;
  const auto axes = dims_of(p.op);
  return std::any_of(axes.begin(), axes.end(),
                     [&](std::string_view a) { return extent_of(p.dims, a) > kLargeExtent; });
}

rc::Gen<CaseSpec> gen_case_spec(Op op, Format format, const std::vector<extent_t>& tiles,
                                bool strided) {
  return gen_case_spec(op, format, GenSettings{tiles, {}, /*generation=*/1, strided});
}

rc::Gen<CaseSpec> gen_case_spec(Op op, Format format, const GenSettings& g) {
  return rc::gen::exec([=] {
    CaseSpec s;
    Problem& p = s.problem;
    Dims& d = p.dims;
    p.op = op;
    p.format = format;
    // f64 oracles run in MPFI from the start: keep the f64 problems smaller.
    const extent_t big = format == Format::f64 ? 24 : 40;
    if (g.generation < 2) {
      draw_small_dims(op, d, big, g.shape, g.tiles);
    } else if (*rc::gen::weightedElement<bool>(
                   {{std::size_t(large_one_in(op) - 1), false}, {1, true}})) {
      draw_large_dims(op, d, g.shape, with_common_tiles(g.tiles, 128),
                      with_common_tiles(g.tiles, kCommonTiles.back()),
                      long_axis_limit(op, g.generation));
    } else {
      draw_small_dims(op, d, big, g.shape, with_common_tiles(g.tiles, 128));
    }
    switch (op) {
      case Op::attention_fwd:
      case Op::attention_bwd:
      case Op::attention_fwdbwd:
        p.params.causal = *rc::gen::arbitrary<bool>();
        break;
      case Op::rmsnorm:
        p.params.eps = *rc::gen::element(1e-6, 1e-5, 0.25);
        break;
      case Op::block:
        p.params.eps = *rc::gen::element(1e-6, 1e-5);
        break;
      default:
        break;
    }
    std::vector<std::pair<int, Values>> families = {{4, Values::uniform}, {2, Values::normal}};
    if (is_attention(op)) {
      for (Values v : {Values::large_logits, Values::ties, Values::dominant, Values::tiny_scale})
        families.push_back({1, v});
    }
    if (op != Op::block) families.push_back({1, Values::extreme});
    // From generation 3, one case in kRegimeOneIn is of a family aimed at a
    // numerical regime, drawn at RapidCheck's full size so that the share
    // holds at every size (pick_weighted's draw favours the first families
    // at small sizes); the rest keep generation 2's families. Both shrink
    // towards generation 2's.
    const std::vector<Values> aimed = regime_families(op, g.generation);
    if (g.generation >= 3 && !aimed.empty() &&
        *rc::gen::resize(kFullSize, rc::gen::inRange(0, kRegimeOneIn)) == kRegimeOneIn - 1) {
      s.values = *rc::gen::resize(kFullSize, rc::gen::elementOf(aimed));
    } else {
      s.values = pick_weighted(families);
    }
    if (is_attention(op)) {
      if (s.values == Values::tiny_scale) {
        p.params.scale = 0x1p-20;
      } else if (*rc::gen::inRange(0, 4) == 0) {
        p.params.scale = *rc::gen::element(0.05, 0.3, 1.0, 2.5);  // not 1/sqrt(D)
      }
    }
    shape_for_regime(s, g.shape);
    if (op == Op::attention_decode) {
      // From generation 2, lens also straddle the tiles and splits below L.
      std::vector<std::int64_t> straddle;
      if (g.generation >= 2)
        for (extent_t t : with_common_tiles(g.tiles, kCommonTiles.back()))
          for (extent_t e : {t - 1, t, t + 1})
            if (e >= 1 && e <= d.M) straddle.push_back(e);
      for (extent_t b = 0; b < d.B; ++b) {
        const auto any = rc::gen::inRange<std::int64_t>(1, d.M + 1);
        const auto one = rc::gen::just<std::int64_t>(1), all = rc::gen::just(std::int64_t{d.M});
        s.lens.push_back(
            straddle.empty()
                ? *rc::gen::weightedOneOf<std::int64_t>({{2, any}, {1, one}, {1, all}})
                : *rc::gen::weightedOneOf<std::int64_t>(
                      {{2, any}, {1, one}, {1, all}, {1, rc::gen::elementOf(straddle)}}));
      }
      // A whole tile past key 0's to underflow: batch 0 sees two tiles.
      if (s.values == Values::underflowing_tile)
        s.lens[0] = std::max<std::int64_t>(s.lens[0], std::min(2 * kUnderflowTile, d.M));
    }
    const auto shapes = input_shapes(p);
    for (int k = 0; k < static_cast<int>(shapes.size()); ++k) {
      s.kinds.push_back(draw_kind(op, k, g.strided));
      s.layouts.push_back(draw_layout(shapes[k], s.kinds.back()));
    }
    s.seed = *rc::gen::inRange<std::uint64_t>(0, 1u << 30);
    return s;
  });
}

rc::Gen<std::vector<Layout>> gen_layouts(const CaseSpec& spec) {
  return rc::gen::exec([spec] {
    std::vector<Layout> out;
    const auto shapes = input_shapes(spec.problem);
    for (int k = 0; k < static_cast<int>(shapes.size()); ++k) {
      // Broadcast changes the values, so a broadcast input stays as it is
      // and no other input becomes one.
      if (spec.kinds[k] == moa::LayoutKind::broadcast) {
        out.push_back(spec.layouts[k]);
        continue;
      }
      moa::LayoutKind kind = draw_kind(spec.problem.op, k, true);
      if (kind == moa::LayoutKind::broadcast) kind = moa::LayoutKind::row_major;
      out.push_back(draw_layout(shapes[k], kind));
    }
    return out;
  });
}

namespace {

// A fixed integer stream, the same on every machine, and the reals drawn
// from it.
struct Stream : SplitMix64 {
  // U[-1, 1), a multiple of 2^-52: exact in double.
  double uniform() { return double(next() >> 11) * 0x1p-52 - 1.0; }
  // Irwin-Hall with four uniforms, variance scaled to about 1; every step
  // is exact or correctly rounded IEEE arithmetic, so it reproduces.
  double normal() { return (uniform() + uniform() + uniform() + uniform()) * 0.8660254037844386; }
};

double largest(Format f) {
  return std::ldexp(1.0, info(f).emax);
}
double smallest_normal(Format f) {
  return std::ldexp(1.0, info(f).emin);
}

// Fills one float input of the case.
void fill(AnyTensor& t, const CaseSpec& spec, int input, Stream& rng) {
  const Problem& p = spec.problem;
  const Format f = p.format;
  const Shape shape = t.shape();
  const std::string_view in = info(p.op).inputs[input];
  const bool qk = is_attention(p.op) && (in == "q" || in == "k");
  const bool kv_like = is_attention(p.op) && (in == "k" || in == "v");
  const Dims& d = p.dims;
  const double logit_scale = p.scale() * std::sqrt(double(d.D)) / 3;  // typical |score| per unit²

  // One draw per logical element; for ties, every key of a head repeats
  // key 0; for a dominant key, one key per head is 16x larger.
  extent_t dominant_key = 0;
  if ((spec.values == Values::dominant || spec.values == Values::one_hot) && kv_like)
    dominant_key = extent_t(rng.next() % d.M);
  const FormatLimits lim = limits(f);
  // One-hot and underflowing tiles: component 0 of q is `lift` and of k
  // `lift` for the dominant key (key 0 for a tile to underflow) and 0 for
  // the others; the other components, below 1/sqrt(D), move a score by
  // less than the scale. So the dominant score leads every other by more
  // than `gap`, whatever the rounding of lift (the 1/8 covers it).
  const bool separated =
      qk && (spec.values == Values::one_hot || spec.values == Values::underflowing_tile);
  double lift = 0;
  if (separated) {
    const double needed = spec.values == Values::one_hot
                              ? std::log(double(d.M)) + (info(f).precision + 4) * std::log(2.0)
                              : -lim.ln_zero;
    const double gap = (needed + 2 * p.scale() + 1) * 1.125;
    lift = std::sqrt(gap / p.scale());
  }
  double factor = 1;
  switch (spec.values) {
    case Values::exp_overflow:
      if (qk) factor = std::sqrt(2 * lim.ln_max / logit_scale);  // |score| around 2 ln(max)
      break;
    case Values::large_logits:
      if (qk) factor = std::sqrt(150.0 / logit_scale);  // |score| around 150
      break;
    case Values::extreme:
      if (qk) {
        factor = std::sqrt(smallest_normal(f)) * 0x1p-4;  // products underflow
      } else if (p.op == Op::rmsnorm && in == "x") {
        factor =
            (rng.next() & 1) ? std::sqrt(largest(f) / double(d.D)) / 4 : smallest_normal(f) * 4;
      } else if (p.op == Op::rmsnorm || p.op == Op::mlp_swiglu) {
        factor = 4;  // saturating silu, large weights
      } else if (in == "v") {
        // Huge (but no product or sum of the backward can overflow) or subnormal.
        const double huge = std::max(1.0, largest(f) / (16.0 * double(d.D * d.M * d.N)));
        factor = (rng.next() & 1) ? huge : smallest_normal(f) / 4;
      }
      break;
    default:
      break;
  }
  if (p.op == Op::block && in != "x" && in != "attn_norm" && in != "mlp_norm")
    factor = 1 / std::sqrt(double(shape[0]));  // keep activations O(1)

  // silu-range: the class of W1's column f (and of W3's, to keep the
  // products O(1)): ordinary, gate arguments around twice the larger of
  // ln(max) and -ln(min subnormal / 2) (std sqrt(Dm)/3 per unit), or below u.
  const bool silu_range =
      spec.values == Values::silu_range && p.op == Op::mlp_swiglu && (in == "w1" || in == "w3");
  const double silu_huge = -2 * lim.ln_zero;
  auto silu_factor = [&](extent_t column) {
    switch ((std::uint64_t(column) + spec.seed) % 3) {
      case 1:
        return in == "w1" ? 3 * silu_huge / std::sqrt(double(d.Dm)) : 1 / silu_huge;
      case 2:
        return in == "w1" ? lim.unit_roundoff / (16 * double(d.Dm)) : 1.0;
      default:
        return 1.0;
    }
  };
  // rms-range: the class of row t (block's x: row b·N + n): its sum of
  // squares overflows (one element alone squares past the largest finite),
  // underflows (every square below min_normal / D), or its mean square is
  // below eps / 4.
  // Where overflowing rows are held back (regimes.hpp), the classes are
  // the other two.
  const bool overflow_rows = !held_back(Regime::sum_of_squares_overflows, f);
  auto rms_class = [&](extent_t row) {
    return overflow_rows ? (std::uint64_t(row) + spec.seed) % 3
                         : 1 + (std::uint64_t(row) + spec.seed) % 2;
  };
  const int last_axis = shape.rank() - 1;
  const extent_t row_width = shape[last_axis];  // D (block: Dm)
  auto rms_factor = [&](extent_t row) {
    switch (rms_class(row)) {
      case 0:
        return std::sqrt(lim.max_finite / double(row_width));
      case 1:
        return std::sqrt(lim.min_normal / double(row_width)) / 2;
      default:
        return std::sqrt(p.params.eps) / 2;
    }
  };
  const bool rms_range = spec.values == Values::rms_range && in == "x";

  std::vector<double> key0;  // for ties: the values of key 0 of the current head
  for (const moa::Index& i : moa::iota(shape)) {
    double x = spec.values == Values::normal ? rng.normal() : rng.uniform();
    x *= factor;
    if (separated) {  // (b, head, row, d)
      if (i[3] == 0) {
        x = in == "q" || i[2] == dominant_key ? lift : 0;
      } else {
        x /= std::sqrt(double(d.D));
      }
    }
    if (silu_range) x *= silu_factor(i[1]);
    if (rms_range) {
      const extent_t row = last_axis == 2 ? i[0] * shape[1] + i[1] : i[0];
      x *= rms_factor(row);
      if (i[last_axis] == 0 && rms_class(row) == 0) x = 2 * std::sqrt(lim.max_finite);
    }
    if (kv_like && spec.values == Values::dominant && i[2] == dominant_key && in == "k") x *= 16;
    if (kv_like && spec.values == Values::ties && in == "k") {
      // (b, g, j, d): reuse key 0's row for every j.
      if (i[2] == 0) {
        if (i[3] == 0) key0.clear();
        key0.push_back(x);
      } else {
        x = key0[static_cast<std::size_t>(i[3])];
      }
    }
    t.set(i, x);
  }
}

// The cancellation family: x_{0,Dm-1} = 1/2, then W1's and W3's last
// entry of column 0 are chosen so that (x W)_{00} = 0 before they are
// rounded to the format: what is left is that rounding, about u of the
// terms' magnitudes (mlp.swiglu; a single term cannot cancel).
void aim_cancellation(Case& c) {
  const extent_t Dm = c.problem.dims.Dm, last = Dm - 1;
  if (Dm < 2) return;
  AnyTensor& x = c.inputs[0];
  x.set({0, last}, 0.5);
  for (int w : {1, 2}) {
    double sum = 0;
    for (extent_t k = 0; k < last; ++k) sum += x.get({0, k}) * c.inputs[w].get({k, 0});
    c.inputs[w].set({last, 0}, -2 * sum);
  }
}

// Row 0 of a block case's MLP input, rmsnorm(h), after setting Wo = 0: then
// h = x, and the value takes no exp, so an aim that reads it does not hang
// the case's bits on the machine's libm (block_in_double's attention calls
// std::exp).
std::vector<double> mlp_input_row_0_without_attention(Case& c) {
  AnyTensor& wo = c.inputs[5];
  for (const moa::Index& i : moa::iota(wo.shape())) wo.set(i, 0.0);
  const BlockInDouble fwd = block_in_double(c);
  const std::vector<double>& hn = fwd.mid.h_normed.storage();
  return {hn.begin(), hn.begin() + c.problem.dims.Dm};
}

// Block's inputs reach its attention and its MLP only through an RMSNorm
// and the projections, so its families (generation 4) are aimed on the
// built case at the intermediates, as its forward in double sees them
// (block_in_double). Its inputs are x 0, attn_norm 1, wq 2, wk 3, wv 4,
// wo 5, mlp_norm 6, w1 7, w3 8, w2 9.
void aim_block(Case& c, Values values) {
  const Problem& p = c.problem;
  const Dims& d = p.dims;
  const FormatLimits lim = limits(p.format);
  const double scale = dnf::block_scale(d.D);
  AnyTensor &x = c.inputs[0], &attn_norm = c.inputs[1], &wq = c.inputs[2], &wk = c.inputs[3];
  const extent_t group = d.H / d.Hkv, width = d.Dm;
  switch (values) {
    case Values::ties:  // every row of a batch repeats row 0: every key of a row ties
      for (extent_t b = 0; b < d.B; ++b)
        for (extent_t n = 1; n < d.N; ++n)
          for (extent_t k = 0; k < width; ++k) x.set({b, n, k}, x.get({b, 0, k}));
      break;
    case Values::exp_overflow: {
      // Wq and Wk scaled alike (Wk negated when the logit of largest
      // magnitude is negative), so that the largest visible logit is
      // 2 ln(max finite) and every other lies within ±2 ln(max finite):
      // exp overflows unless the row's max is subtracted, and the scores
      // stay as well conditioned as an attention.fwd exp-overflow case's.
      const BlockInDouble fwd = block_in_double(c);
      const std::vector<double>&q = fwd.mid.q.storage(), &k = fwd.mid.k.storage();
      double top = 0;  // the visible logit of largest magnitude
      for (extent_t b = 0; b < d.B; ++b)
        for (extent_t h = 0; h < d.H; ++h)
          for (extent_t i = 0; i < d.N; ++i)
            for (extent_t j = 0; j <= i; ++j) {
              double s = 0;
              for (extent_t e = 0; e < d.D; ++e)
                s += q[std::size_t((b * d.N + i) * d.H * d.D + h * d.D + e)] *
                     k[std::size_t((b * d.N + j) * d.Hkv * d.D + (h / group) * d.D + e)];
              if (std::fabs(scale * s) > std::fabs(top)) top = scale * s;
            }
      if (top == 0) break;
      const double lift = std::sqrt(2 * lim.ln_max / std::fabs(top));
      for (AnyTensor* w : {&wq, &wk})
        for (const moa::Index& i : moa::iota(w->shape()))
          w->set(i, w->get(i) * (w == &wk && top < 0 ? -lift : lift));
      break;
    }
    case Values::underflowing_tile: {
      if (width < 2) break;
      // Row 0 of each batch is e_0, the others e_1, attn_norm_0 = attn_norm_1
      // = 1: after RMSNorm row 0 is sqrt(Dm) e_0 and the others sqrt(Dm) e_1
      // (up to eps). With Wk's row 1 zero, every key but key 0 is 0 and
      // scores 0; with Wk's row 0 in a kv head lambda times Wq's row 1 in
      // each of its query heads (made equal across the group), key 0 scores
      // scale·Dm·lambda·|Wq_1|² = gap for every query row past 0: past
      // -ln_zero, so a whole tile of keys past 16 underflows and key 0
      // dominates.
      for (const moa::Index& i : moa::iota(x.shape()))
        x.set(i, i[2] == (i[1] == 0 ? 0 : 1) ? 1.0 : 0.0);
      attn_norm.set({0}, 1.0);
      attn_norm.set({1}, 1.0);
      const double gap = (1 - lim.ln_zero) * 1.125;
      for (extent_t g = 0; g < d.Hkv; ++g) {
        const extent_t lead = g * group;  // the group's first query head
        for (extent_t h = lead + 1; h < lead + group; ++h)
          for (extent_t e = 0; e < d.D; ++e) wq.set({1, h * d.D + e}, wq.get({1, lead * d.D + e}));
        double norm2 = 0;
        for (extent_t e = 0; e < d.D; ++e)
          norm2 += wq.get({1, lead * d.D + e}) * wq.get({1, lead * d.D + e});
        if (norm2 == 0) {
          for (extent_t h = lead; h < lead + group; ++h) wq.set({1, h * d.D}, 1.0);
          norm2 = 1;
        }
        const double lambda = gap / (scale * double(width) * norm2);
        for (extent_t e = 0; e < d.D; ++e) {
          wk.set({0, g * d.D + e}, lambda * wq.get({1, lead * d.D + e}));
          wk.set({1, g * d.D + e}, 0.0);
        }
      }
      break;
    }
    case Values::cancellation: {
      if (width < 2) break;
      // (hn W)_{00} = 0 before rounding, for W1 and for W3, hn the MLP's
      // input (W1 and W3 do not change it): the entry of column 0 at row
      // 0's largest component of hn solves it, and what is left is its
      // rounding, about u of the terms (mlp.swiglu's cancellation family).
      const std::vector<double> hn = mlp_input_row_0_without_attention(c);
      extent_t pivot = 0;
      for (extent_t k = 1; k < width; ++k)
        if (std::fabs(hn[k]) > std::fabs(hn[pivot])) pivot = k;
      if (hn[pivot] == 0) break;
      for (int w : {7, 8}) {
        double sum = 0;
        for (extent_t k = 0; k < width; ++k)
          if (k != pivot) sum += hn[k] * c.inputs[std::size_t(w)].get({k, 0});
        c.inputs[std::size_t(w)].set({pivot, 0}, -sum / hn[pivot]);
      }
      break;
    }
    case Values::silu_range: {
      // x's odd rows negate the even ones; with Wo = 0 (h = x) the MLP's
      // input rows do too. W1's even columns are row 0's MLP input scaled
      // to a gate argument t past exp's overflow and underflow thresholds
      // (-t at row 1), W3's divided by t to keep silu(z)·up O(1); W1's odd
      // columns give row 0 a gate argument below u.
      AnyTensor &w1 = c.inputs[7], &w3 = c.inputs[8];
      for (extent_t b = 0; b < d.B; ++b)
        for (extent_t n = 1; n < d.N; n += 2)
          for (extent_t k = 0; k < width; ++k) x.set({b, n, k}, -x.get({b, n - 1, k}));
      const std::vector<double> hn = mlp_input_row_0_without_attention(c);
      double norm2 = 0;
      for (extent_t k = 0; k < width; ++k) norm2 += hn[k] * hn[k];
      if (norm2 == 0) break;
      const double t = 1.25 * std::max(lim.ln_max, -lim.ln_zero);
      for (extent_t f = 0; f < d.F; ++f) {
        const double z = f % 2 == 0 ? t : lim.unit_roundoff / 4;
        for (extent_t k = 0; k < width; ++k) {
          w1.set({k, f}, z * hn[k] / norm2);
          if (f % 2 == 0) w3.set({k, f}, w3.get({k, f}) / t);
        }
      }
      break;
    }
    default:  // rms-range is drawn as it is filled
      break;
  }
}

}  // namespace

Case build_case(const CaseSpec& spec, const ForwardFn& forward) {
  const Problem& p = spec.problem;
  validate(p);
  Case c{p, {}};
  const auto shapes = input_shapes(p);
  Stream rng{{spec.seed * 0x2545f4914f6cdd1dull + 1}};
  for (int k = 0; k < static_cast<int>(shapes.size()); ++k) {
    const bool index = is_index_input(p, k);
    AnyTensor t(index ? DType::i64 : dtype_of(p.format), spec.layouts[k]);
    if (index) {
      for (extent_t b = 0; b < p.dims.B; ++b) t.set({b}, double(spec.lens[b]));
    } else if (!(p.op == Op::attention_bwd && (k == 3 || k == 4))) {
      fill(t, spec, k, rng);
    }
    c.inputs.push_back(std::move(t));
  }
  if (p.op == Op::block) {
    aim_block(c, spec.values);
  } else if (spec.values == Values::cancellation) {
    aim_cancellation(c);
  }
  if (p.op == Op::attention_bwd) {
    // o and lse: the oracle's correctly rounded forward of q, k, v.
    if (!forward) throw std::logic_error("attention.bwd cases need the oracle's forward");
    Case fwd{p, {}};
    fwd.problem.op = Op::attention_fwd;
    for (int k = 0; k < 3; ++k) fwd.inputs.push_back(c.inputs[k]);
    std::vector<AnyTensor> ol = forward(fwd);
    c.inputs[3] = ol[0].relayout(spec.layouts[3]);
    c.inputs[4] = ol[1].relayout(spec.layouts[4]);
  }
  return c;
}

Case relayout(const Case& c, const std::vector<Layout>& layouts) {
  Case out{c.problem, {}};
  for (std::size_t k = 0; k < c.inputs.size(); ++k)
    out.inputs.push_back(c.inputs[k].relayout(layouts[k]));
  return out;
}

}  // namespace moacert::properties
