#include "cli/shape.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/core.h>

#include "cli/commands.hpp"

namespace moacert::cli {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

Dims default_dims(Op op) {
  Dims d;
  for (const ShapeEntry& e :
       parse_shape_entries(std::string(info(op).typical_shape), "ops table", /*ranges=*/false))
    d.*dim_field(e.name) = e.lo;
  return d;
}

namespace {

moa::extent_t parse_extent(const std::string& key, const std::string& value,
                           const std::string& command) {
  try {
    std::size_t used = 0;
    const moa::extent_t e = std::stoll(value, &used);
    if (used != value.size()) throw std::invalid_argument(value);
    return e;
  } catch (const std::exception&) {
    throw UsageError(command + ": --shape " + key + "='" + value + "' is not an integer");
  }
}

}  // namespace

std::vector<ShapeEntry> parse_shape_entries(const std::string& text, const std::string& command,
                                            bool ranges) {
  std::vector<ShapeEntry> out;
  for (const std::string& item : split(text, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw UsageError(command + ": --shape entry '" + item + "' is not NAME=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (!dim_field(key))  // reference/problem.hpp
      throw UsageError(command + ": --shape has no dimension named '" + key + "'");
    const auto dots = value.find("..");
    if (dots != std::string::npos && !ranges)
      throw UsageError(command + ": --shape " + key + "='" + value +
                       "' is a range; give one value");
    ShapeEntry e{key, 0, 0};
    if (dots == std::string::npos) {
      e.lo = e.hi = parse_extent(key, value, command);
    } else {
      e.lo = parse_extent(key, value.substr(0, dots), command);
      e.hi = parse_extent(key, value.substr(dots + 2), command);
      if (e.lo > e.hi)
        throw UsageError(fmt::format("{}: --shape {}={}: the low end {} is above the high end {}",
                                     command, key, value, e.lo, e.hi));
    }
    out.push_back(e);
  }
  return out;
}

Dims parse_shape(Op op, const std::string& text, const std::string& command) {
  Dims d = default_dims(op);
  if (text.empty()) return d;
  bool h_given = false, hkv_given = false;
  for (const ShapeEntry& e : parse_shape_entries(text, command, /*ranges=*/false)) {
    d.*dim_field(e.name) = e.lo;
    h_given = h_given || e.name == "H";
    hkv_given = hkv_given || e.name == "Hkv";
  }
  if (h_given && !hkv_given) d.Hkv = d.H;
  if (op == Op::attention_decode) d.N = 1;
  return d;
}

properties::ShapeConstraints parse_shape_constraints(Op op, const std::string& text,
                                                     const std::string& command) {
  properties::ShapeConstraints c;
  if (text.empty()) return c;
  const auto axes = dims_of(op);
  std::string names;
  for (std::string_view a : axes) names += (names.empty() ? "" : ", ") + std::string(a);
  for (const ShapeEntry& e : parse_shape_entries(text, command, /*ranges=*/true)) {
    if (std::find(axes.begin(), axes.end(), e.name) == axes.end())
      throw UsageError(command + ": --shape names " + e.name + ", not a dimension of " +
                       std::string(info(op).name) + " (" + names + ")");
    if (c.constrained(dim_field(e.name)))
      throw UsageError(command + ": --shape gives " + e.name + " twice");
    c.set(dim_field(e.name), {e.lo, e.hi});
  }
  try {
    c.check(op);
  } catch (const moa::ShapeError& e) {
    throw UsageError(command + ": --shape " + text + ": " + e.what());
  }
  return c;
}

std::string shape_text(Op op, const Dims& d) {
  std::string out;
  for (std::string_view dim : dims_of(op))
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", dim, extent_of(d, dim));
  return out;
}

}  // namespace moacert::cli
