#include "properties/spec_shrinks.hpp"

#include <numeric>

#include "properties/ops/table.hpp"

namespace moacert::properties {

using moa::extent_t;

namespace {

// The sum of the op's extents: every shrink lowers it, so shrinking ends.
extent_t extent_sum(const Problem& p) {
  extent_t sum = 0;
  for (std::string_view axis : dims_of(p.op)) sum += p.dims.*dim_field(axis);
  return sum;
}

// Each input's layout made again by its kind, for the shapes of the spec's
// problem (as curated_specs makes them).
void remake_layouts(CaseSpec& s) {
  s.layouts.clear();
  const auto shapes = input_shapes(s.problem);
  for (std::size_t i = 0; i < shapes.size(); ++i)
    s.layouts.push_back(moa::make_layout(s.kinds[i], shapes[i]));
}

// `s` with its extents changed, made a case certify could draw: the op's
// ties (decode's lens, block's M = N), the kernel's supported options, the
// constraints, the op's own rules. False when it cannot be.
bool into_drawable(CaseSpec& s, const ShapeConstraints& shape) {
  if (const auto& retie = property_op(s.problem.op).retie) retie(s);
  shape.into_supported(s.problem);
  if (!shape.admits(s.problem.dims)) return false;
  try {
    validate(s.problem);
  } catch (const moa::ShapeError&) {
    return false;
  }
  remake_layouts(s);
  return true;
}

std::vector<CaseSpec> shrinks_of(const CaseSpec& s, const ShapeConstraints& shape) {
  std::vector<CaseSpec> out;
  const extent_t size = extent_sum(s.problem);
  for (std::string_view axis : dims_of(s.problem.op)) {
    extent_t Dims::*field = dim_field(axis);
    const ExtentRange range = shape.range(field);
    auto towards = rc::shrink::towards<extent_t>(s.problem.dims.*field, range.lo);
    while (const auto e = towards.next()) {
      CaseSpec c = s;
      c.problem.dims.*field = range.discrete() ? range.clamp(*e) : *e;
      if (into_drawable(c, shape) && extent_sum(c.problem) < size) out.push_back(std::move(c));
    }
  }
  for (std::size_t i = 0; i < s.kinds.size(); ++i) {
    if (s.kinds[i] == moa::LayoutKind::row_major) continue;
    CaseSpec c = s;
    c.kinds[i] = moa::LayoutKind::row_major;
    remake_layouts(c);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

rc::Shrinkable<CaseSpec> shrinkable_spec(const CaseSpec& spec, const ShapeConstraints& shape) {
  return rc::shrinkable::shrinkRecur(
      spec, [shape](const CaseSpec& s) { return rc::seq::fromContainer(shrinks_of(s, shape)); });
}

}  // namespace moacert::properties
