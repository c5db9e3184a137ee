#include "properties/shape_constraints.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>

namespace moacert::properties {

namespace {

// Dims' own names of kDimFields, in its order (decode calls M "L").
constexpr std::array<const char*, kDimFields.size()> kFieldNames = {"B", "H", "Hkv", "N", "M",
                                                                    "D", "T", "Dm",  "F"};

std::size_t index_of(moa::extent_t Dims::*field) {
  for (std::size_t k = 0; k < kDimFields.size(); ++k)
    if (kDimFields[k] == field) return k;
  throw std::logic_error("ShapeConstraints: not a field of Dims");
}

// "4096", "1..8192"; a kernel's values "{64,128}", its step "16..4096%16".
std::string range_text(const ExtentRange& r) {
  std::string out;
  if (!r.values.empty()) {
    for (moa::extent_t v : r.values) {
      out += out.empty() ? '{' : ',';
      out += std::to_string(v);
    }
    return out + '}';
  }
  out = std::to_string(r.lo);
  if (!r.fixed()) {
    out += "..";
    out += std::to_string(r.hi);
  }
  if (r.multiple != 1) {
    out += '%';
    out += std::to_string(r.multiple);
  }
  return out;
}

bool has_axis(Op op, moa::extent_t Dims::*field) {
  const auto axes = dims_of(op);
  return std::any_of(axes.begin(), axes.end(),
                     [&](std::string_view a) { return dim_field(a) == field; });
}

}  // namespace

moa::extent_t ExtentRange::clamp(moa::extent_t e) const {
  e = std::clamp(e, lo, hi);
  if (!values.empty()) {
    const auto above = std::lower_bound(values.begin(), values.end(), e);
    if (above == values.begin()) return values.front();
    if (above == values.end()) return values.back();
    return *above - e < e - *std::prev(above) ? *above : *std::prev(above);
  }
  if (multiple == 1 || e % multiple == 0) return e;
  const moa::extent_t below = e - e % multiple, above = below + multiple;
  // lo and hi are admitted, so these guards only keep a careless range inside.
  if (below < lo) return above;
  if (above > hi) return below;
  return above - e < e - below ? above : below;
}

ExtentRange ShapeConstraints::range(moa::extent_t Dims::*field) const {
  return ranges[index_of(field)].value_or(ExtentRange{});
}

void ShapeConstraints::set(moa::extent_t Dims::*field, ExtentRange r) {
  ranges[index_of(field)] = r;
}

bool ShapeConstraints::admits(const Dims& d) const {
  for (std::size_t k = 0; k < kDimFields.size(); ++k)
    if (ranges[k] && !ranges[k]->contains(d.*kDimFields[k])) return false;
  return true;
}

std::string ShapeConstraints::str(Op op) const {
  std::string out;
  for (std::string_view axis : dims_of(op)) {
    const auto& r = ranges[index_of(dim_field(axis))];
    if (!r) continue;
    if (!out.empty()) out += ',';
    out.append(axis);
    out += '=';
    out += range_text(*r);
  }
  return out;
}

namespace {

// The smallest extent both ranges admit; nullopt when none (a bounded
// search, as head_groups').
std::optional<moa::extent_t> common_extent(const ExtentRange& a, const ExtentRange& b) {
  const moa::extent_t first = std::max(a.lo, b.lo);
  const moa::extent_t last = std::min({a.hi, b.hi, first + (moa::extent_t{1} << 20)});
  for (moa::extent_t e = first; e <= last; ++e)
    if (a.contains(e) && b.contains(e)) return e;
  return std::nullopt;
}

}  // namespace

void ShapeConstraints::into_supported(Problem& p) const {
  const auto& params = info(p.op).params;
  if (std::find(params.begin(), params.end(), "causal") != params.end()) {
    if (!supported.causal) p.params.causal = false;
    if (!supported.non_causal) p.params.causal = true;
  }
  Dims& d = p.dims;
  if (supported.grouped_heads || !has_axis(p.op, &Dims::Hkv) || d.Hkv == d.H) return;
  const ExtentRange h = range(&Dims::H), hkv = range(&Dims::Hkv);
  if (hkv.contains(d.H)) {
    d.Hkv = d.H;
  } else if (h.contains(d.Hkv)) {
    d.H = d.Hkv;
  } else if (const auto e = common_extent(h, hkv)) {  // check() made sure of one
    d.H = d.Hkv = *e;
  }
}

ExtentRange ShapeConstraints::head_multiples(moa::extent_t hkv) const {
  const ExtentRange h = range(&Dims::H);
  return {h.lo / hkv + (h.lo % hkv != 0 ? 1 : 0), h.hi / hkv};
}

std::vector<moa::extent_t> ShapeConstraints::head_groups(std::size_t count) const {
  const ExtentRange h = range(&Dims::H), hkv = range(&Dims::Hkv);
  std::vector<moa::extent_t> out;
  if (h.lo < 1 || hkv.lo < 1) return out;
  // A bounded search: ranges of head counts that have a group have one
  // among their first 2^20 Hkv (1, or a divisor of a small H).
  const moa::extent_t last = std::min({hkv.hi, h.hi, hkv.lo + (moa::extent_t{1} << 20)});
  for (moa::extent_t g = hkv.lo; g <= last && out.size() < count; ++g) {
    const ExtentRange k = head_multiples(g);
    if (k.lo <= k.hi) out.push_back(g);
  }
  return out;
}

void ShapeConstraints::check(Op op) const {
  const std::string name(info(op).name);
  for (std::size_t k = 0; k < kDimFields.size(); ++k) {
    if (!ranges[k]) continue;
    if (!has_axis(op, kDimFields[k]))
      throw moa::ShapeError(name + " has no dimension " + kFieldNames[k]);
    if (ranges[k]->lo > ranges[k]->hi)
      throw moa::ShapeError(name + ": the range of " + kFieldNames[k] + " is empty (" +
                            std::to_string(ranges[k]->lo) + " > " + std::to_string(ranges[k]->hi) +
                            ")");
  }
  if (!supported.causal && !supported.non_causal)
    throw moa::ShapeError(name + ": neither causal nor non-causal masking is supported");
  // The smallest problem in the ranges: if it breaks the op's rules, every
  // problem does (validate refuses extents below 1 and sizes that overflow,
  // both monotone in the extents).
  Problem p{op, Format::f32, {}, {}};
  for (std::size_t k = 0; k < kDimFields.size(); ++k)
    if (ranges[k]) p.dims.*kDimFields[k] = ranges[k]->lo;
  if (has_axis(op, &Dims::Hkv) && p.dims.H >= 1 && p.dims.Hkv >= 1) {
    const auto groups = head_groups(1);
    const ExtentRange h = range(&Dims::H), hkv = range(&Dims::Hkv);
    if (groups.empty() && h.fixed() && hkv.fixed())
      throw moa::ShapeError(name + ": H (" + range_text(h) + ") is not a multiple of Hkv (" +
                            range_text(hkv) + ")");
    if (groups.empty())
      throw moa::ShapeError(name + ": no H in " + range_text(h) + " is a multiple of an Hkv in " +
                            range_text(hkv));
    p.dims.Hkv = groups.front();
    p.dims.H = head_multiples(p.dims.Hkv).lo * p.dims.Hkv;
    if (!supported.grouped_heads) {
      const auto e = common_extent(h, hkv);
      if (!e)
        throw moa::ShapeError(name + ": no H in " + range_text(h) + " is also an Hkv in " +
                              range_text(hkv) + " (the kernel supports no GQA/MQA)");
      p.dims.H = p.dims.Hkv = *e;
    }
  }
  if (op == Op::attention_decode) p.dims.N = 1;
  if (op == Op::block) p.dims.M = p.dims.N;
  validate(p);
}

}  // namespace moacert::properties
