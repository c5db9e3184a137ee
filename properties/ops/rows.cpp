// The rows family's entries of the property engine's table
// (properties/ops/table.hpp): rmsnorm and mlp.swiglu, ops on independent
// rows x[T, ...].
#include <algorithm>
#include <cmath>

#include "properties/draws.hpp"
#include "properties/ops/table.hpp"
#include "properties/regime_parts.hpp"
#include "reference/named.hpp"

namespace moacert::properties {

namespace {

using moa::extent_t;

// The extremes of the rows ops' small cases: a row of one element, odd
// widths, a head width.
rc::Gen<extent_t> odd_widths() {
  return rc::gen::element<extent_t>(1, 3, 59, 111, 128);
}

// The cancellation family: x_{0,Dm-1} = 1/2, then W1's and W3's last
// entry of column 0 are chosen so that (x W)_{00} = 0 before they are
// rounded to the format: what is left is that rounding, about u of the
// terms' magnitudes (a single term cannot cancel).
void aim_cancellation(Case& c) {
  const extent_t Dm = c.problem.dims.Dm, last = Dm - 1;
  if (Dm < 2) return;
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  AnyTensor& x = in["x"];
  x.set({0, last}, 0.5);
  for (std::string_view name : {"w1", "w3"}) {
    AnyTensor& w = in[name];
    double sum = 0;
    for (extent_t k = 0; k < last; ++k) sum += x.get({0, k}) * w.get({k, 0});
    w.set({last, 0}, -2 * sum);
  }
}

// v rounded to `bits` significant bits (exact operations alone: frexp,
// ldexp and a rounding to an integer).
double with_bits(double v, int bits) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);
  return std::ldexp(std::nearbyint(std::ldexp(v, bits - e)), e - bits);
}

// The down projection's cancellation family (generation 7): the columns of
// h = silu(x W1) * (x W3) are paired, f with f' = f + F/2: W1's column f'
// is a copy of column f and W3's is -3 times column f (kept to p - 2 bits,
// so that the product is exact), so that h_tf' = -3 h_tf in every row t,
// whatever silu is; W2's row f' is row f / 3 rounded to the format. Each
// pair's products h_tf W2_fc and h_tf' W2_f'c are then of one magnitude
// and opposite signs, and their sum is h_tf (W2_fc - 3 fl(W2_fc / 3)):
// about u of either, while sum_f |h_tf W2_fc| is about twice the pairs'
// magnitudes. Where F is odd, W2's last row is 0. A kernel that rounds h,
// the products or partial sums to a narrower format than the bound allows
// (ggml rounds h to f16 for f16 weights) is judged against a result u
// times smaller than its terms; one rounding h_tf and h_tf' to the same
// relative step does not cancel that rounding, since 3 is not a power of
// two. No libm function is involved, so the case's bits are the same on
// every machine (docs/design.md#numerical-regimes).
void aim_down_cancellation(Case& c) {
  const extent_t Dm = c.problem.dims.Dm, F = c.problem.dims.F, half = F / 2;
  if (half < 1) return;
  const int bits = info(c.problem.format).precision - 2;
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  AnyTensor &w1 = in["w1"], &w3 = in["w3"], &w2 = in["w2"];
  for (extent_t f = 0; f < half; ++f) {
    const extent_t g = f + half;
    for (extent_t k = 0; k < Dm; ++k) {
      w1.set({k, g}, w1.get({k, f}));
      w3.set({k, f}, with_bits(w3.get({k, f}), bits));
      w3.set({k, g}, -3 * w3.get({k, f}));
      if (w3.get({k, g}) != -3 * w3.get({k, f})) {  // past the format's range: no term
        w3.set({k, f}, 0.0);
        w3.set({k, g}, 0.0);
      }
    }
    for (extent_t col = 0; col < Dm; ++col) w2.set({g, col}, w2.get({f, col}) / 3);
  }
  if (F % 2)
    for (extent_t col = 0; col < Dm; ++col) w2.set({F - 1, col}, 0.0);
}

Regimes classify_rmsnorm(const Case& c, const FormatLimits& l) {
  const std::vector<double> x = dense(inputs_by_name(c.problem.op, c.inputs)["x"]);
  Regimes out;
  classify_sums_of_squares(x.data(), c.problem.dims.T, c.problem.dims.D, c.problem.params.eps, l,
                           out);
  return out;
}

Regimes classify_swiglu(const Case& c, const FormatLimits& l) {
  const Dims& d = c.problem.dims;
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  const std::vector<double> x = dense(in["x"]);
  Regimes out;
  const MatrixRows w2(in["w2"]);
  classify_gates(x.data(), in["w1"], in["w3"], d.T, d.Dm, d.F, c.problem.format, l, out, &w2);
  return out;
}

// The rows T (a prefill's tokens) as an envelope axis, from generation 8.
EnvelopeAxis token_rows() {
  EnvelopeAxis a{&Dims::T, kTokenEdge};
  a.from_generation = 8;
  a.others_at_most = 2;
  return a;
}

// What both rows ops share: no regime family needs a shape, one query row
// space of T rows, whose norms are those of x's rows of `width`.
PropertyOp rows_op(extent_t Dims::*width) {
  PropertyOp r;
  r.families = {Values::uniform, Values::normal, Values::extreme};
  r.shape_for_regime = [](CaseSpec&, const ShapeConstraints&) {};
  r.row_spaces = [](const Problem& p) {
    return std::pair{RowSpace{1, p.dims.T, true, {}, {}}, RowSpace{}};
  };
  r.add_data = [width](const Case& c, RowSpace& query, RowSpace&) {
    query.norm2 = row_norms(inputs_by_name(c.problem.op, c.inputs)["x"], c.problem.dims.*width);
  };
  return r;
}

}  // namespace

PropertyOp rmsnorm_op() {
  using R = Regime;
  PropertyOp r = rows_op(&Dims::D);
  r.draw_small_dims = [](Dims& d, extent_t big, const ShapeConstraints& shape,
                         const std::vector<extent_t>& tiles) {
    d.T = *gen_extent(8, {}, shape.range(&Dims::T));
    d.D = draw_dim(
        shape, &Dims::D,
        rc::gen::weightedOneOf<extent_t>({{6, gen_extent(4 * big, tiles)}, {1, odd_widths()}}),
        4 * big, tiles);
  };
  r.draw_large_dims = [](Dims& d, const ShapeConstraints& shape,
                         const std::vector<extent_t>& small_tiles,
                         const std::vector<extent_t>& large_tiles, int /*generation*/) {
    d.T = *gen_extent(8, small_tiles, shape.range(&Dims::T));
    d.D = *gen_large(kLargeExtent, 4097, large_tiles, shape.range(&Dims::D));
  };
  // The model width, and from generation 8 the rows, a prefill's tokens
  // (docs/design.md#deployment-envelope).
  r.envelope_axes = {{&Dims::D, 16384}, token_rows()};
  r.draw_params = [](Params& params) { params.eps = *rc::gen::element(1e-6, 1e-5, 0.25); };
  r.regime_families = {Values::rms_range};
  r.describe_dims = [](const Problem& p, std::ostream& os) {
    os << " T=" << p.dims.T << " D=" << p.dims.D << " eps=" << p.params.eps;
  };
  r.regimes = {R::sum_of_squares_overflows, R::sum_of_squares_underflows, R::eps_dominates};
  r.classify = classify_rmsnorm;
  r.oracle_work = [](const Problem& p) { return double(p.dims.T) * double(p.dims.D); };
  return r;
}

PropertyOp swiglu_op() {
  using R = Regime;
  PropertyOp r = rows_op(&Dims::Dm);
  r.draw_small_dims = [](Dims& d, extent_t big, const ShapeConstraints& shape,
                         const std::vector<extent_t>& tiles) {
    d.T = *gen_extent(big / 2, tiles, shape.range(&Dims::T));
    d.Dm = *gen_extent(big, tiles, shape.range(&Dims::Dm));
    d.F = *gen_extent(big, tiles, shape.range(&Dims::F));
  };
  // One long axis of the three GEMMs, the others short.
  r.draw_large_dims = [](Dims& d, const ShapeConstraints& shape,
                         const std::vector<extent_t>& small_tiles,
                         const std::vector<extent_t>& large_tiles, int /*generation*/) {
    const LargeCaseDraws draw{shape, small_tiles, large_tiles};
    const int which = *rc::gen::inRange(0, 3);
    d.T = which == 0 ? draw.large(&Dims::T, 1025) : draw.small(&Dims::T, 4);
    d.Dm = which == 1 ? draw.large(&Dims::Dm, 1025) : draw.small(&Dims::Dm, 16);
    d.F = which == 2 ? draw.large(&Dims::F, 1025) : draw.small(&Dims::F, 16);
  };
  // The model and MLP widths (docs/design.md#deployment-envelope).
  r.envelope_axes = {{&Dims::Dm, 16384}, {&Dims::F, 53248}, token_rows()};
  r.regime_families = {Values::silu_range, Values::cancellation, Values::down_cancellation};
  // A down projection cancels over two terms at least (where --shape
  // allows F = 2).
  r.shape_for_regime = [](CaseSpec& s, const ShapeConstraints& shape) {
    if (s.values == Values::down_cancellation && s.problem.dims.F < 2)
      s.problem.dims.F = shape.range(&Dims::F).clamp(2);
  };
  r.aim = [](Case& c, Values values) {
    if (values == Values::cancellation) aim_cancellation(c);
    if (values == Values::down_cancellation) aim_down_cancellation(c);
  };
  r.describe_dims = [](const Problem& p, std::ostream& os) {
    os << " T=" << p.dims.T << " Dm=" << p.dims.Dm << " F=" << p.dims.F;
  };
  r.regimes = {R::silu_exp_z_overflows,  R::silu_exp_minus_z_overflows,
               R::silu_exp_z_underflows, R::silu_exp_minus_z_underflows,
               R::silu_near_zero,        R::cancellation,
               R::down_cancellation};
  r.classify = classify_swiglu;
  r.oracle_work = [](const Problem& p) {
    return 3 * double(p.dims.T) * double(p.dims.Dm) * double(p.dims.F);
  };
  return r;
}

}  // namespace moacert::properties
