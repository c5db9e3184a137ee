// A variant's envelope as shape constraints (within_variant, certify.hpp):
// the axes it narrows joined with --shape's ranges, and the options it
// refuses, so that every case certify, reproduce and bench draw lies
// inside it.
#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "properties/certify.hpp"

namespace moacert::properties {

namespace {

// `r` (--shape's range) narrowed to what `allowed` (a kernel's envelope of
// the axis) admits, with admitted extents as its bounds; nullopt when
// nothing is left.
std::optional<ExtentRange> narrowed(ExtentRange r, const kernels::AxisEnvelope& allowed) {
  r.lo = std::max(r.lo, allowed.lo);
  r.hi = std::min(r.hi, allowed.hi);
  r.multiple = std::lcm(r.multiple, allowed.multiple);
  if (!allowed.values.empty()) {
    std::vector<moa::extent_t> kept;
    const std::vector<moa::extent_t>& from = r.values.empty() ? allowed.values : r.values;
    for (moa::extent_t e : from)
      if (allowed.admits(e) && r.contains(e)) kept.push_back(e);
    r.values = std::move(kept);
    if (r.values.empty()) return std::nullopt;
  }
  if (r.lo > r.hi) return std::nullopt;
  if (!r.values.empty()) {
    r.lo = r.values.front();
    r.hi = r.values.back();
    if (r.values.size() == 1) {  // fixed
      r.values.clear();
      r.multiple = 1;
    }
    return r;
  }
  const moa::extent_t m = r.multiple;
  const moa::extent_t lo = r.lo % m == 0 ? r.lo : r.lo + (m - r.lo % m), hi = r.hi - r.hi % m;
  if (lo > hi) return std::nullopt;
  r.lo = lo;
  r.hi = hi;
  if (lo == hi) r.multiple = 1;  // fixed
  return r;
}

}  // namespace

ShapeConstraints within_variant(ShapeConstraints shape, const kernels::Variant& v) {
  // The kernel's envelope (plugin ABI 2, a built-in variant's compiled
  // maxima): each axis it narrows, as --shape would; a --shape outside it
  // is bad input.
  for (const auto& [axis, allowed] : v.envelope.axes) {
    if (allowed == kernels::AxisEnvelope{}) continue;
    const auto field = dim_field(axis);
    const ExtentRange asked = shape.range(field);
    const std::optional<ExtentRange> r = narrowed(asked, allowed);
    if (!r) {
      const std::string given = asked.lo == asked.hi
                                    ? std::to_string(asked.lo)
                                    : std::to_string(asked.lo) + ".." + std::to_string(asked.hi);
      throw std::invalid_argument(v.name + " supports " + axis + " in " + allowed.str() +
                                  " (its envelope); --shape asks " + axis + "=" + given);
    }
    shape.set(field, *r);
  }
  // Its options: drawn problems take only those it supports.
  shape.supported = {v.envelope.causal, v.envelope.non_causal, v.envelope.grouped_heads};
  if (!shape.supported.all()) shape.check(v.op);
  return shape;
}

}  // namespace moacert::properties
