// The draws of extents and head counts that the ops' generators
// (properties/ops/) share, defined with the rest of the RapidCheck plumbing
// in case_gen.cpp.
#pragma once

#include <vector>

#include <rapidcheck.h>

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

// The tiles straddled from generation 2: the declared ones with the common
// ones up to `up_to`, each once.
std::vector<moa::extent_t> with_common_tiles(std::vector<moa::extent_t> tiles, moa::extent_t up_to);

}  // namespace moacert::properties
