// A variant's envelope as shape constraints (within_variant, certify.hpp):
// the axes it narrows joined with --shape's ranges, and the options it
// refuses, so that every case certify, reproduce and bench draw lies
// inside it; and what it thereby excludes (excluded_by).
#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "properties/case_gen.hpp"
#include "properties/certify.hpp"
#include "properties/ops/table.hpp"
#include "properties/regimes.hpp"

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
  const ShapeConstraints asked_shape = shape;  // --shape's own
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
  // Its reach: each axis --shape leaves free drawn within it; --shape
  // reaches past it (the kernel supports it, a case there is slow).
  for (const auto& [axis, allowed] : v.reach.axes) {
    const auto field = dim_field(axis);
    if (!field || asked_shape.constrained(field)) continue;
    if (const std::optional<ExtentRange> r = narrowed(shape.range(field), allowed))
      shape.set(field, *r);
  }
  // Its options: drawn problems take only those it supports.
  shape.supported = {v.envelope.causal, v.envelope.non_causal, v.envelope.grouped_heads};
  if (!shape.supported.all()) shape.check(v.op);
  return shape;
}

namespace {

// The largest extent the envelope admits along `axis` (nullopt: free).
std::optional<moa::extent_t> highest(const kernels::Envelope& e, std::string_view axis) {
  for (const auto& [name, allowed] : e.axes)
    if (name == axis) return allowed.values.empty() ? allowed.hi : allowed.values.back();
  return std::nullopt;
}
std::optional<moa::extent_t> lowest(const kernels::Envelope& e, std::string_view axis) {
  for (const auto& [name, allowed] : e.axes)
    if (name == axis) return allowed.values.empty() ? allowed.lo : allowed.values.front();
  return std::nullopt;
}

// Why no problem inside `e` reaches regime `r` of `op`, or "": the extents
// and options each regime needs at the least (properties/regimes.hpp), so
// that a regime named here is surely out of reach.
std::string why_unreachable(Op op, Regime r, const kernels::Envelope& e) {
  // The axis of the keys a query row sees: decode's cache, block's own
  // sequence (M = N), attention's keys.
  const std::string keys = op == Op::block ? "N" : has_index_input(op) ? "L" : "M";
  const std::optional<moa::extent_t> most_keys = highest(e, keys);
  auto at_most = [](const std::string& axis, moa::extent_t hi) {
    return axis + " is at most " + std::to_string(hi);
  };
  switch (r) {
    case Regime::no_key_row: {
      if (has_param(op, "causal") && !e.causal)
        return "needs causal masking, which the envelope refuses";
      const std::optional<moa::extent_t> most_queries = highest(e, "N"),
                                         fewest_keys = lowest(e, keys);
      if (most_queries && fewest_keys && *most_queries <= *fewest_keys)
        return "needs more queries than keys (N > " + keys + "); N is at most " +
               std::to_string(*most_queries) + ", " + keys + " at least " +
               std::to_string(*fewest_keys);
      return "";
    }
    case Regime::underflowing_tile:
      if (most_keys && *most_keys < kUnderflowTile)
        return "needs a whole tile of " + std::to_string(kUnderflowTile) + " keys; " +
               at_most(keys, *most_keys);
      return "";
    case Regime::tie:
    case Regime::dominant_key:
      if (most_keys && *most_keys < 2) return "needs two keys; " + at_most(keys, *most_keys);
      return "";
    case Regime::cancellation:
      if (const auto width = highest(e, "Dm"); width && *width < 2)
        return "needs a sum of two products; " + at_most("Dm", *width);
      return "";
    case Regime::down_cancellation:
      if (const auto width = highest(e, "F"); width && *width < 2)
        return "needs a sum of two products; " + at_most("F", *width);
      return "";
    default:  // a regime of the values alone
      return "";
  }
}

}  // namespace

EnvelopeExclusions excluded_by(Op op, const kernels::Envelope& e) {
  EnvelopeExclusions out;
  for (Regime r : declared_regimes(op))
    if (std::string why = why_unreachable(op, r, e); !why.empty())
      out.regimes.push_back({std::string(name(r)), std::move(why)});
  // The op's deployment envelope (docs/design.md#deployment-envelope): each
  // of its axes whose edge the envelope keeps out of reach, with the
  // thresholds no case can cross.
  for (const EnvelopeAxis& a : property_op(op).envelope_axes) {
    std::string axis;
    std::optional<moa::extent_t> most;
    if (a.group) {
      axis = "H/Hkv";
      if (!e.grouped_heads)
        most = 1;
      else
        most = highest(e, "H");
    } else {
      for (std::string_view n : dims_of(op))
        if (dim_field(n) == a.field) axis = std::string(n);
      most = highest(e, axis);
    }
    if (!most || *most >= a.edge) continue;
    std::string beyond;
    for (moa::extent_t t : a.thresholds())
      if (t >= *most)  // crossing t needs an extent past it
        beyond += (beyond.empty() ? "" : ", ") + std::to_string(t);
    out.deployment_scale.push_back(
        {axis,
         "at most " + std::to_string(*most) + "; the deployment envelope reaches " +
             std::to_string(a.edge) +
             (beyond.empty() ? std::string() : " (thresholds out of reach: " + beyond + ")")});
  }
  // The other axes: deployment scale as the generator has it (is_large):
  // an axis is one of its axes when some extent along it makes a problem
  // large, and the envelope excludes it when its largest extent does not.
  auto named = [&out](const std::string& axis) {
    return std::any_of(out.deployment_scale.begin(), out.deployment_scale.end(),
                       [&](const EnvelopeExclusion& x) { return x.what == axis; });
  };
  for (const auto& [axis, allowed] : e.axes) {
    const auto field = dim_field(axis);
    if (!field || named(axis)) continue;
    Problem p;  // every other extent 1
    p.op = op;
    auto large_at = [&](moa::extent_t x) {
      p.dims.*field = x;
      return is_large(p);
    };
    constexpr moa::extent_t huge = moa::extent_t(1) << 40;
    const moa::extent_t most = *highest(e, axis);
    if (!large_at(huge) || large_at(most)) continue;
    moa::extent_t lo = most, hi = huge;  // the smallest large extent, in (lo, hi]
    while (hi - lo > 1) {
      const moa::extent_t mid = lo + (hi - lo) / 2;
      (large_at(mid) ? hi : lo) = mid;
    }
    out.deployment_scale.push_back(
        {axis,
         "at most " + std::to_string(most) + "; deployment scale starts at " + std::to_string(hi)});
  }
  return out;
}

std::vector<EnvelopeExclusion> excluded_by_reach(const kernels::Variant& v) {
  if (v.reach.unlimited()) return {};
  std::vector<EnvelopeExclusion> out = excluded_by(v.op, v.reach).deployment_scale;
  for (EnvelopeExclusion& x : out) x.why += "; drawn so by moacert, not declared: " + v.reach_why;
  return out;
}

}  // namespace moacert::properties
