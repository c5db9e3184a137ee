// Generators of cases: problems (shapes, GQA/MQA head counts, N and M
// independent, odd D, extents that straddle every tile a registered kernel
// uses, ragged decode lens), input layouts (row-major, column-major,
// permuted, padded, broadcast) and value families (uniform, normal, large
// logits, ties, one dominant key, tiny scale, extreme magnitudes, causal rows
// with no key). A CaseSpec is small and shrinkable; `build_case` turns it
// into the exact input tensors, the same bits on every machine.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <rapidcheck.h>

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
};
const char* name(Values v);

struct CaseSpec {
  Problem problem;
  std::vector<moa::LayoutKind> kinds;  // per input: the constructor of its layout
  std::vector<moa::Layout> layouts;    // per input, made by that constructor
  std::vector<std::int64_t> lens;      // decode only
  Values values = Values::uniform;
  std::uint64_t seed = 0;  // the values' stream
};

void showValue(const CaseSpec& s, std::ostream& os);
std::string describe(const CaseSpec& s);

// A generator of specs for `op` in `format`. `tiles` are the tile extents of
// the variants under test: N, M and D straddle each (t-1, t, t+1) now and
// then. `strided` false keeps every input row-major.
rc::Gen<CaseSpec> gen_case_spec(Op op, Format format, const std::vector<moa::extent_t>& tiles,
                                bool strided = true);

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
