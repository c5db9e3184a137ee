// The shrinks of a case no generator drew: a curated case (curated_specs)
// is pinned after its draw, so RapidCheck's shrink tree does not reach it.
// A failing curated case shrinks through this tree instead, and a token's
// path walks it back (spec_of), as a random case's path walks RapidCheck's.
#pragma once

#include <rapidcheck.h>

#include "properties/case_gen.hpp"
#include "properties/shape_constraints.hpp"

namespace moacert::properties {

// `spec` with its shrinks: each extent of the op towards the smallest its
// range in `shape` admits (as rc::shrink::towards orders them: the
// smallest first), then each input's layout to row-major. Every shrink is
// a case certify could have drawn under `shape` (the op's ties retied,
// into_supported, validate) and is strictly smaller, so the tree is finite.
// @post the shrinks of a spec are the same on every machine and in every
// version that keeps this tree (a token's path indexes them).
rc::Shrinkable<CaseSpec> shrinkable_spec(const CaseSpec& spec, const ShapeConstraints& shape);

}  // namespace moacert::properties
