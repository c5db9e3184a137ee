// The property engine's one table of ops: each op's parts of generation
// (its dimensions at the small and the deployment scale, its parameters,
// its value families and those aimed at its regimes, the aims), of the
// curated cases, of the numerical regimes (those it declares and their
// classifier) and of the sample (its oracle work and row spaces). The
// entries live with their family (properties/ops/attention.cpp, rows.cpp,
// block.cpp); the table is built in one place (properties/ops/table.cpp).
// The generic plumbing reads the table: case_gen.cpp (RapidCheck), token.cpp
// (curated cases), regimes.cpp and sample.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string_view>
#include <utility>
#include <vector>

#include "properties/case_gen.hpp"
#include "properties/draws.hpp"  // EnvelopeAxis
#include "properties/regimes.hpp"
#include "properties/sample.hpp"  // RowSpace

namespace moacert::properties {

struct PropertyOp {
  // --- Generation (case_gen.cpp), in the order gen_case_spec draws ---
  // The dimensions at generation 1's small scale: every extent below about
  // `big` (40; f64: 24) but the straddles of `tiles`.
  std::function<void(Dims&, moa::extent_t big, const ShapeConstraints&,
                     const std::vector<moa::extent_t>& tiles)>
      draw_small_dims;
  // The dimensions of a deployment-scale case: past kLargeExtent along one
  // or two of the axes a kernel tiles, small along the others
  // (docs/performance.md#deployment-scale-cases).
  std::function<void(Dims&, const ShapeConstraints&, const std::vector<moa::extent_t>& small_tiles,
                     const std::vector<moa::extent_t>& large_tiles, int generation)>
      draw_large_dims;
  int large_one_in = 6;  // one in how many cases is deployment-scale (large_one_in)
  // The axes of its deployment envelope (docs/design.md#deployment-envelope)
  // that an envelope case draws long, one at a time (none: no envelope
  // cases).
  std::vector<EnvelopeAxis> envelope_axes;
  std::function<bool(const Dims&)> is_large;  // past kLargeExtent (decode: kLargeDecodeLength)
  std::function<void(Params&)> draw_params;   // the parameters drawn (causal, eps), if any
  // The families of generation 1, in the order they are drawn (uniform and
  // normal first); the curated cases take each at its extremes.
  std::vector<Values> families;
  // The families aimed at the op's numerical regimes, equally likely among
  // themselves, from generation `aimed_from` (and 3).
  std::vector<Values> regime_families;
  int aimed_from = 3;
  // The shape a regime's family needs, where --shape allows it.
  std::function<void(CaseSpec&, const ShapeConstraints&)> shape_for_regime;
  // The values of the index inputs (decode's lens), drawn after the shape.
  std::function<void(CaseSpec&, const GenSettings&)> draw_index_inputs;
  bool broadcasts = false;  // batch (and head) broadcast of its float inputs
  // The inputs a case does not draw but takes from the oracle's correctly
  // rounded attention.fwd of its q, k, v (attention.bwd's o and lse).
  std::vector<std::string_view> forward_inputs;
  // Aims the built case at its family (a regime's), where values alone,
  // drawn element by element, cannot.
  std::function<void(Case&, Values)> aim;
  std::function<void(const Problem&, std::ostream&)> describe_dims;  // " T=... D=..."

  // --- The curated cases (token.cpp's curated_specs) ---
  // The structural extreme of the k-th curated case (attention: rows with
  // no key, one query, tile straddles, MQA / GQA) near tile `tile`.
  std::function<void(CaseSpec&, std::uint64_t k, moa::extent_t tile)> curate;
  // What the op ties together again after --shape clamped each extent
  // (block's M = N, decode's lens within L).
  std::function<void(CaseSpec&)> retie;
  // Regime families curated first, at their regime's shape
  // (shape_for_regime), from the generation each is drawn from
  // (first_generation): a kernel that fails everywhere fails there first,
  // and its worst case found before shrinking shows how far it is off
  // (attention.fwd and decode: long flat rows).
  std::vector<Values> curated_first;

  // --- The numerical regimes (regimes.cpp) ---
  std::vector<Regime> regimes;  // declared, in the order certificates list them
  std::function<Regimes(const Case&, const FormatLimits&)> classify;

  // --- The sample (sample.cpp) ---
  std::function<double(const Problem&)> oracle_work;  // see oracle_work
  bool judged_whole = false;                          // every case whole (block)
  // The query and key row spaces of a problem as its shape gives them: the
  // runs, and the keys each row sees where the shape decides it (no norms:
  // those are data); then what the data add (the norms bounding the
  // logits, decode's keys seen from lens).
  std::function<std::pair<RowSpace, RowSpace>(const Problem&)> row_spaces;
  std::function<void(const Case&, RowSpace& query, RowSpace& key)> add_data;
  bool samples_key_rows = false;  // key rows are judged too (the backward's dk, dv)
};

// The entry of `op`.
const PropertyOp& property_op(Op op);

// The entries, one builder per family file (used by table.cpp alone).
PropertyOp attention_op(Op op);  // properties/ops/attention.cpp
PropertyOp rmsnorm_op();         // properties/ops/rows.cpp
PropertyOp swiglu_op();          // properties/ops/rows.cpp
PropertyOp block_op();           // properties/ops/block.cpp

// Traits read from an op's signature (reference/ops.hpp).
inline bool has_input(Op op, std::string_view name) {
  const auto& names = info(op).inputs;
  return std::find(names.begin(), names.end(), name) != names.end();
}
inline bool has_output(Op op, std::string_view name) {
  const auto& names = info(op).outputs;
  return std::find(names.begin(), names.end(), name) != names.end();
}
inline bool has_param(Op op, std::string_view name) {
  const auto& names = info(op).params;
  return std::find(names.begin(), names.end(), name) != names.end();
}
inline bool has_index_input(Op op) {
  const auto& elements = info(op).input_elements;
  return std::find(elements.begin(), elements.end(), Element::i64) != elements.end();
}

}  // namespace moacert::properties
