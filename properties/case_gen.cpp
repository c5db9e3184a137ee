#include "properties/case_gen.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "include/moacert/splitmix64.hpp"
#include "properties/draws.hpp"
#include "properties/gen_layout.hpp"
#include "properties/ops/table.hpp"
#include "properties/regimes.hpp"
#include "reference/named.hpp"

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
    case Values::flat_rows:
      return "flat-rows";
    case Values::down_cancellation:
      return "down-cancellation";
    case Values::rms_range:
      return "rms-range";
  }
  return "?";
}

std::string describe(const CaseSpec& s) {
  const Problem& p = s.problem;
  std::ostringstream os;
  os << info(p.op).name << ' ' << name(p.format);
  property_op(p.op).describe_dims(p, os);
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

}  // namespace

rc::Gen<extent_t> gen_extent(extent_t max_small, const std::vector<extent_t>& tiles,
                             ExtentRange r) {
  if (r.fixed()) return rc::gen::just(r.lo);
  // A kernel's values or step: the draw over [lo, hi], snapped to the
  // nearest admitted extent (its shrinks too).
  if (r.discrete())
    return rc::gen::map(gen_extent(max_small, tiles, ExtentRange{r.lo, r.hi}),
                        [r](extent_t e) { return r.clamp(e); });
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

namespace {

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

}  // namespace

rc::Gen<extent_t> gen_large(extent_t floor, extent_t limit, std::vector<extent_t> tiles,
                            ExtentRange r) {
  if (r.fixed()) return rc::gen::just(r.lo);
  if (r.discrete())  // as gen_extent
    return rc::gen::map(gen_large(floor, limit, std::move(tiles), ExtentRange{r.lo, r.hi}),
                        [r](extent_t e) { return r.clamp(e); });
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

extent_t draw_dim(const ShapeConstraints& shape, extent_t Dims::*field,
                  const rc::Gen<extent_t>& free_draw, extent_t max_small,
                  const std::vector<extent_t>& tiles) {
  const ExtentRange r = shape.range(field);
  return r == ExtentRange{} ? *free_draw : *gen_extent(max_small, tiles, r);
}

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

extent_t LargeCaseDraws::large(extent_t Dims::*field, extent_t limit) const {
  return *gen_large(kLargeExtent, limit, large_tiles, shape.range(field));
}

extent_t LargeCaseDraws::small(extent_t Dims::*field, extent_t max_small) const {
  return *gen_extent(max_small, small_tiles, shape.range(field));
}

void one_or_two_heads(Dims& d, const ShapeConstraints& shape) {
  if (shape.constrained(&Dims::H) || shape.constrained(&Dims::Hkv)) return draw_heads(d, shape);
  d.Hkv = 1;
  d.H = *rc::gen::inRange<extent_t>(1, 3);
}

std::vector<extent_t> EnvelopeAxis::thresholds() const {
  std::vector<extent_t> out;
  for (extent_t t = first_threshold; t <= edge; t *= 2) out.push_back(t);
  return out;
}

rc::Gen<extent_t> gen_envelope_extent(const EnvelopeAxis& axis, ExtentRange r) {
  if (r.fixed()) return rc::gen::just(r.lo);
  if (r.discrete())  // as gen_extent
    return rc::gen::map(gen_envelope_extent(axis, ExtentRange{r.lo, r.hi}),
                        [r](extent_t e) { return r.clamp(e); });
  std::vector<extent_t> straddle;
  for (extent_t t : axis.thresholds())
    for (extent_t e : {t - 1, t, t + 1})
      if (r.contains(e)) straddle.push_back(e);
  // The edge: the envelope's, or the narrower one of the range.
  const extent_t edge = std::min(axis.edge, r.hi);
  if (edge < axis.first_threshold || !r.contains(edge))
    return straddle.empty() ? gen_extent(4, {}, r) : shrinking_to(r, rc::gen::elementOf(straddle));
  if (straddle.empty()) return shrinking_to(r, rc::gen::just(edge));
  return shrinking_to(r, rc::gen::weightedOneOf<extent_t>(
                             {{1, rc::gen::just(edge)}, {1, rc::gen::elementOf(straddle)}}));
}

void draw_envelope_dims(Dims& d, const std::vector<EnvelopeAxis>& axes, int generation,
                        const ShapeConstraints& shape,
                        const std::function<void(Dims&, extent_t, const ShapeConstraints&,
                                                 const std::vector<extent_t>&)>& draw_small) {
  // The small draw, then every free axis at most 4, B = 1 and one or two
  // heads over one kv head: the long axis alone makes the case large, so
  // its memory and time stay those of that one axis.
  draw_small(d, 4, shape, {});
  for (extent_t Dims::*field : kDimFields)
    if (!shape.constrained(field)) d.*field = std::min<extent_t>(d.*field, 4);
  if (!shape.constrained(&Dims::B)) d.B = 1;
  one_or_two_heads(d, shape);
  std::vector<EnvelopeAxis> drawn;  // in the table's order: generation 5's draws unchanged
  for (const EnvelopeAxis& a : axes)
    if (a.from_generation <= generation) drawn.push_back(a);
  const EnvelopeAxis& axis = *rc::gen::elementOf(drawn);
  for (extent_t Dims::*field : kDimFields)  // the heads as one_or_two_heads drew them
    if (!shape.constrained(field) && field != &Dims::H && field != &Dims::Hkv)
      d.*field = std::min(d.*field, axis.others_at_most);
  if (!axis.group) {
    d.*axis.field = *gen_envelope_extent(axis, shape.range(axis.field));
    return;
  }
  // The group H / Hkv: over one kv head, unless --shape constrains the
  // heads (then the small draw's heads, within it).
  if (shape.constrained(&Dims::H) || shape.constrained(&Dims::Hkv)) return;
  d.Hkv = 1;
  d.H = *gen_envelope_extent(axis, ExtentRange{});
}

std::vector<extent_t> with_common_tiles(std::vector<extent_t> tiles, extent_t up_to) {
  for (extent_t t : kCommonTiles)
    if (t <= up_to) tiles.push_back(t);
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  return tiles;
}

namespace {

// An input the case takes from the oracle's forward (attention.bwd's o
// and lse), which must stay the forward of q, k, v.
bool forward_input(Op op, std::string_view name) {
  const auto& names = property_op(op).forward_inputs;
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool allows_broadcast(Op op, int input) {
  // Batch (and head) broadcast where the op allows it; never of lens, nor
  // of an input from the forward.
  if (is_index_input(op, std::size_t(input))) return false;
  if (forward_input(op, info(op).inputs.at(std::size_t(input)))) return false;
  return property_op(op).broadcasts;
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

// RapidCheck's nominal full size: at it, inRange draws over the whole range.
constexpr int kFullSize = 100;

}  // namespace

int large_one_in(Op op) {
  return property_op(op).large_one_in;
}

bool is_large(const Problem& p) {
  if (const auto& own = property_op(p.op).is_large) return own(p.dims);
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
    const PropertyOp& po = property_op(op);
    p.op = op;
    p.format = format;
    // f64 oracles run in MPFI from the start: keep the f64 problems smaller.
    const extent_t big = format == Format::f64 ? 24 : 40;
    const bool envelope = s.envelope =
        g.generation >= 5 && !po.envelope_axes.empty() &&
        *rc::gen::weightedElement<bool>({{std::size_t(kEnvelopeOneIn - 1), false}, {1, true}});
    if (g.generation < 2) {
      po.draw_small_dims(d, big, g.shape, g.tiles);
    } else if (envelope) {
      draw_envelope_dims(d, po.envelope_axes, g.generation, g.shape, po.draw_small_dims);
    } else if (*rc::gen::weightedElement<bool>(
                   {{std::size_t(large_one_in(op) - 1), false}, {1, true}})) {
      po.draw_large_dims(d, g.shape, with_common_tiles(g.tiles, 128),
                         with_common_tiles(g.tiles, kCommonTiles.back()), g.generation);
    } else {
      po.draw_small_dims(d, big, g.shape, with_common_tiles(g.tiles, 128));
    }
    if (po.draw_params) po.draw_params(p.params);
    // Uniform and normal are the most likely (shrinking towards them).
    std::vector<std::pair<int, Values>> families;
    for (Values v : po.families)
      families.push_back({v == Values::uniform ? 4 : v == Values::normal ? 2 : 1, v});
    // From generation 3, one case in kRegimeOneIn is of a family aimed at a
    // numerical regime, drawn at RapidCheck's full size so that the share
    // holds at every size (pick_weighted's draw favours the first families
    // at small sizes); the rest keep generation 2's families. Both shrink
    // towards generation 2's.
    std::vector<Values> aimed;
    if (g.generation >= po.aimed_from)
      for (Values v : po.regime_families)
        if (g.generation >= first_generation(v)) aimed.push_back(v);
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
    // An envelope case keeps its one long axis: a regime's shape (no-key
    // rows' N raised past a long M) would make it long along two.
    if (!envelope) po.shape_for_regime(s, g.shape);
    g.shape.into_supported(p);
    if (po.draw_index_inputs) po.draw_index_inputs(s, g);
    // An envelope case's last batch sees the whole cache (decode's lens),
    // so the length drawn is the length judged, and shrinks with it.
    if (envelope && !s.lens.empty()) s.lens.back() = d.M;

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

// Tensors from this many elements on are drawn on every thread.
constexpr extent_t kParallelFillFrom = extent_t(1) << 20;

// Whether a flat layout maps several indices to one element (a broadcast
// axis); a tiled layout never does.
bool has_zero_stride(const moa::Layout& layout) {
  if (!layout.is_flat()) return false;
  for (int a = 0; a < layout.shape().rank(); ++a)
    if (layout.shape()[a] > 1 && layout.stride(a) == 0) return true;
  return false;
}

// Fills one float input of the case, drawn and rounded in its own format,
// whose limits its value family's thresholds are
// (docs/design.md#per-tensor-formats).
void fill(AnyTensor& t, const CaseSpec& spec, int input, Stream& rng) {
  const Problem& p = spec.problem;
  const Format f = input_format(p, std::size_t(input));
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
      } else if (info(p.op).family == Family::rows) {
        factor = 4;  // saturating silu, large weights
      } else if (in == "v") {
        // Huge (but no product or sum of the backward can overflow) or subnormal.
        const double huge = std::max(1.0, largest(f) / (16.0 * double(d.D * d.M * d.N)));
        factor = (rng.next() & 1) ? huge : smallest_normal(f) / 4;
      }
      break;
    case Values::flat_rows:
      // |score| <= scale D 2^-10: at most 0.16 with D <= 64 (shape_for_regime)
      // and scale <= 2.5, so that every weight is above 0.7 and a row of
      // kFlatRowKeys weighs past kFlatRowWeight.
      if (in == "q") factor = 0x1p-10;
      break;
    default:
      break;
  }
  // Flat rows' values of one sign, in [1/2, 1]: the weighted sum only grows.
  const bool one_sign = spec.values == Values::flat_rows && in == "v";
  if (info(p.op).family == Family::block && in != "x" && in != "attn_norm" && in != "mlp_norm")
    factor = 1 / std::sqrt(double(shape[0]));  // keep activations O(1)

  // silu-range: the class of W1's column f (and of W3's, to keep the
  // products O(1)): ordinary, gate arguments around twice the larger of
  // ln(max) and -ln(min subnormal / 2) (std sqrt(Dm)/3 per unit), or below u.
  const bool silu_range = spec.values == Values::silu_range && info(p.op).family == Family::rows &&
                          (in == "w1" || in == "w3");
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
  // The value of element i (the draws in ι's order: a row's elements one
  // after another).
  auto draw = [&](const moa::Index& i, Stream& stream) {
    double x = spec.values == Values::normal ? stream.normal() : stream.uniform();
    x *= factor;
    if (separated) {  // (b, head, row, d)
      if (i[3] == 0) {
        x = in == "q" || i[2] == dominant_key ? lift : 0;
      } else {
        x /= std::sqrt(double(d.D));
      }
    }
    if (silu_range) x *= silu_factor(i[1]);
    if (one_sign) x = 0.75 + x / 4;
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
    return x;
  };
  // Row by row along the last axis: a row's draws, then one store of the
  // row (a case of billions of elements spends its generation here).
  // SplitMix64 steps its state by a constant, so each row's stream starts
  // at a state its index gives, and rows can be drawn on several threads,
  // bit for bit the one stream in ι's order. One thread, in order, where
  // rows depend on each other (ties repeat key 0's row), share storage (a
  // broadcast layout keeps the last row written), or are few.
  if (t.size() == 0) return;
  const extent_t rows = t.size() / row_width;
  const std::uint64_t draws_per_element = spec.values == Values::normal ? 4 : 1;
  const std::uint64_t first_state = rng.state;
  const bool on_threads = !(kv_like && spec.values == Values::ties && in == "k") &&
                          !has_zero_stride(t.layout()) && t.size() >= kParallelFillFrom;
#pragma omp parallel if (on_threads)
  {
    std::vector<double> values(std::size_t(row_width), 0.0);
    moa::Index i = moa::Index::filled(shape.rank(), 0);
    Stream stream{{0}};
#pragma omp for schedule(static)
    for (extent_t row = 0; row < rows; ++row) {
      for (extent_t rest = row, a = last_axis - 1; a >= 0; --a) {  // row's first element
        i[int(a)] = rest % shape[int(a)];
        rest /= shape[int(a)];
      }
      stream.state = first_state + std::uint64_t(row) * std::uint64_t(row_width) *
                                       draws_per_element * kSplitMix64Gamma;
      for (extent_t e = 0; e < row_width; ++e) {
        i[last_axis] = e;
        values[std::size_t(e)] = draw(i, stream);
      }
      i[last_axis] = 0;
      t.set_row(i, row_width, values.data());
    }
  }
  rng.state = first_state + std::uint64_t(t.size()) * draws_per_element * kSplitMix64Gamma;
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
    AnyTensor t(input_dtype(p, std::size_t(k)), spec.layouts[k]);
    if (index) {
      for (extent_t b = 0; b < p.dims.B; ++b) t.set({b}, double(spec.lens[b]));
    } else if (!forward_input(p.op, info(p.op).inputs[std::size_t(k)])) {
      fill(t, spec, k, rng);
    }
    c.inputs.push_back(std::move(t));
  }
  const PropertyOp& po = property_op(p.op);
  if (po.aim) po.aim(c, spec.values);
  if (!po.forward_inputs.empty()) {
    // o and lse: the oracle's correctly rounded forward of q, k, v.
    if (!forward) throw std::logic_error("attention.bwd cases need the oracle's forward");
    const auto in = inputs_by_name(p.op, c.inputs);
    Case fwd{p, {}};
    fwd.problem.op = Op::attention_fwd;
    // q, k and v lent to the forward's case and taken back, not copied (at
    // N = M = 16384 they are 200 MB).
    const auto forward_names = info(Op::attention_fwd).inputs;
    for (std::string_view name : forward_names) fwd.inputs.push_back(std::move(in[name]));
    std::vector<AnyTensor> ol = forward(fwd);
    for (std::size_t k = 0; k < forward_names.size(); ++k)
      in[forward_names[k]] = std::move(fwd.inputs[k]);
    const auto fwd_out = outputs_by_name(Op::attention_fwd, ol);
    for (std::string_view name : po.forward_inputs)
      in[name] = fwd_out[name].relayout(spec.layouts[input_position(p.op, name)]);
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
