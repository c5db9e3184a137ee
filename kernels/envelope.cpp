#include "kernels/envelope.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace moacert::kernels {

bool AxisEnvelope::admits(moa::extent_t e) const {
  if (e < lo || e > hi || e % multiple != 0) return false;
  return values.empty() || std::binary_search(values.begin(), values.end(), e);
}

std::vector<moa::extent_t> AxisEnvelope::smallest(std::size_t count) const {
  std::vector<moa::extent_t> out;
  if (!values.empty()) {
    for (moa::extent_t v : values)
      if (out.size() < count && admits(v)) out.push_back(v);
    return out;
  }
  if (multiple < 1 || lo > hi) return out;
  // The first multiple of the step at or above lo, then every step.
  moa::extent_t e = lo % multiple == 0 ? lo : lo + (multiple - lo % multiple);
  while (out.size() < count && e >= lo && e <= hi) {
    out.push_back(e);
    if (__builtin_add_overflow(e, multiple, &e)) break;
  }
  return out;
}

std::string AxisEnvelope::str() const {
  const bool bounded = lo != 1 || hi != std::numeric_limits<moa::extent_t>::max();
  std::string s;
  if (!values.empty())
    s = fmt::format("{{{}}}", fmt::join(values, ", "));
  else if (bounded)
    s = hi == std::numeric_limits<moa::extent_t>::max() ? fmt::format(">= {}", lo)
                                                        : fmt::format("{}..{}", lo, hi);
  if (multiple != 1) s += fmt::format("{}% {}", s.empty() ? "" : ", ", multiple);
  return s.empty() ? "any" : s;
}

std::string_view name(Device d) {
  return d == Device::cuda ? "cuda" : "cpu";
}

bool Envelope::unlimited() const {
  return std::all_of(axes.begin(), axes.end(),
                     [](const auto& a) { return a.second == AxisEnvelope{}; }) &&
         causal && non_causal && grouped_heads;
}

namespace {

// Causal masking is a choice of attention.fwd, bwd and fwdbwd only: the
// block is always causal, decode and the row ops have no mask.
bool masking_chosen(Op op) {
  return op == Op::attention_fwd || op == Op::attention_bwd || op == Op::attention_fwdbwd;
}

bool has_heads(Op op) {
  const auto dims = dims_of(op);
  return std::find(dims.begin(), dims.end(), "Hkv") != dims.end();
}

}  // namespace

std::string Envelope::why_outside(const Problem& p) const {
  for (const auto& [axis, allowed] : axes) {
    const moa::extent_t e = p.dims.*dim_field(axis);
    if (!allowed.admits(e)) return fmt::format("{} = {} is not in {}", axis, e, allowed.str());
  }
  if (masking_chosen(p.op) && p.params.causal && !causal) return "causal masking is not supported";
  if (masking_chosen(p.op) && !p.params.causal && !non_causal)
    return "attention without causal masking is not supported";
  if (p.op == Op::block && !causal) return "causal masking is not supported";
  if (has_heads(p.op) && p.dims.Hkv < p.dims.H && !grouped_heads)
    return fmt::format("grouped heads (H = {}, Hkv = {}) are not supported", p.dims.H, p.dims.Hkv);
  return "";
}

void Envelope::check(Op op, const std::string& kernel) const {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument(fmt::format("{}: envelope {}: {}", kernel, field, why));
  };
  const auto dims = dims_of(op);
  for (auto a = axes.begin(); a != axes.end(); ++a) {
    const auto& [axis, allowed] = *a;
    if (std::any_of(axes.begin(), a, [&](const auto& earlier) { return earlier.first == axis; }))
      fail(axis, "named twice");
    if (std::find(dims.begin(), dims.end(), axis) == dims.end())
      fail(axis, fmt::format("{} has no dimension {} (its dimensions: {})", info(op).name, axis,
                             fmt::join(dims, " ")));
    if (allowed.lo < 1) fail(axis, fmt::format("min {} is below 1", allowed.lo));
    if (allowed.lo > allowed.hi)
      fail(axis, fmt::format("min {} is above max {}", allowed.lo, allowed.hi));
    if (allowed.multiple < 1) fail(axis, fmt::format("multiple {} is below 1", allowed.multiple));
    if (!std::is_sorted(allowed.values.begin(), allowed.values.end()) ||
        std::adjacent_find(allowed.values.begin(), allowed.values.end()) != allowed.values.end())
      fail(axis, "values are not strictly ascending");
    for (moa::extent_t v : allowed.values)
      if (v < allowed.lo || v > allowed.hi || v < 1)
        fail(axis, fmt::format("value {} lies outside {}..{}", v, allowed.lo, allowed.hi));
    if (allowed.smallest(1).empty()) fail(axis, fmt::format("{} admits no extent", allowed.str()));
  }
  if (masking_chosen(op) && !causal && !non_causal)
    fail("causal", "neither causal nor non-causal attention is supported");
  if (op == Op::block && !causal) fail("causal", "the block is always causal");
}

std::string Envelope::str() const {
  std::vector<std::string> parts;
  for (const auto& [axis, allowed] : axes)
    if (!(allowed == AxisEnvelope{})) parts.push_back(fmt::format("{} in {}", axis, allowed.str()));
  if (!causal) parts.emplace_back("no causal");
  if (!non_causal) parts.emplace_back("causal only");
  if (!grouped_heads) parts.emplace_back("no GQA/MQA");
  if (parts.empty()) parts.emplace_back("any problem");
  if (device != Device::cpu) parts.emplace_back(name(device));
  return fmt::format("{}", fmt::join(parts, "; "));
}

void to_json(nlohmann::json& j, const Envelope& e) {
  nlohmann::json axes = nlohmann::json::object();
  for (const auto& [axis, allowed] : e.axes) {
    nlohmann::json a = nlohmann::json::object();
    if (allowed.lo != 1) a["min"] = allowed.lo;
    if (allowed.hi != std::numeric_limits<moa::extent_t>::max()) a["max"] = allowed.hi;
    if (!allowed.values.empty()) a["values"] = allowed.values;
    if (allowed.multiple != 1) a["multiple"] = allowed.multiple;
    axes[axis] = a;
  }
  j = {{"axes", axes},
       {"causal", e.causal},
       {"non_causal", e.non_causal},
       {"grouped_heads", e.grouped_heads},
       {"device", name(e.device)}};
}

namespace {

moa::extent_t positive_integer(const nlohmann::json& j, const std::string& where) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < 1)
    throw std::invalid_argument(
        fmt::format("envelope {}: {} is not a positive integer", where, j.dump()));
  return j.get<moa::extent_t>();
}

bool boolean(const nlohmann::json& j, const std::string& where) {
  if (!j.is_boolean())
    throw std::invalid_argument(
        fmt::format("envelope {}: {} is not true or false", where, j.dump()));
  return j.get<bool>();
}

}  // namespace

Envelope envelope_from_json(const nlohmann::json& j) {
  if (!j.is_object())
    throw std::invalid_argument("envelope: " + j.dump() + " is not a JSON object");
  Envelope e;
  for (const auto& [key, value] : j.items()) {
    if (key == "axes") {
      if (!value.is_object()) throw std::invalid_argument("envelope axes: not a JSON object");
      for (const auto& [axis, limits] : value.items()) {
        if (!limits.is_object())
          throw std::invalid_argument("envelope " + axis + ": not a JSON object");
        AxisEnvelope a;
        for (const auto& [field, v] : limits.items()) {
          const std::string where = axis + "." + field;
          if (field == "min")
            a.lo = positive_integer(v, where);
          else if (field == "max")
            a.hi = positive_integer(v, where);
          else if (field == "multiple")
            a.multiple = positive_integer(v, where);
          else if (field == "values") {
            if (!v.is_array() || v.empty())
              throw std::invalid_argument("envelope " + where + ": not a non-empty array");
            for (const auto& x : v) a.values.push_back(positive_integer(x, where));
          } else
            throw std::invalid_argument("envelope " + where +
                                        ": unknown field (min, max, values, multiple)");
        }
        e.axes.emplace_back(axis, a);
      }
    } else if (key == "causal")
      e.causal = boolean(value, key);
    else if (key == "non_causal")
      e.non_causal = boolean(value, key);
    else if (key == "grouped_heads")
      e.grouped_heads = boolean(value, key);
    else if (key == "device") {
      if (value == "cpu")
        e.device = Device::cpu;
      else if (value == "cuda")
        e.device = Device::cuda;
      else
        throw std::invalid_argument("envelope device: " + value.dump() +
                                    " is not \"cpu\" or \"cuda\"");
    } else
      throw std::invalid_argument(
          "envelope " + key + ": unknown member (axes, causal, non_causal, grouped_heads, device)");
  }
  return e;
}

}  // namespace moacert::kernels
