// A block case's forward in double, up to the MLP's input
// (dnf::block_until_mlp), and its intermediates: what its regimes are judged
// on (its classifier, properties/ops/block.cpp; regimes.cpp defines it)
// and what generation aims them with (properties/ops/block.cpp). A header
// of its own, so that the block DNF's templates reach those files and not
// every includer of regimes.hpp.
#pragma once

#include <vector>

#include "reference/case.hpp"
#include "reference/dnf/block.hpp"

namespace moacert::properties {

struct BlockInDouble {
  std::vector<moa::Tensor<double>> inputs;  // the case's inputs, row-major
  dnf::BlockIntermediates<double> mid;
};
BlockInDouble block_in_double(const Case& c);

}  // namespace moacert::properties
