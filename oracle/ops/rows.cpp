// The row ops' rows of the oracle's op table (oracle/ops/table.hpp):
// rmsnorm and mlp.swiglu, ops on independent rows t of x. A row is a query
// row and one unit, which reads its row of x and every weight whole; the
// bounds are docs/bounds.md#rmsnorm and #swiglu-mlp.
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"
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

// Row t of x, then every weight whole.
std::vector<Read> reads(const Problem& p, const Unit& u) {
  const moa::extent_t width = input_shapes(p)[input_position(p.op, "x")][1];  // x: (T, width)
  return detail::rows_of_x_and_every_weight(p, {u.a, 0}, {1, width});
}

// The most scratch one row's DNF call holds: rmsnorm 2·D; mlp.swiglu its
// hidden layer, 3·F + Dm.
double norm_scratch(const Problem& p, const Unit&) {
  return 2.0 * double(p.dims.D);
}
double mlp_scratch(const Problem& p, const Unit&) {
  return 3.0 * double(p.dims.F) + double(p.dims.Dm);
}

Bounds rmsnorm_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const auto x = inputs_by_name(p.op, call.widened);
  Bounds out(info(p.op).outputs.size());
  outputs_by_name(p.op, out)["y"] =
      rav(detail::rmsnorm_bounds(x["x"], x["w"], p.params.eps, call.u, nullptr));
  return out;
}

// The selected rows only (call.only).
Bounds mlp_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const auto x = inputs_by_name(p.op, call.widened);
  Bounds out(info(p.op).outputs.size());
  outputs_by_name(p.op, out)["y"] = rav(
      detail::mlp_bounds(x["x"], x["w1"], x["w3"], x["w2"], call.u, nullptr, nullptr, call.only));
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
          .reads = reads,
          .first_pass = true,
          .apriori_bounds = rmsnorm_bounds};
}

OracleOp mlp_swiglu() {
  return {.query_row_count = token_rows,
          .key_row_count = no_key_rows,
          .key_outputs = {},
          .units = row_units<UnitKind::mlp_row>,
          .unit_scratch_elements = mlp_scratch,
          .reads = reads,
          .first_pass = true,
          .apriori_bounds = mlp_bounds};
}

}  // namespace ops
}  // namespace moacert::oracle
