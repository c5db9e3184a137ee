// The benches' extents: named, "T=512,Dm=1024,F=2816" (the axis names of
// reference/problem.hpp's dim_field: B H Hkv N M D T Dm F, and L for M),
// for the ops without attention's six; or those six positional.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "reference/problem.hpp"

namespace moacert::bench {

// Whether a command-line argument names extents rather than giving one.
inline bool names_extents(const char* arg) {
  return std::string(arg).find('=') != std::string::npos;
}

// `text` onto d; false on a name or number it does not know.
inline bool parse_named_dims(const std::string& text, Dims& d) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) return false;
    const auto field = dim_field(item.substr(0, eq));
    char* stop = nullptr;
    const long value = std::strtol(item.c_str() + eq + 1, &stop, 10);
    if (!field || *stop != '\0' || value < 1) return false;
    d.*field = value;
    at = end + 1;
  }
  return true;
}

// The extents at argv[at]: NAME=E,... in one argument, or B H HKV N M D
// in six. The position after them; nullopt when they are missing or name
// an axis or a number it does not know.
inline std::optional<int> read_dims(int argc, char** argv, int at, Dims& d) {
  if (at >= argc) return std::nullopt;
  if (names_extents(argv[at]))
    return parse_named_dims(argv[at], d) ? std::optional(at + 1) : std::nullopt;
  if (argc < at + 6) return std::nullopt;
  d = {.B = std::atol(argv[at]),
       .H = std::atol(argv[at + 1]),
       .Hkv = std::atol(argv[at + 2]),
       .N = std::atol(argv[at + 3]),
       .M = std::atol(argv[at + 4]),
       .D = std::atol(argv[at + 5])};
  return at + 6;
}

}  // namespace moacert::bench
