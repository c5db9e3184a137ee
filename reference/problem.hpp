// A problem: an op, a format, the dimensions and parameters of one call.
// From it follow the logical shapes of every input and output in the order of
// docs/design.md's ops table; `validate` refuses what the op forbids, naming the
// op, the tensor or parameter, and the offending dimension.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/causal.hpp"
#include "reference/format.hpp"
#include "reference/moa/shape.hpp"
#include "reference/ops.hpp"

namespace moacert {

// Every dimension an op may use. Attention: q (B,H,N,D), k/v (B,Hkv,M,D);
// decode: M is the cache length L; rmsnorm: x (T,D); mlp: x (T,Dm), F the
// hidden width; block: x (B,N,Dm), H and Hkv heads of width D, F the MLP
// width (M is unused: self-attention). Unused dimensions stay 1.
struct Dims {
  moa::extent_t B = 1, H = 1, Hkv = 1, N = 1, M = 1, D = 1, T = 1, Dm = 1, F = 1;
  friend bool operator==(const Dims&, const Dims&) = default;
};

struct Params {
  double scale = 0;     // attention; 0 means the default 1/sqrt(D)
  bool causal = false;  // attention.fwd/bwd/fwdbwd; block is always causal
  double eps = 1e-6;    // rmsnorm, block
  // How the causal mask is aligned where N != M: moacert's bottom-right,
  // or top-left for a kernel that declares it (reference/conventions.hpp).
  CausalAlignment causal_alignment = CausalAlignment::bottom_right;
  friend bool operator==(const Params&, const Params&) = default;
};

struct Problem {
  Op op = Op::attention_fwd;
  Format format = Format::f32;  // the dtype: every tensor's unless declared otherwise
  Dims dims;
  Params params;
  // Each tensor's own format where the kernel declares one
  // (reference/conventions.hpp's tensor_formats, set by `as_taken`); a
  // tensor not named is in `format`. Empty for moacert's own kernels
  // (docs/design.md#per-tensor-formats).
  std::vector<std::pair<std::string, Format>> tensor_formats;

  // The format of the tensor named `tensor` (an input or output of the op).
  Format format_of(std::string_view tensor) const {
    for (const auto& [named, f] : tensor_formats)
      if (named == tensor) return f;
    return format;
  }

  // The scale actually used: the given one, or 1/sqrt(D).
  double scale() const {
    return params.scale != 0 ? params.scale : 1.0 / std::sqrt(double(dims.D));
  }
  bool causal() const { return op == Op::block || params.causal; }
  // The causal mask with its alignment: what the DNF and the oracle read.
  causal::Mask mask() const { return {causal(), params.causal_alignment}; }
};

// The Dims field an axis name (reference/ops.hpp) denotes: a field's own
// name, or "L" for decode's cache length M; nullptr for any other name.
inline moa::extent_t Dims::*dim_field(std::string_view axis) {
  static const std::pair<std::string_view, moa::extent_t Dims::*> fields[] = {
      {"B", &Dims::B}, {"H", &Dims::H}, {"Hkv", &Dims::Hkv}, {"N", &Dims::N},   {"M", &Dims::M},
      {"L", &Dims::M}, {"D", &Dims::D}, {"T", &Dims::T},     {"Dm", &Dims::Dm}, {"F", &Dims::F}};
  for (const auto& [name, field] : fields)
    if (name == axis) return field;
  return nullptr;
}

// The extent an axis runs over in a problem: a dimension, 1, or a product
// of two ("H*D").
inline moa::extent_t extent_of(const Dims& d, std::string_view axis) {
  if (axis == "1") return 1;
  if (const std::size_t star = axis.find('*'); star != std::string_view::npos) {
    moa::extent_t product = 0;
    if (__builtin_mul_overflow(extent_of(d, axis.substr(0, star)),
                               extent_of(d, axis.substr(star + 1)), &product))
      throw moa::ShapeError(std::string(axis) + " overflows int64");
    return product;
  }
  const auto field = dim_field(axis);
  if (!field) throw std::logic_error("ops table: unknown axis " + std::string(axis));
  return d.*field;
}

// The dimensions an op's tensors run over, by the names its signature uses
// ("L" for decode's M), in the order of Dims: what `--shape` names for it.
inline std::vector<std::string_view> dims_of(Op op) {
  std::vector<std::string_view> used;
  auto note = [&](std::string_view axis) {
    if (axis != "1" && std::find(used.begin(), used.end(), axis) == used.end())
      used.push_back(axis);
  };
  for (const auto* list : {&info(op).input_axes, &info(op).output_axes})
    for (const Axes& axes : *list)
      for (std::string_view axis : axes) {
        const std::size_t star = axis.find('*');
        note(axis.substr(0, star));
        if (star != std::string_view::npos) note(axis.substr(star + 1));
      }
  static constexpr std::string_view order[] = {"B", "H", "Hkv", "N", "M", "L", "D", "T", "Dm", "F"};
  std::vector<std::string_view> out;
  for (std::string_view d : order)
    if (std::find(used.begin(), used.end(), d) != used.end()) out.push_back(d);
  return out;
}

inline std::vector<moa::Shape> shapes_of(const Dims& d, const std::vector<Axes>& tensors) {
  std::vector<moa::Shape> out;
  for (const Axes& axes : tensors) {
    moa::Shape s;
    for (std::string_view axis : axes) s.push_back(extent_of(d, axis));
    out.push_back(s);
  }
  return out;
}

// The logical shapes of the inputs and outputs, in the ops-table order
// (`lens` of decode is (B) and holds int64).
inline std::vector<moa::Shape> input_shapes(const Problem& p) {
  return shapes_of(p.dims, info(p.op).input_axes);
}
inline std::vector<moa::Shape> output_shapes(const Problem& p) {
  return shapes_of(p.dims, info(p.op).output_axes);
}

// How many elements the tensors of these shapes hold together, in double
// (a memory estimate must not overflow).
inline double element_count(const std::vector<moa::Shape>& shapes) {
  double n = 0;
  for (const moa::Shape& s : shapes) {
    double e = 1;
    for (int k = 0; k < s.rank(); ++k) e *= double(s[std::size_t(k)]);
    n += e;
  }
  return n;
}

// True for an input of integers (decode's lens: `lens[B]:i64` in its
// signature), which holds indices, not values of the problem's format.
inline bool is_index_input(Op op, std::size_t input) {
  return info(op).input_elements.at(input) == Element::i64;
}
inline bool is_index_input(const Problem& p, int input) {
  return is_index_input(p.op, static_cast<std::size_t>(input));
}

// The format of a float input and of an output, by position in the ops
// table: its own where declared, else the problem's.
inline Format input_format(const Problem& p, std::size_t input) {
  return p.format_of(info(p.op).inputs.at(input));
}
inline Format output_format(const Problem& p, std::size_t output) {
  return p.format_of(info(p.op).outputs.at(output));
}
// Whether some tensor's format differs from another's.
inline bool mixed_formats(const Problem& p) {
  for (const auto& [tensor, f] : p.tensor_formats)
    if (f != p.format) return true;
  return false;
}
// Whether every float tensor is f64: the accumulation format is then f64,
// else f32 (docs/bounds.md; f16 and bf16 storage accumulate in f32).
inline bool all_f64(const Problem& p) {
  const OpInfo& oi = info(p.op);
  for (std::size_t k = 0; k < oi.inputs.size(); ++k)
    if (!is_index_input(p.op, k) && input_format(p, k) != Format::f64) return false;
  for (std::size_t t = 0; t < oi.outputs.size(); ++t)
    if (output_format(p, t) != Format::f64) return false;
  return true;
}

// Refuses a problem the op does not define, with a message naming the op
// and the dimension or parameter. Sizes that overflow int64 are refused too.
inline void validate(const Problem& p) {
  const std::string op(info(p.op).name);
  const Dims& d = p.dims;
  auto positive = [&](moa::extent_t v, const char* dim) {
    if (v <= 0) {
      throw moa::ShapeError(op + ": dimension " + dim + " is " + std::to_string(v) +
                            ", must be positive");
    }
  };
  // Every dimension the op's signature runs over (by its own name: decode's
  // cache length is L) is positive.
  const std::vector<std::string_view> used = dims_of(p.op);
  for (std::string_view dim : used) positive(d.*dim_field(dim), std::string(dim).c_str());
  // Attention and the block (whose attention it is) run over heads.
  if (info(p.op).family != Family::rows) {
    if (d.H % d.Hkv != 0) {
      throw moa::ShapeError(op + ": H (" + std::to_string(d.H) + ") is not a multiple of Hkv (" +
                            std::to_string(d.Hkv) + ")");
    }
    if (!(p.params.scale >= 0) || !std::isfinite(p.params.scale)) {
      throw moa::ShapeError(op + ": parameter scale (" + std::to_string(p.params.scale) +
                            ") must be positive and finite");
    }
  }
  // An attention op without a query axis N (decode: one query, `q[B,H,1,D]`).
  if (is_attention(p.op) && std::find(used.begin(), used.end(), "N") == used.end() && d.N != 1)
    throw moa::ShapeError(op + ": dimension N is " + std::to_string(d.N) + ", must be 1");
  const auto& params = info(p.op).params;
  if (std::find(params.begin(), params.end(), "eps") != params.end()) {
    if (!(p.params.eps >= 0) || !std::isfinite(p.params.eps)) {
      throw moa::ShapeError(op + ": parameter eps (" + std::to_string(p.params.eps) +
                            ") must be non-negative and finite");
    }
  }
  // A product axis ("H*D", block's projection widths) that overflows.
  for (const auto* list : {&info(p.op).input_axes, &info(p.op).output_axes})
    for (const Axes& axes : *list)
      for (std::string_view axis : axes)
        if (axis.find('*') != std::string_view::npos) {
          moa::extent_t width = 0;
          const std::size_t star = axis.find('*');
          if (__builtin_mul_overflow(extent_of(d, axis.substr(0, star)),
                                     extent_of(d, axis.substr(star + 1)), &width))
            throw moa::ShapeError(op + ": " + std::string(axis) + " overflows int64");
        }
  const auto names_in = info(p.op).inputs;
  const auto shapes_in = input_shapes(p);
  for (std::size_t i = 0; i < shapes_in.size(); ++i)
    moa::checked_size(shapes_in[i], op + " " + std::string(names_in[i]) + " " + shapes_in[i].str());
  const auto names_out = info(p.op).outputs;
  const auto shapes_out = output_shapes(p);
  for (std::size_t i = 0; i < shapes_out.size(); ++i)
    moa::checked_size(shapes_out[i],
                      op + " " + std::string(names_out[i]) + " " + shapes_out[i].str());
}

}  // namespace moacert
