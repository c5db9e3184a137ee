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
  std::vector<AnyTensor> inputs;  // ops-table order; float inputs in problem.format
};

// Row-major output tensors of the problem's format, ready for a kernel.
inline std::vector<AnyTensor> make_outputs(const Problem& p) {
  std::vector<AnyTensor> out;
  for (const moa::Shape& s : output_shapes(p))
    out.emplace_back(dtype_of(p.format), moa::Layout::row_major(s));
  return out;
}

}  // namespace moacert
