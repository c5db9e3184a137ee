// The attention family's entries of the property engine's table
// (properties/ops/table.hpp): attention.fwd, bwd, fwdbwd and decode. What
// tells them apart is read from their signatures: decode has one query and
// an index input (lens), the backward ops output dq, attention.bwd takes
// the forward's outputs as inputs.
#include <algorithm>
#include <cmath>

#include "properties/draws.hpp"
#include "properties/ops/table.hpp"
#include "properties/regime_parts.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/named.hpp"

namespace moacert::properties {

namespace {

using moa::extent_t;

// D: a head width of deployed models, or a straddle of a small tile.
extent_t head_width(const ShapeConstraints& shape, const std::vector<extent_t>& small_tiles) {
  return draw_dim(shape, &Dims::D,
                  rc::gen::weightedOneOf<extent_t>(
                      {{2, gen_extent(40, small_tiles)}, {1, rc::gen::element<extent_t>(64, 128)}}),
                  40, small_tiles);
}

void draw_small_dims(bool one_query, Dims& d, extent_t big, const ShapeConstraints& shape,
                     const std::vector<extent_t>& tiles) {
  auto range = [&](extent_t Dims::*field) { return shape.range(field); };
  d.B = draw_dim(shape, &Dims::B, rc::gen::inRange<extent_t>(1, 3), 2, {});
  draw_heads(d, shape);
  d.N = one_query ? 1 : *gen_extent(big, tiles, range(&Dims::N));
  d.M = *gen_extent(big, tiles, range(&Dims::M));
  d.D = draw_dim(
      shape, &Dims::D,
      rc::gen::weightedOneOf<extent_t>(
          {{6, gen_extent(big / 2, tiles)}, {1, rc::gen::element<extent_t>(1, 3, 59, 111, 128)}}),
      big / 2, tiles);
}

// Long queries, long keys, or both (then shorter), up to `long_axis_limit`
// along one long axis.
void draw_large_dims(Dims& d, const ShapeConstraints& shape,
                     const std::vector<extent_t>& small_tiles,
                     const std::vector<extent_t>& large_tiles, extent_t long_axis_limit) {
  const LargeCaseDraws draw{shape, small_tiles, large_tiles};
  d.B = shape.range(&Dims::B).lo;
  one_or_two_heads(d, shape);
  const int which = *rc::gen::inRange(0, 3);
  d.N = which == 1 ? draw.small(&Dims::N, 40)
                   : draw.large(&Dims::N, which == 2 ? 513 : long_axis_limit);
  d.M = which == 0 ? draw.small(&Dims::M, 40)
                   : draw.large(&Dims::M, which == 2 ? 513 : long_axis_limit);
  d.D = head_width(shape, small_tiles);
}

// Decode: a cache length past kLargeDecodeLength.
void draw_large_decode_dims(Dims& d, const ShapeConstraints& shape,
                            const std::vector<extent_t>& small_tiles,
                            const std::vector<extent_t>& large_tiles) {
  d.B = draw_dim(shape, &Dims::B, rc::gen::inRange<extent_t>(1, 3), 2, {});
  one_or_two_heads(d, shape);
  d.N = 1;
  d.M = *gen_large(kLargeDecodeLength, 2 * kLargeDecodeLength + 1, large_tiles,
                   shape.range(&Dims::M));
  d.D = head_width(shape, small_tiles);
}

// The longest extent of the long-only axis (long queries, or long keys,
// the other axis small). Generation 2's 1025 drew a length past 1024 only
// as 1025, in about one attention.fwd case of 320, so that a scratch of
// 1024 keys was caught by 4 seeds of 10 (tests/planted); from generation 3
// attention.fwd reaches 2049 and passes 1024 in about one case of 20 (9
// seeds of 10 caught it: docs/performance.md#planted-tiled-kernels). The
// backward ops, whose long-key cases cost 5 to 15 s each, keep 1025
// (docs/performance.md#deployment-scale-cases).
extent_t long_axis_limit(bool backward, int generation) {
  return !backward && generation >= 3 ? 2049 : 1025;
}

// The shape a regime's family needs, where --shape allows it: causal rows
// with no key (N > M), two whole key tiles for one to underflow, long
// flat rows (kFlatRowKeys keys, every one seen; few queries and a narrow
// head, so that the oracle's cost stays that of a small case).
void shape_for_regime(CaseSpec& s, const ShapeConstraints& shape) {
  Problem& p = s.problem;
  Dims& d = p.dims;
  if (s.values == Values::no_key_rows) {
    p.params.causal = true;
    if (d.N <= d.M) {
      const extent_t half = shape.range(&Dims::M).clamp(d.N / 2);
      if (half < d.N) {
        d.M = half;
      } else if (shape.range(&Dims::N).contains(d.M + 1)) {
        d.N = d.M + 1;
      }
    }
  }
  if (s.values == Values::underflowing_tile) {
    const ExtentRange r = shape.range(&Dims::M);
    d.M = r.clamp(std::max(d.M, 2 * kUnderflowTile));
  }
  if (s.values == Values::flat_rows) {
    d.M = shape.range(&Dims::M).clamp(kFlatRowKeys);
    d.N = shape.range(&Dims::N).clamp(std::min<extent_t>(d.N, 4));
    d.D = shape.range(&Dims::D).clamp(std::min<extent_t>(d.D, 64));
    d.B = shape.range(&Dims::B).clamp(1);
    if (shape.range(&Dims::H).contains(1) && shape.range(&Dims::Hkv).contains(1)) d.H = d.Hkv = 1;
    p.params.causal = false;
    if (!s.lens.empty()) s.lens.assign(std::size_t(d.B), d.M);  // a curated decode's
  }
}

// Decode's lens: any, 1, all of L, and from generation 2 the straddles of
// the tiles and splits below L; from generation 5 those straddles twice as
// often, since a sixth of the cases (the envelope's, whose one batch sees
// the whole cache) draws none: a 512-key split's boundary (tests/planted,
// split_decode) is straddled only here, by the deployment-scale cases
// (about 2 of 300 cases, as in generation 4; seed 5 lost it at weight 1).
void draw_lens(CaseSpec& s, const GenSettings& g) {
  const Dims& d = s.problem.dims;
  std::vector<std::int64_t> straddle;
  if (g.generation >= 2)
    for (extent_t t : with_common_tiles(g.tiles, kCommonTiles.back()))
      for (extent_t e : {t - 1, t, t + 1})
        if (e >= 1 && e <= d.M) straddle.push_back(e);
  for (extent_t b = 0; b < d.B; ++b) {
    const auto any = rc::gen::inRange<std::int64_t>(1, d.M + 1);
    const auto one = rc::gen::just<std::int64_t>(1), all = rc::gen::just(std::int64_t{d.M});
    s.lens.push_back(straddle.empty()
                         ? *rc::gen::weightedOneOf<std::int64_t>({{2, any}, {1, one}, {1, all}})
                         : *rc::gen::weightedOneOf<std::int64_t>(
                               {{2, any},
                                {1, one},
                                {1, all},
                                {g.generation >= 5 ? 2u : 1u, rc::gen::elementOf(straddle)}}));
  }
  // A whole tile past key 0's to underflow: batch 0 sees two tiles.
  if (s.values == Values::underflowing_tile)
    s.lens[0] = std::max<std::int64_t>(s.lens[0], std::min(2 * kUnderflowTile, d.M));
  // A flat row is the whole cache.
  if (s.values == Values::flat_rows) s.lens.assign(s.lens.size(), d.M);
}

// The curated cases alternate the structural extremes across families:
// N > M causal (rows with no key), N = 1, tile straddles, MQA / GQA.
void curate(CaseSpec& s, std::uint64_t k, extent_t tile) {
  const Op op = s.problem.op;
  const bool causal = has_param(op, "causal"), one_query = has_index_input(op);
  Dims& d = s.problem.dims;
  switch (k % 4) {
    case 0:
      d.N = std::min<extent_t>(tile + 1, 40);
      d.M = 3;
      s.problem.params.causal = causal;
      break;
    case 1:
      d.N = 1;
      d.M = std::min<extent_t>(tile + 1, 40);
      break;
    case 2:
      d.N = std::max<extent_t>(tile - 1, 1);
      d.M = tile;
      d.Hkv = 1;
      d.H = 3;
      break;
    case 3:
      d.N = 5;
      d.M = 7;
      d.Hkv = 2;
      d.H = 4;
      s.problem.params.causal = causal;
      break;
  }
  if (one_query) {
    d.N = 1;
    s.lens.assign(std::size_t(d.B), 1);
    s.lens.back() = d.M;
  }
  d.D = std::min<extent_t>(d.D, 32);
}

// Decode's lens after --shape clamped L: within it, the last one all of it.
void retie_lens(CaseSpec& s) {
  const Dims& d = s.problem.dims;
  s.lens.resize(std::size_t(d.B), 1);
  for (std::int64_t& len : s.lens) len = std::clamp<std::int64_t>(len, 1, d.M);
  s.lens.back() = d.M;
}

Regimes classify_attention(const Case& c, const FormatLimits& l) {
  const Problem& p = c.problem;
  const auto in = inputs_by_name(p.op, c.inputs);
  std::vector<double> lens;
  if (in.has("lens")) lens = dense(in["lens"]);
  Regimes out;
  classify_softmax(rows_as_double(in["q"]), rows_as_double(in["k"]), p.dims, p.mask(), p.scale(),
                   lens, l, out);
  return out;
}

}  // namespace

PropertyOp attention_op(Op op) {
  using R = Regime;
  // Decode: one query row per head, over a cache of lens[b] >= 1 keys:
  // every head sees a key. The backward ops output dq, dk, dv.
  const bool one_query = has_index_input(op), backward = has_output(op, "dq");
  PropertyOp a;
  a.draw_small_dims = [one_query](Dims& d, extent_t big, const ShapeConstraints& shape,
                                  const std::vector<extent_t>& tiles) {
    draw_small_dims(one_query, d, big, shape, tiles);
  };
  if (one_query) {
    a.draw_large_dims = [](Dims& d, const ShapeConstraints& shape,
                           const std::vector<extent_t>& small_tiles,
                           const std::vector<extent_t>& large_tiles, int /*generation*/) {
      draw_large_decode_dims(d, shape, small_tiles, large_tiles);
    };
    a.is_large = [](const Dims& d) { return d.M > kLargeDecodeLength; };
    a.draw_index_inputs = draw_lens;
    a.retie = retie_lens;
  } else {
    a.draw_large_dims = [backward](Dims& d, const ShapeConstraints& shape,
                                   const std::vector<extent_t>& small_tiles,
                                   const std::vector<extent_t>& large_tiles, int generation) {
      draw_large_dims(d, shape, small_tiles, large_tiles, long_axis_limit(backward, generation));
    };
  }
  // The deployment envelope (docs/design.md#deployment-envelope): query
  // and key positions to 32768, decode's cache to 131072, groups of query
  // heads per kv head to 16 (over one kv head: H = the group).
  const EnvelopeAxis group{&Dims::H, 16, 2, true};
  if (one_query)
    a.envelope_axes = {{&Dims::M, 131072}, group};
  else
    a.envelope_axes = {{&Dims::N, 32768}, {&Dims::M, 32768}, group};
  // The backward's large cases cost the most.
  a.large_one_in = backward ? 10 : 6;
  if (has_param(op, "causal"))
    a.draw_params = [](Params& params) { params.causal = *rc::gen::arbitrary<bool>(); };
  a.families = {Values::uniform,  Values::normal,     Values::large_logits, Values::ties,
                Values::dominant, Values::tiny_scale, Values::extreme};
  a.regime_families = {Values::exp_overflow, Values::underflowing_tile, Values::one_hot};
  if (!one_query) a.regime_families.push_back(Values::no_key_rows);
  // Long flat rows for the ops whose value sum a narrow accumulator
  // stalls in (the forward's, decode's), first among the curated cases,
  // so that such a kernel's first failure shows its severity.
  if (!backward) {
    a.regime_families.push_back(Values::flat_rows);
    a.curated_first = {Values::flat_rows};
  }
  a.shape_for_regime = shape_for_regime;
  a.broadcasts = true;
  for (std::string_view name : info(Op::attention_fwd).outputs)
    if (has_input(op, name)) a.forward_inputs.push_back(name);
  a.describe_dims = [one_query](const Problem& p, std::ostream& os) {
    const Dims& d = p.dims;
    os << " B=" << d.B << " H=" << d.H << " Hkv=" << d.Hkv << " N=" << d.N
       << (one_query ? " L=" : " M=") << d.M << " D=" << d.D << (p.causal() ? " causal" : "")
       << " scale=" << p.scale();
  };
  a.curate = curate;

  a.regimes = {R::exp_overflow, R::underflowing_tile, R::no_key_row, R::tie, R::dominant_key};
  if (one_query) std::erase(a.regimes, R::no_key_row);
  if (!backward) a.regimes.push_back(R::long_flat_row);
  a.classify = classify_attention;

  // The first pass's multiply-adds: scores and P·V (2) for the forward's
  // outputs, 4 for the backward's.
  const double passes = (has_output(op, "o") ? 2 : 0) + (backward ? 4 : 0);
  a.oracle_work = [passes](const Problem& p) {
    const Dims& d = p.dims;
    return passes * (double(d.B) * double(d.H) * double(d.N) * double(d.M) * double(d.D));
  };
  a.samples_key_rows = backward;
  a.row_spaces = [one_query, backward](const Problem& p) {
    const Dims& d = p.dims;
    RowSpace query, key;
    if (one_query) {  // rows (b, h); every row spans the whole cache
      query = {1, d.B * d.H, false, {}, {}};
      return std::pair{query, key};
    }
    query = {d.B * d.H, d.N, true, {}, {}};
    key = {d.B * d.Hkv, d.M, true, {}, {}};
    for (extent_t i = 0; i < d.N; ++i)  // one run's counts: every run has the same
      query.seen.push_back(dnf::visible_keys(p.mask(), i, d.N, d.M, d.M));
    if (backward) {
      for (extent_t j = 0; j < d.M; ++j)
        key.seen.push_back(p.causal() ? std::clamp<extent_t>(
                                            d.N - causal::first_row(p.mask(), j, d.N, d.M), 0, d.N)
                                      : d.N);
    }
    return std::pair{query, key};
  };
  a.add_data = [backward](const Case& c, RowSpace& query, RowSpace& key) {
    const Dims& d = c.problem.dims;
    const auto in = inputs_by_name(c.problem.op, c.inputs);
    query.norm2 = row_norms(in["q"], d.D);
    if (backward) key.norm2 = row_norms(in["k"], d.D);
    if (in.has("lens"))
      for (extent_t b = 0; b < d.B; ++b)
        for (extent_t h = 0; h < d.H; ++h) query.seen.push_back(extent_t(in["lens"].get({b})));
  };
  return a;
}

}  // namespace moacert::properties
