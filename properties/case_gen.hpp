// Generators of cases: problems (shapes, GQA/MQA head counts, N and M
// independent, odd D, extents that straddle every tile a registered kernel
// uses, ragged decode lens), input layouts (row-major, column-major,
// permuted, padded, broadcast) and value families (uniform, normal, large
// logits, ties, one dominant key, tiny scale, extreme magnitudes, causal rows
// with no key). A CaseSpec is small and shrinkable; `build_case` turns it
// into the exact input tensors, the same bits on every machine.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "properties/shape_constraints.hpp"
#include "reference/case.hpp"
#include "reference/moa/layout_kind.hpp"

namespace moacert::properties {

enum class Values {
  uniform,       // U[-1, 1]
  normal,        // approximately N(0, 1) (Irwin-Hall, exact in double)
  large_logits,  // q and k scaled so that scores reach ±100 and beyond
  ties,          // every key equal: all scores of a row tie
  dominant,      // one key whose score dominates the row
  tiny_scale,    // a scale of 2^-20: nearly uniform softmax
  extreme,       // subnormal and huge magnitudes within the format
  // From generation 3, families aimed at the numerical regimes
  // (properties/regimes.hpp), each past its threshold in the case's format:
  exp_overflow,       // attention: scores around 2 ln(max finite), exp(S) overflows
  underflowing_tile,  // attention: key 0 above the rest by more than -ln(min subnormal / 2)
  no_key_rows,        // attention: causal with N > M
  one_hot,            // attention: one key above the rest by ln M + (p + 4) ln 2: softmax ~ one-hot
  silu_range,         // mlp.swiglu: W1 columns whose gate arguments pass exp's thresholds, or ~ 0
  cancellation,       // mlp.swiglu: (x W1)_00 and (x W3)_00 cancel to about u of their terms
  rms_range,          // rmsnorm: rows whose sum of squares overflows, underflows, or is below eps
  // From generation 6 (attention.fwd and decode; curated first, at
  // kFlatRowKeys):
  flat_rows,  // attention: q ~ 2^-10, so that every score of a long row is near 0, and v of one
              // sign
  // From generation 7 (mlp.swiglu):
  down_cancellation,  // mlp.swiglu: h's columns paired (h_tf' = -3 h_tf) and W2's rows f' =
                      // fl(W2_f / 3): each pair's products cancel to about u
  // Block (generation 4) draws exp_overflow, underflowing_tile, ties,
  // rms_range, silu_range and cancellation, aimed at its attention's
  // logits, its RMSNorms' rows and its MLP's gates (properties/ops/block.cpp,
  // aim_block).
};
const char* name(Values v);

struct CaseSpec {
  Problem problem;
  std::vector<moa::LayoutKind> kinds;  // per input: the constructor of its layout
  std::vector<moa::Layout> layouts;    // per input, made by that constructor
  std::vector<std::int64_t> lens;      // decode only
  Values values = Values::uniform;
  std::uint64_t seed = 0;  // the values' stream
  // Drawn at the deployment envelope (generation 5, one case in
  // kEnvelopeOneIn): one long axis, the others small.
  bool envelope = false;
};

void showValue(const CaseSpec& s, std::ostream& os);
std::string describe(const CaseSpec& s);

// The generation of the generators. 1 is that of version-1 tokens: small
// cases that straddle the variant's declared tiles only. 2 adds a share of
// deployment-scale cases and straddles of the common tile and split sizes
// (docs/design.md#certify). 3 adds the value families aimed at the
// numerical regimes (docs/design.md#numerical-regimes) and draws
// attention.fwd's long-only axis up to 2049, past the 1024 tile. 4 aims
// block's cases at its regimes too (every other op draws as in 3). 5 draws
// one random case in kEnvelopeOneIn at the deployment envelope
// (docs/design.md#deployment-envelope). 6 aims attention.fwd's and
// decode's cases at long flat rows (Values::flat_rows), and curates one
// such case first, at kFlatRowKeys. 7 aims mlp.swiglu's cases at a
// down projection that cancels (Values::down_cancellation); every other op
// draws as in 6. 8 adds the token counts to the envelope axes: rmsnorm's
// and mlp.swiglu's rows T, to kTokenEdge. A token names its generation,
// so that a case comes back as it was drawn.
inline constexpr int kGeneration = 8;

// The edge of the token-count envelope axes (from generation 8): the
// rows a deployed prefill reaches, one whole 128k-token prompt of Llama
// 3.1 (docs/design.md#deployment-envelope).
inline constexpr moa::extent_t kTokenEdge = moa::extent_t(1) << 17;

// The keys of a flat-rows case (Values::flat_rows): twice the 2^11 past
// which a running f16 sum of weights near 1 stops growing
// (properties/regimes.hpp, kFlatRowWeight), so that such a sum is half
// the exact one.
inline constexpr moa::extent_t kFlatRowKeys = 4096;

// The first generation that draws `v`: flat rows from 6, the down
// projection's cancellation from 7, the other regime families from 3
// (PropertyOp::aimed_from too).
inline int first_generation(Values v) {
  return v == Values::flat_rows ? 6 : v == Values::down_cancellation ? 7 : 3;
}

// The tile and split sizes kernels commonly use: from generation 2 every
// variant's cases straddle them (t-1, t, t+1), declared or not, so that a
// plugin's tails are reached although its tiles are unknown.
inline constexpr std::array<moa::extent_t, 7> kCommonTiles = {16, 32, 64, 128, 256, 512, 1024};

// The key tile of the underflowing-tile regime (properties/regimes.hpp):
// the smallest common tile, since a larger tile that underflows holds one.
inline constexpr moa::extent_t kUnderflowTile = kCommonTiles.front();

// The extents past which a case counts as deployment-scale: 256 (decode's
// cache length: 4096).
inline constexpr moa::extent_t kLargeExtent = 256, kLargeDecodeLength = 4096;

// From generation 5, one random case in kEnvelopeOneIn is an envelope
// case: one long axis at the edge of the op's deployment envelope or on
// either side of one of its thresholds, the others small
// (docs/design.md#generated-cases).
inline constexpr int kEnvelopeOneIn = 6;

// The first threshold of a long envelope axis: below it the common tiles
// already straddle every power of two (kCommonTiles).
inline constexpr moa::extent_t kFirstEnvelopeThreshold = 1024;

// From generation 3, one random case in kRegimeOneIn draws its values from
// a family aimed at one of the op's numerical regimes
// (docs/design.md#generated-cases).
inline constexpr int kRegimeOneIn = 4;

// What the generator draws from, beyond the op and the format.
struct GenSettings {
  std::vector<moa::extent_t> tiles;  // the variants' declared tiles: N, M, D... straddle each
  ShapeConstraints shape;            // certify --shape: every extent drawn inside its range
  int generation = kGeneration;
  bool strided = true;  // false keeps every input row-major
};

// A generator of specs for `op` in `format` under `settings`.
rc::Gen<CaseSpec> gen_case_spec(Op op, Format format, const GenSettings& settings);
// The property suite's cases (prop_ops and the kernel tests): generation
// 1's small ones, without constraints, so that its tests take seconds.
rc::Gen<CaseSpec> gen_case_spec(Op op, Format format, const std::vector<moa::extent_t>& tiles,
                                bool strided = true);

// One in how many generated cases of `op` is deployment-scale (generation
// 2, without --shape): 6, but 10 for the backward ops, whose large cases
// cost the most (docs/performance.md#deployment-scale-cases).
int large_one_in(Op op);

// True for a deployment-scale problem: an extent past kLargeExtent (decode:
// a cache length past kLargeDecodeLength).
bool is_large(const Problem& p);

// The same problem and values in other layouts (for layout invariance).
rc::Gen<std::vector<moa::Layout>> gen_layouts(const CaseSpec& spec);

// The oracle's forward, used for attention.bwd's o and lse inputs (the
// oracle's correctly rounded values, docs/design.md).
using ForwardFn = std::function<std::vector<AnyTensor>(const Case& fwd_case)>;

// The case's exact inputs. Values come from a fixed integer stream of the
// seed and exact double arithmetic, then are correctly rounded to the
// format: the same bits on every machine.
Case build_case(const CaseSpec& spec, const ForwardFn& forward = {});

// The tensors of `c` relaid into `layouts` (values unchanged).
Case relayout(const Case& c, const std::vector<moa::Layout>& layouts);

}  // namespace moacert::properties
