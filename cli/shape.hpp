// Problem shapes on the command line (bench, list): each op's default
// problem, "NAME=VALUE,..." over it, and the shape in the op's own
// dimension names.
#pragma once

#include <string>
#include <vector>

#include "reference/problem.hpp"

namespace moacert::cli {

// "a,b,,c" -> {"a", "b", "", "c"}.
std::vector<std::string> split(const std::string& s, char sep);

// The default problem of each op: the shapes of the performance targets
// (docs/performance.md); block, which has none, a small GQA model's layer.
Dims default_dims(Op op);

// "B=1,H=8,N=2048,M=2048,D=64" over the op's defaults; a given H sets Hkv
// too unless Hkv is given; L is decode's name for M. Throws UsageError
// naming `command`.
Dims parse_shape(Op op, const std::string& text, const std::string& command);

// "B=1,H=8,Hkv=8,N=2048,M=2048,D=64", "T=8192,D=4096", ...
std::string shape_text(Op op, const Dims& d);

}  // namespace moacert::cli
