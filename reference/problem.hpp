// A problem: an op, a format, the dimensions and parameters of one call.
// From it follow the logical shapes of every input and output in the order of
// docs/design.md's ops table; `validate` refuses what the op forbids, naming the
// op, the tensor or parameter, and the offending dimension.
#pragma once

#include <cmath>
#include <string>
#include <vector>

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
  friend bool operator==(const Params&, const Params&) = default;
};

struct Problem {
  Op op = Op::attention_fwd;
  Format format = Format::f32;
  Dims dims;
  Params params;

  // The scale actually used: the given one, or 1/sqrt(D).
  double scale() const {
    return params.scale != 0 ? params.scale : 1.0 / std::sqrt(double(dims.D));
  }
  bool causal() const { return op == Op::block || params.causal; }
};

// The logical shapes of the inputs (ops-table order). `lens` of decode is
// (B) and holds int64.
inline std::vector<moa::Shape> input_shapes(const Problem& p) {
  const Dims& d = p.dims;
  switch (p.op) {
    case Op::attention_fwd:
      return {{d.B, d.H, d.N, d.D}, {d.B, d.Hkv, d.M, d.D}, {d.B, d.Hkv, d.M, d.D}};
    case Op::attention_bwd:
      return {{d.B, d.H, d.N, d.D}, {d.B, d.Hkv, d.M, d.D}, {d.B, d.Hkv, d.M, d.D},
              {d.B, d.H, d.N, d.D}, {d.B, d.H, d.N},        {d.B, d.H, d.N, d.D}};
    case Op::attention_fwdbwd:
      return {{d.B, d.H, d.N, d.D},
              {d.B, d.Hkv, d.M, d.D},
              {d.B, d.Hkv, d.M, d.D},
              {d.B, d.H, d.N, d.D}};
    case Op::attention_decode:
      return {{d.B, d.H, 1, d.D}, {d.B, d.Hkv, d.M, d.D}, {d.B, d.Hkv, d.M, d.D}, {d.B}};
    case Op::rmsnorm:
      return {{d.T, d.D}, {d.D}};
    case Op::mlp_swiglu:
      return {{d.T, d.Dm}, {d.Dm, d.F}, {d.Dm, d.F}, {d.F, d.Dm}};
    case Op::block:
      return {
          {d.B, d.N, d.Dm},  {d.Dm}, {d.Dm, d.H * d.D}, {d.Dm, d.Hkv * d.D}, {d.Dm, d.Hkv * d.D},
          {d.H * d.D, d.Dm}, {d.Dm}, {d.Dm, d.F},       {d.Dm, d.F},         {d.F, d.Dm}};
  }
  return {};
}

inline std::vector<moa::Shape> output_shapes(const Problem& p) {
  const Dims& d = p.dims;
  switch (p.op) {
    case Op::attention_fwd:
      return {{d.B, d.H, d.N, d.D}, {d.B, d.H, d.N}};
    case Op::attention_bwd:
      return {{d.B, d.H, d.N, d.D}, {d.B, d.Hkv, d.M, d.D}, {d.B, d.Hkv, d.M, d.D}};
    case Op::attention_fwdbwd:
      return {{d.B, d.H, d.N, d.D},
              {d.B, d.H, d.N},
              {d.B, d.H, d.N, d.D},
              {d.B, d.Hkv, d.M, d.D},
              {d.B, d.Hkv, d.M, d.D}};
    case Op::attention_decode:
      return {{d.B, d.H, 1, d.D}, {d.B, d.H, 1}};
    case Op::rmsnorm:
      return {{d.T, d.D}};
    case Op::mlp_swiglu:
      return {{d.T, d.Dm}};
    case Op::block:
      return {{d.B, d.N, d.Dm}};
  }
  return {};
}

// True for the one integer input (decode's lens).
inline bool is_index_input(const Problem& p, int input) {
  return p.op == Op::attention_decode && input == 3;
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
  const bool attention = p.op == Op::attention_fwd || p.op == Op::attention_bwd ||
                         p.op == Op::attention_fwdbwd || p.op == Op::attention_decode ||
                         p.op == Op::block;
  if (attention) {
    positive(d.B, "B");
    positive(d.H, "H");
    positive(d.Hkv, "Hkv");
    positive(d.D, "D");
    if (d.H % d.Hkv != 0) {
      throw moa::ShapeError(op + ": H (" + std::to_string(d.H) + ") is not a multiple of Hkv (" +
                            std::to_string(d.Hkv) + ")");
    }
    if (!(p.params.scale >= 0) || !std::isfinite(p.params.scale)) {
      throw moa::ShapeError(op + ": parameter scale (" + std::to_string(p.params.scale) +
                            ") must be positive and finite");
    }
  }
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
    case Op::attention_decode:
      positive(d.N, "N");
      positive(d.M, p.op == Op::attention_decode ? "L" : "M");
      if (p.op == Op::attention_decode && d.N != 1) {
        throw moa::ShapeError(op + ": dimension N is " + std::to_string(d.N) + ", must be 1");
      }
      break;
    case Op::rmsnorm:
      positive(d.T, "T");
      positive(d.D, "D");
      break;
    case Op::mlp_swiglu:
      positive(d.T, "T");
      positive(d.Dm, "Dm");
      positive(d.F, "F");
      break;
    case Op::block:
      positive(d.N, "N");
      positive(d.Dm, "Dm");
      positive(d.F, "F");
      moa::extent_t width = 0;  // H·D and Hkv·D are extents of the weights
      if (__builtin_mul_overflow(d.H, d.D, &width)) {
        throw moa::ShapeError(op + ": H·D overflows int64");
      }
      break;
  }
  if (p.op == Op::rmsnorm || p.op == Op::block) {
    if (!(p.params.eps >= 0) || !std::isfinite(p.params.eps)) {
      throw moa::ShapeError(op + ": parameter eps (" + std::to_string(p.params.eps) +
                            ") must be non-negative and finite");
    }
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
