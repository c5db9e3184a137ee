// A case: one problem and the exact input values a kernel receives, each in
// the layout it receives it in. The oracle, every variant and the reports
// see the same case.
#pragma once

#include <vector>

#include "reference/problem.hpp"
#include "reference/tensor.hpp"

namespace moacert {

struct Case {
  Problem problem;
  std::vector<AnyTensor> inputs;  // ops-table order; float inputs each in its format (input_format)
};

// The element type an input is handed over in: i64 for an index input,
// else its format's.
inline DType input_dtype(const Problem& p, std::size_t input) {
  return is_index_input(p.op, input) ? DType::i64 : dtype_of(input_format(p, input));
}

// Row-major output tensors, each of its own format, ready for a kernel.
inline std::vector<AnyTensor> make_outputs(const Problem& p) {
  std::vector<AnyTensor> out;
  const auto shapes = output_shapes(p);
  for (std::size_t t = 0; t < shapes.size(); ++t)
    out.emplace_back(dtype_of(output_format(p, t)), moa::Layout::row_major(shapes[t]));
  return out;
}

}  // namespace moacert
