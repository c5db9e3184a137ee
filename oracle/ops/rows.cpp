// The row ops' rows of the oracle's op table (oracle/ops/table.hpp):
// rmsnorm and mlp.swiglu, ops on independent rows t of x. A row is a query
// row and one unit, which reads its row of x and, for rmsnorm, its weight
// whole (mlp.swiglu's units stream theirs, and rmsnorm's at the MPFI pass
// stream both); the bounds are
// docs/bounds.md#rmsnorm and #swiglu-mlp.
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"
#include "oracle/detail/streamed_mlp.hpp"
#include "oracle/detail/streamed_norm.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/ops/table.hpp"
#include "reference/named.hpp"

namespace moacert::oracle {
namespace {

using detail::BoundCall;
using detail::no_key_rows;
using detail::rav;
using detail::Read;
using detail::Unit;
using detail::UnitKind;
using moa::extent_t;
using Bounds = std::vector<std::vector<double>>;

extent_t token_rows(const Problem& p) {  // t
  return p.dims.T;
}

template <UnitKind kind>
std::vector<Unit> row_units(const Problem& p, const Selection* rows) {
  std::vector<Unit> units;
  detail::for_each_query_row(p, rows, [&](extent_t t) { units.push_back({kind, t, 0, 0}); });
  return units;
}

moa::extent_t x_width(const Problem& p) {  // x: (T, width)
  return input_shapes(p)[input_position(p.op, "x")][1];
}

// rmsnorm: row t of x, then its weight whole.
std::vector<Read> norm_reads(const Problem& p, const Unit& u) {
  return detail::rows_of_x_and_every_weight(p, {u.a, 0}, {1, x_width(p)});
}

// mlp.swiglu: row t of x alone; the unit streams its weights from the case
// (detail/streamed_mlp.hpp).
std::vector<Read> mlp_reads(const Problem& p, const Unit& u) {
  return {{static_cast<int>(input_position(p.op, "x")), {u.a, 0}, {1, x_width(p)}}};
}

// The most scratch one row's call holds: rmsnorm its row of y (x and w
// are the pass's reads); mlp.swiglu its row of x, the hidden layer, y and
// a weight's row (streamed_mlp_scratch).
double norm_scratch(const Problem& p, const Unit&) {
  return double(p.dims.D);
}
// At the MPFI pass a row of rmsnorm reads x and w from the case a block at
// a time (detail/streamed_norm.hpp).
double norm_streamed_scratch(const Problem& p, const Unit&) {
  return detail::streamed_norm_scratch(p.dims);
}
double mlp_scratch(const Problem& p, const Unit&) {
  return detail::streamed_mlp_scratch(p.dims);
}

Bounds rmsnorm_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const auto x = inputs_by_name(p.op, call.widened);
  Bounds out(info(p.op).outputs.size());
  outputs_by_name(p.op, out)["y"] =
      rav(detail::rmsnorm_bounds(x["x"], x["w"], p.params.eps, call.u, nullptr));
  return out;
}

// The selected rows only (call.only); x widened here, the weights read
// from the case a row of a block at a time (bounds_widen_own_rows).
Bounds mlp_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const auto in = inputs_by_name(p.op, call.c.inputs);
  detail::Mat x(in["x"].shape());
  detail::widen_rows(in["x"], 0, x);
  Bounds out(info(p.op).outputs.size());
  outputs_by_name(p.op, out)["y"] =
      rav(detail::mlp_bounds(x, in["w1"], in["w3"], in["w2"], call.u, nullptr, nullptr, call.only));
  return out;
}

}  // namespace

namespace ops {

OracleOp rmsnorm() {
  return {.query_row_count = token_rows,
          .key_row_count = no_key_rows,
          .key_outputs = {},
          .units = row_units<UnitKind::norm_row>,
          .unit_scratch_elements = norm_scratch,
          .mpfi_unit_scratch_elements = norm_streamed_scratch,
          .reads = norm_reads,
          .streamed_at_mpfi = {"x", "w"},
          .first_pass = true,
          .apriori_bounds = rmsnorm_bounds};
}

OracleOp mlp_swiglu() {
  return {.query_row_count = token_rows,
          .key_row_count = no_key_rows,
          .key_outputs = {},
          .units = row_units<UnitKind::mlp_row>,
          .unit_scratch_elements = mlp_scratch,
          .reads = mlp_reads,
          .first_pass = true,
          .apriori_bounds = mlp_bounds,
          .bounds_widen_own_rows = true};
}

}  // namespace ops
}  // namespace moacert::oracle
