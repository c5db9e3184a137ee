// The draws of extents and head counts that the ops' generators
// (properties/ops/) share, defined with the rest of the RapidCheck plumbing
// in case_gen.cpp.
#pragma once

#include <functional>
#include <vector>

#include <rapidcheck.h>

#include "properties/case_gen.hpp"
#include "properties/shape_constraints.hpp"
#include "reference/problem.hpp"

namespace moacert::properties {

// An extent in `r`: mostly small (from r.lo, growing with RapidCheck's
// size), now and then r.lo, and now and then one of t-1, t, t+1 for a tile
// t of the kernels under test. Over every extent (r free) these are
// generation 1's draws.
rc::Gen<moa::extent_t> gen_extent(moa::extent_t max_small, const std::vector<moa::extent_t>& tiles,
                                  ExtentRange r = {});

// A deployment-scale extent in `r`, past `floor` and at most `limit`: t-1,
// t or t+1 for a tile t in [floor, limit) (the tiles given and the powers
// of two there), or any. Where `r` holds none, an extent of `r` as
// gen_extent draws it.
rc::Gen<moa::extent_t> gen_large(moa::extent_t floor, moa::extent_t limit,
                                 std::vector<moa::extent_t> tiles, ExtentRange r);

// The draw of a dimension: `free_draw` where --shape leaves it free (the
// draws of generation 1), else an extent of its range.
moa::extent_t draw_dim(const ShapeConstraints& shape, moa::extent_t Dims::*field,
                       const rc::Gen<moa::extent_t>& free_draw, moa::extent_t max_small,
                       const std::vector<moa::extent_t>& tiles);

// Head counts: MHA (H = Hkv), GQA (H a multiple of Hkv > 1) or MQA (Hkv = 1);
// under --shape, an Hkv of its range with a multiple in H's range, and one
// of the first such multiples.
void draw_heads(Dims& d, const ShapeConstraints& shape);

// At the deployment scale: one kv head and one or two query heads, unless
// --shape constrains the heads (then draw_heads).
void one_or_two_heads(Dims& d, const ShapeConstraints& shape);

// The two draws of a deployment-scale case's extents, each within --shape's
// range of its field: `large` past kLargeExtent up to `limit` (gen_large
// over the large tiles), `small` at most `max_small` (gen_extent over the
// small tiles).
struct LargeCaseDraws {
  const ShapeConstraints& shape;
  const std::vector<moa::extent_t>& small_tiles;
  const std::vector<moa::extent_t>& large_tiles;
  moa::extent_t large(moa::extent_t Dims::*field, moa::extent_t limit) const;
  moa::extent_t small(moa::extent_t Dims::*field, moa::extent_t max_small) const;
};

// One axis of an op's deployment envelope (docs/design.md#deployment-envelope):
// its field, its edge (the largest deployed extent) and its thresholds,
// the powers of two from `first_threshold` up to the edge. `group`: the
// axis is the query heads per kv head, drawn as H over Hkv = 1.
// `from_generation`: the first generation whose envelope cases draw it
// long (5; the token counts, rows, 8).
struct EnvelopeAxis {
  moa::extent_t Dims::*field;
  moa::extent_t edge;
  moa::extent_t first_threshold = kFirstEnvelopeThreshold;
  bool group = false;
  int from_generation = 5;
  // The other free extents' most: 4, but 2 beside a token count, whose
  // many rows each stay short so that the oracle's work stays about that
  // of the other axes' cases.
  moa::extent_t others_at_most = 4;
  // The thresholds t (powers of two, first_threshold <= t <= edge).
  std::vector<moa::extent_t> thresholds() const;
};

// The extents an envelope case draws along `axis` within `r`: half the
// time the edge, else t-1, t or t+1 for a threshold t, each shrinking
// towards r.lo as an integer does (so a counterexample shrinks to the
// threshold its fault starts past). Where `r` holds none of them, a small
// draw of `r`.
rc::Gen<moa::extent_t> gen_envelope_extent(const EnvelopeAxis& axis, ExtentRange r);

// An envelope case's dimensions: the op's small draw with every free axis
// at most 4, B = 1 and one or two heads over one kv head
// (one_or_two_heads), then one of `axes` that `generation` draws
// (EnvelopeAxis::from_generation) drawn long by gen_envelope_extent
// within --shape's (and the variant's) range, every other free extent
// then at most its others_at_most.
void draw_envelope_dims(Dims& d, const std::vector<EnvelopeAxis>& axes, int generation,
                        const ShapeConstraints& shape,
                        const std::function<void(Dims&, moa::extent_t, const ShapeConstraints&,
                                                 const std::vector<moa::extent_t>&)>& draw_small);

// The tiles straddled from generation 2: the declared ones with the common
// ones up to `up_to`, each once.
std::vector<moa::extent_t> with_common_tiles(std::vector<moa::extent_t> tiles, moa::extent_t up_to);

}  // namespace moacert::properties
