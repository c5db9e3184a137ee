// The block's row of the oracle's op table (oracle/ops/table.hpp). Its
// query rows are (b, n), flat b·N + n; a unit is a batch b (attention mixes
// the rows), which reads its batch of x and every weight whole. Its bound,
// docs/bounds.md#block, composes each stage's bound with the errors of its
// inputs propagated to first order (doubled for the second).
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/ops/table.hpp"
#include "reference/dnf/block.hpp"
#include "reference/named.hpp"

namespace moacert::oracle {
namespace {

using detail::BoundCall;
using detail::ForwardBounds;
using detail::kEvalSlack;
using detail::Mat;
using detail::no_key_rows;
using detail::Read;
using detail::Unit;
using detail::UnitKind;
using moa::extent_t;
using moa::Index;
using moa::Shape;
using Bounds = std::vector<std::vector<double>>;

extent_t token_rows(const Problem& p) {  // (b, n)
  return p.dims.B * p.dims.N;
}

// A batch holds rows b·N .. b·N + N - 1: one unit per batch met.
std::vector<Unit> batch_units(const Problem& p, const Selection* rows) {
  std::vector<Unit> units;
  detail::for_each_query_row(p, rows, [&](extent_t r) {
    if (units.empty() || units.back().a != r / p.dims.N)
      units.push_back({UnitKind::batch, r / p.dims.N, 0, 0});
  });
  return units;
}

// A batch's attention and MLP: its scores, then the rows the DNF holds
// (dnf/block.hpp): x, rmsnorm(x), h, rmsnorm(h) and the MLP's output (Dm
// each), q, k, v and o (at most H·D each), lse (H), and the MLP's hidden
// layer.
double batch_scratch(const Problem& p, const Unit&) {
  const Dims& d = p.dims;
  return 2.0 * double(d.H) * double(d.N) * double(d.N) +
         double(d.N) * (4.0 * double(d.H) * double(d.D) + double(d.H) + 3.0 * double(d.F) +
                        5.0 * double(d.Dm));
}

// Batch b of x, then every weight whole.
std::vector<Read> reads(const Problem& p, const Unit& u) {
  return detail::rows_of_x_and_every_weight(p, {u.a, 0, 0}, {1, p.dims.N, p.dims.Dm});
}

Bounds block_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const detail::RoundingUnits& u = call.u;
  const auto in = inputs_by_name(p.op, call.widened);
  const Mat& x = in["x"];
  const Dims& d = p.dims;
  const extent_t rows = d.B * d.N;
  Mat xr(Shape{rows, d.Dm});
  for (const Index& i : moa::iota(x.shape())) xr.view()(i[0] * d.N + i[1], i[2]) = x.view()(i);
  Mat xn, q, kk, vv;
  const Mat exn = detail::rmsnorm_bounds(xr, in["attn_norm"], p.params.eps, u, &xn);
  const Mat eq = detail::gemm_bounds(xn, in["wq"], &exn, u, &q),
            ek = detail::gemm_bounds(xn, in["wk"], &exn, u, &kk),
            ev = detail::gemm_bounds(xn, in["wv"], &exn, u, &vv);
  auto heads = [&](const Mat& flat, extent_t nh) {  // (B·N, nh·D) -> (B, nh, N, D)
    Mat out(Shape{d.B, nh, d.N, d.D});
    for (const Index& i : moa::iota(out.shape()))
      out.view()(i) = flat.view()(i[0] * d.N + i[2], i[1] * d.D + i[3]);
    return out;
  };
  const Mat qh = heads(q, d.H), kh = heads(kk, d.Hkv), vh = heads(vv, d.Hkv);
  const Mat eqh = heads(eq, d.H), ekh = heads(ek, d.Hkv), evh = heads(ev, d.Hkv);
  const ForwardBounds f = detail::attention_forward_bounds(
      qh, kh, vh, dnf::block_scale(d.D), /*causal=*/true, nullptr, u, {&eqh, &ekh, &evh});
  Mat o(Shape{rows, d.H * d.D}), eo(Shape{rows, d.H * d.D});
  for (const Index& i : moa::iota(f.o.shape())) {
    o.view()(i[0] * d.N + i[2], i[1] * d.D + i[3]) = f.o_val.view()(i);
    eo.view()(i[0] * d.N + i[2], i[1] * d.D + i[3]) = 2 * f.o.view()(i);
  }
  Mat attn;
  const Mat ea = detail::gemm_bounds(o, in["wo"], &eo, u, &attn);
  Mat hres(Shape{rows, d.Dm}), eh(Shape{rows, d.Dm});
  for (const Index& i : moa::iota(hres.shape())) {
    hres.view()(i) = xr.view()(i) + attn.view()(i);
    eh.view()(i) = ea.view()(i) * (1 + u.ua) + u.ua * std::fabs(hres.view()(i));
  }
  Mat hn;
  const Mat ehn = detail::rmsnorm_bounds(hres, in["mlp_norm"], p.params.eps, u, &hn, &eh);
  Mat m;
  const Mat em = detail::mlp_bounds(hn, in["w1"], in["w3"], in["w2"], u, &m, &ehn);
  Bounds out(info(p.op).outputs.size());
  std::vector<double>& y_bound = outputs_by_name(p.op, out)["y"];
  for (const Index& i : moa::iota(hres.shape())) {
    const double y = hres.view()(i) + m.view()(i);
    const double e = (eh.view()(i) + em.view()(i)) * (1 + u.ua) + u.ua * std::fabs(y);
    y_bound.push_back(kEvalSlack * (e * (1 + u.us) + u.us * std::fabs(y) + u.eta_out(y, e)));
  }
  return out;
}

}  // namespace

namespace ops {

OracleOp block() {
  return {.query_row_count = token_rows,
          .key_row_count = no_key_rows,
          .key_outputs = {},
          .units = batch_units,
          .unit_scratch_elements = batch_scratch,
          .reads = reads,
          .first_pass = false,
          .apriori_bounds = block_bounds};
}

}  // namespace ops
}  // namespace moacert::oracle
