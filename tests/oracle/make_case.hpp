// Small cases for the oracle's tests: every op, random inputs already in
// the storage format, optionally in a column-major layout.
#pragma once

#include <algorithm>
#include <random>

#include "reference/case.hpp"

namespace moacert::test {

// Small dimensions that give every op some work: GQA, causal with N != M.
inline Dims small_dims(Op op) {
  Dims d;
  switch (op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      d = {.B = 1, .H = 2, .Hkv = 1, .N = 3, .M = 4, .D = 3};
      break;
    case Op::attention_decode:
      d = {.B = 2, .H = 2, .Hkv = 1, .N = 1, .M = 4, .D = 3};
      break;
    case Op::rmsnorm:
      d = {.D = 5, .T = 2};
      break;
    case Op::mlp_swiglu:
      d = {.T = 2, .Dm = 3, .F = 4};
      break;
    case Op::block:
      d = {.B = 1, .H = 2, .Hkv = 1, .N = 2, .D = 2, .Dm = 4, .F = 3};
      break;
  }
  return d;
}

// Inputs uniform in [-1, 1) rounded to the format; lens in [1, L].
inline Case make_case(Op op, Format f, Dims dims, unsigned seed, bool causal = false,
                      bool col_major = false) {
  Case c;
  c.problem.op = op;
  c.problem.format = f;
  c.problem.dims = dims;
  c.problem.params.causal = causal;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const auto shapes = input_shapes(c.problem);
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const bool index = is_index_input(c.problem, static_cast<int>(k));
    const moa::Layout l =
        col_major ? moa::Layout::col_major(shapes[k]) : moa::Layout::row_major(shapes[k]);
    AnyTensor t(index ? DType::i64 : dtype_of(f), l);
    for (const moa::Index& i : moa::iota(shapes[k])) {
      if (index) {
        t.set(i, double(1 + rng() % static_cast<std::uint64_t>(dims.M)));
      } else {
        t.set(i, u(rng));
      }
    }
    c.inputs.push_back(std::move(t));
  }
  return c;
}

}  // namespace moacert::test
