#include "cli/shape.hpp"

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
  switch (op) {
    case Op::attention_decode:
      d.B = 4, d.H = 32, d.Hkv = 8, d.N = 1, d.M = 8192, d.D = 128;
      break;
    case Op::rmsnorm:
      d.T = 8192, d.D = 4096;
      break;
    case Op::mlp_swiglu:
      d.T = 512, d.Dm = 1024, d.F = 2816;
      break;
    case Op::block:
      d.B = 1, d.N = 512, d.Dm = 1024, d.H = 16, d.Hkv = 4, d.D = 64, d.F = 2816;
      break;
    default:
      d.B = 1, d.H = 8, d.Hkv = 8, d.N = 2048, d.M = 2048, d.D = 64;
  }
  return d;
}

Dims parse_shape(Op op, const std::string& text, const std::string& command) {
  Dims d = default_dims(op);
  if (text.empty()) return d;
  bool h_given = false, hkv_given = false;
  for (const std::string& item : split(text, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw UsageError(command + ": --shape entry '" + item + "' is not NAME=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto field = dim_field(key);  // reference/problem.hpp
    if (!field) throw UsageError(command + ": --shape has no dimension named '" + key + "'");
    try {
      std::size_t used = 0;
      d.*field = std::stoll(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw UsageError(command + ": --shape " + key + "='" + value + "' is not an integer");
    }
    h_given = h_given || key == "H";
    hkv_given = hkv_given || key == "Hkv";
  }
  if (h_given && !hkv_given) d.Hkv = d.H;
  if (op == Op::attention_decode) d.N = 1;
  return d;
}

std::string shape_text(Op op, const Dims& d) {
  std::string out;
  for (std::string_view dim : dims_of(op))
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", dim, extent_of(d, dim));
  return out;
}

}  // namespace moacert::cli
