// Problem shapes on the command line: each op's default problem,
// "NAME=VALUE,..." over it (bench, list), constraints "NAME=VALUE" or
// "NAME=LO..HI" (certify), and the shape in the op's own dimension names.
// One parser reads every --shape.
#pragma once

#include <string>
#include <vector>

#include "properties/shape_constraints.hpp"
#include "reference/problem.hpp"

namespace moacert::cli {

// "a,b,,c" -> {"a", "b", "", "c"}.
std::vector<std::string> split(const std::string& s, char sep);

// One entry of --shape: NAME=VALUE (lo = hi) or NAME=LO..HI.
struct ShapeEntry {
  std::string name;
  moa::extent_t lo = 0, hi = 0;
};

// "N=4096,M=1..8192" -> its entries, each NAME a dimension (dim_field) given
// once; ranges only where `ranges`. Throws UsageError naming `command` and
// the entry.
std::vector<ShapeEntry> parse_shape_entries(const std::string& text, const std::string& command,
                                            bool ranges);

// certify --shape: the constraints of "N=4096,D=1..128" for `op`, each NAME
// one of the op's axes (dims_of), checked as satisfiable
// (ShapeConstraints::check). Throws UsageError naming `command`.
properties::ShapeConstraints parse_shape_constraints(Op op, const std::string& text,
                                                     const std::string& command);

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
