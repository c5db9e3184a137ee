// The oracle's op table: what the oracle knows of each op, one row per op.
// Its rows are written in oracle/ops/<family>.cpp (attention.cpp: fwd, bwd,
// fwdbwd, decode; rows.cpp: rmsnorm, mlp.swiglu; block.cpp) and gathered in
// table.cpp, the one place in oracle/ that switches on the op. The generic
// code reaches an op's parts through oracle_op(op): the units of an
// evaluation (detail/units.hpp), the rows of a selection (selection.hpp)
// and the a priori bounds (bounds.hpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"
#include "oracle/selection.hpp"
#include "reference/case.hpp"

namespace moacert::oracle {

namespace detail {

// The kinds of units (detail/units.hpp): independent slices of a case on
// which the DNF is called unchanged.
enum class UnitKind : std::uint8_t {
  fwd_row,
  bwd_group,
  bwd_query_row,  // sampled: dq[b,h,i,:]
  bwd_key_rows,   // sampled: dk, dv rows `keys` of (b, g)
  decode_head,
  norm_row,  // rmsnorm's row t
  mlp_row,   // mlp.swiglu's row t
  batch
};

struct Unit {
  UnitKind kind;
  moa::extent_t a = 0, b = 0, c = 0;  // (b, h, i) for fwd_row; (b, g) for bwd_group; ...
  std::vector<moa::extent_t> keys;    // bwd_key_rows: the key rows j, ascending
};

// What a unit reads of one (non-index) input: the sub-array at `start` of
// extents `extent`. Every read is a run of whole consecutive rows of the
// input (a row: the elements that share every index but the last), which
// is what lets Inputs convert only the rows some unit reads and still hand
// each unit a strided view.
struct Read {
  int input;  // its position in the signature (input_position(op, name))
  moa::Index start;
  moa::Shape extent;
};

// Which of a unit's reads a pass converts into its enclosure type: every
// one (the first pass, the double-double pass), or the MPFI pass's, which
// leaves out the inputs its op streams from the case
// (OracleOp::streamed_at_mpfi).
enum class Conversion : std::uint8_t { every_read, mpfi };

// The key row count of the ops that have none.
inline moa::extent_t no_key_rows(const Problem&) {
  return 0;
}

}  // namespace detail

struct OracleOp {
  // How many query (key) rows a problem has (selection.hpp); ops without
  // key rows answer 0.
  moa::extent_t (*query_row_count)(const Problem&);
  moa::extent_t (*key_row_count)(const Problem&);
  // The outputs indexed by key rows (dk, dv); the others by query rows.
  std::vector<std::string_view> key_outputs;

  // The units that hold the selected rows (every unit without a selection),
  // the most scratch one unit's DNF call holds (in enclosure elements), and
  // the reads of one unit, one per input its DNF call takes.
  std::vector<detail::Unit> (*units)(const Problem&, const Selection*);
  double (*unit_scratch_elements)(const Problem&, const detail::Unit&);
  // The same at the MPFI pass, where it differs (null: it does not):
  // attention's and rmsnorm's units hold the blocks of the rows they
  // stream.
  double (*mpfi_unit_scratch_elements)(const Problem&, const detail::Unit&) = nullptr;
  std::vector<detail::Read> (*reads)(const Problem&, const detail::Unit&);
  // The inputs whose rows the MPFI pass reads from the case a block at a
  // time instead of converting them (Conversion::mpfi): attention's
  // (detail/streamed_attention.hpp) and rmsnorm's (detail/streamed_norm.hpp).
  // Converted at 64 bits, a decode kv head's cache at L = 131072 was 4 GiB
  // of MPFI, four times the case's own K and V.
  std::vector<std::string_view> streamed_at_mpfi;
  // Whether the first pass (doubles or double-doubles) may run the op's
  // units: block's DNF computes its attention scale inside the template,
  // which under round-upward would be another double (detail/passes.hpp).
  bool first_pass = true;

  // The a priori bounds of docs/bounds.md, per output in the signature's
  // order (bounds.hpp).
  std::vector<std::vector<double>> (*apriori_bounds)(const detail::BoundCall&);
  // Its apriori_bounds widens the rows it reads itself (BoundCall::widened
  // empty): decode, one kv head's cache at a time, where the whole cache in
  // doubles is 2 GiB at L = 131072; mlp.swiglu, its weights a piece of a
  // row at a time, where they are 21 GB of doubles at Dm = 16384,
  // F = 53248.
  bool bounds_widen_own_rows = false;
};

// The table's row of `op`.
const OracleOp& oracle_op(Op op);

// The rows, one per op, each defined in its family's file; table.cpp
// alone calls them.
namespace ops {
OracleOp attention_fwd();
OracleOp attention_bwd();
OracleOp attention_fwdbwd();
OracleOp attention_decode();
OracleOp rmsnorm();
OracleOp mlp_swiglu();
OracleOp block();
}  // namespace ops

}  // namespace moacert::oracle
