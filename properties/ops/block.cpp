// The block's entry of the property engine's table
// (properties/ops/table.hpp): a transformer block, its causal
// self-attention and its MLP each after an RMSNorm. Its regimes are its
// parts', judged on its intermediates, and its regime families are aimed
// at them on the built case.
#include <algorithm>
#include <cmath>

#include "properties/block_in_double.hpp"
#include "properties/draws.hpp"
#include "properties/ops/table.hpp"
#include "properties/regime_parts.hpp"
#include "reference/dnf/block.hpp"
#include "reference/named.hpp"

namespace moacert::properties {

namespace {

using moa::extent_t;

void draw_small_dims(Dims& d, extent_t /*big*/, const ShapeConstraints& shape,
                     const std::vector<extent_t>& /*tiles*/) {
  auto range = [&](extent_t Dims::*field) { return shape.range(field); };
  d.B = draw_dim(shape, &Dims::B, rc::gen::inRange<extent_t>(1, 3), 2, {});
  draw_heads(d, shape);
  d.N = *gen_extent(8, {}, range(&Dims::N));
  d.M = d.N;
  d.D = *gen_extent(8, {}, range(&Dims::D));
  d.Dm = *gen_extent(16, {}, range(&Dims::Dm));
  d.F = *gen_extent(16, {}, range(&Dims::F));
}

// Long sequences, a wide model or a wide MLP.
void draw_large_dims(Dims& d, const ShapeConstraints& shape,
                     const std::vector<extent_t>& small_tiles,
                     const std::vector<extent_t>& large_tiles, int /*generation*/) {
  const LargeCaseDraws draw{shape, small_tiles, large_tiles};
  d.B = shape.range(&Dims::B).lo;
  one_or_two_heads(d, shape);
  const int which = *rc::gen::inRange(0, 3);
  d.N = which == 0 ? draw.large(&Dims::N, 513) : draw.small(&Dims::N, 8);
  d.M = d.N;
  d.D = draw.small(&Dims::D, 8);
  d.Dm = which == 1 ? draw.large(&Dims::Dm, 1025) : draw.small(&Dims::Dm, 16);
  d.F = which == 2 ? draw.large(&Dims::F, 1025) : draw.small(&Dims::F, 16);
}

// The shape a regime's family needs, where --shape allows it.
// Self-attention rows: a tie needs two keys, an underflowing tile two whole
// tiles, silu-range a row to negate; aim_block's rows two components of
// the model width.
void shape_for_regime(CaseSpec& s, const ShapeConstraints& shape) {
  Dims& d = s.problem.dims;
  const Values v = s.values;
  const extent_t rows = v == Values::underflowing_tile                 ? 2 * kUnderflowTile
                        : v == Values::ties || v == Values::silu_range ? 2
                                                                       : 1;
  const ExtentRange n = shape.range(&Dims::N), dm = shape.range(&Dims::Dm);
  d.N = n.clamp(std::max(d.N, rows));
  d.M = d.N;
  if (v == Values::underflowing_tile || v == Values::cancellation)
    d.Dm = dm.clamp(std::max<extent_t>(d.Dm, 2));
}

// Row 0 of a block case's MLP input, rmsnorm(h), after setting Wo = 0: then
// h = x, and the value takes no exp, so an aim that reads it does not hang
// the case's bits on the machine's libm (block_in_double's attention calls
// std::exp).
std::vector<double> mlp_input_row_0_without_attention(Case& c) {
  AnyTensor& wo = inputs_by_name(Op::block, c.inputs)["wo"];
  for (const moa::Index& i : moa::iota(wo.shape())) wo.set(i, 0.0);
  const BlockInDouble fwd = block_in_double(c);
  const std::vector<double>& hn = fwd.mid.h_normed.storage();
  return {hn.begin(), hn.begin() + c.problem.dims.Dm};
}

// Block's inputs reach its attention and its MLP only through an RMSNorm
// and the projections, so its families (generation 4) are aimed on the
// built case at the intermediates, as its forward in double sees them
// (block_in_double).
void aim_block(Case& c, Values values) {
  const Problem& p = c.problem;
  const Dims& d = p.dims;
  const FormatLimits lim = limits(p.format);
  const double scale = dnf::block_scale(d.D);
  const auto in = inputs_by_name(Op::block, c.inputs);
  AnyTensor &x = in["x"], &attn_norm = in["attn_norm"], &wq = in["wq"], &wk = in["wk"];
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
      for (std::string_view name : {"w1", "w3"}) {
        AnyTensor& w = in[name];
        double sum = 0;
        for (extent_t k = 0; k < width; ++k)
          if (k != pivot) sum += hn[k] * w.get({k, 0});
        w.set({pivot, 0}, -sum / hn[pivot]);
      }
      break;
    }
    case Values::silu_range: {
      // x's odd rows negate the even ones; with Wo = 0 (h = x) the MLP's
      // input rows do too. W1's even columns are row 0's MLP input scaled
      // to a gate argument t past exp's overflow and underflow thresholds
      // (-t at row 1), W3's divided by t to keep silu(z)·up O(1); W1's odd
      // columns give row 0 a gate argument below u.
      AnyTensor &w1 = in["w1"], &w3 = in["w3"];
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

// A (B·N, heads·D) row-major matrix of a block's projections as (B, heads,
// N, D) row-major, attention's order.
std::vector<double> heads_first(const moa::Tensor<double>& t, extent_t B, extent_t N,
                                extent_t heads, extent_t D) {
  std::vector<double> out;
  out.reserve(std::size_t(B * heads * N * D));
  for (extent_t b = 0; b < B; ++b)
    for (extent_t h = 0; h < heads; ++h)
      for (extent_t n = 0; n < N; ++n)
        for (extent_t d = 0; d < D; ++d)
          out.push_back(t.storage()[std::size_t((b * N + n) * heads * D + h * D + d)]);
  return out;
}

// A block's regimes are its parts', judged on its intermediates (its
// forward in double): both RMSNorms' rows, the causal self-attention's
// softmax, the MLP's GEMMs and gates.
Regimes classify_block(const Case& c, const FormatLimits& l) {
  const Problem& p = c.problem;
  const Dims& d = p.dims;
  const BlockInDouble f = block_in_double(c);
  const auto in = inputs_by_name(Op::block, f.inputs);
  const extent_t rows = d.B * d.N;
  Regimes out;
  classify_sums_of_squares(f.mid.x.storage().data(), rows, d.Dm, p.params.eps, l, out);
  classify_sums_of_squares(f.mid.h.storage().data(), rows, d.Dm, p.params.eps, l, out);
  Dims self = d;  // self-attention: the keys are the queries' rows
  self.M = d.N;
  const std::vector<double> q = heads_first(f.mid.q, d.B, d.N, d.H, d.D),
                            k = heads_first(f.mid.k, d.B, d.N, d.Hkv, d.D);
  classify_softmax(rows_as_double(q, d.D), rows_as_double(k, d.D), self, /*causal=*/true,
                   dnf::block_scale(d.D), {}, l, out);
  classify_gates(f.mid.h_normed.storage().data(), in["w1"], in["w3"], rows, d.Dm, d.F, p.format, l,
                 out);
  return out;
}

}  // namespace

PropertyOp block_op() {
  using R = Regime;
  PropertyOp b;
  b.draw_small_dims = draw_small_dims;
  b.draw_large_dims = draw_large_dims;
  b.draw_params = [](Params& params) { params.eps = *rc::gen::element(1e-6, 1e-5); };
  b.families = {Values::uniform, Values::normal};
  // An underflowing tile's key leads by more than a one-hot row's: it
  // reaches softmax.dominant-key too.
  b.regime_families = {Values::exp_overflow, Values::underflowing_tile, Values::ties,
                       Values::rms_range,    Values::silu_range,        Values::cancellation};
  b.aimed_from = 4;
  b.shape_for_regime = shape_for_regime;
  b.aim = aim_block;
  b.describe_dims = [](const Problem& p, std::ostream& os) {
    const Dims& d = p.dims;
    os << " B=" << d.B << " N=" << d.N << " Dm=" << d.Dm << " H=" << d.H << " Hkv=" << d.Hkv
       << " D=" << d.D << " F=" << d.F << " eps=" << p.params.eps;
  };
  b.retie = [](CaseSpec& s) { s.problem.dims.M = s.problem.dims.N; };

  // Its parts': its causal self-attention (N = M: every row sees key 0),
  // its two RMSNorms (before the attention, before the MLP), its MLP.
  b.regimes = {
      R::exp_overflow,          R::underflowing_tile,           R::tie,
      R::dominant_key,          R::sum_of_squares_overflows,    R::sum_of_squares_underflows,
      R::eps_dominates,         R::silu_exp_z_overflows,        R::silu_exp_minus_z_overflows,
      R::silu_exp_z_underflows, R::silu_exp_minus_z_underflows, R::silu_near_zero,
      R::cancellation};
  b.classify = classify_block;

  // Judged whole: one unit per batch holds all its rows anyway.
  b.oracle_work = [](const Problem&) { return 0.0; };
  b.judged_whole = true;
  b.row_spaces = [](const Problem&) { return std::pair{RowSpace{}, RowSpace{}}; };
  b.add_data = [](const Case&, RowSpace&, RowSpace&) {};
  return b;
}

}  // namespace moacert::properties
