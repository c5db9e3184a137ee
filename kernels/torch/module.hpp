// The boundary between moacert and its LibTorch module. Loading LibTorch
// costs about a third of a second (the dynamic linker resolves its symbols
// and its dispatcher registers thousands of operators at start-up), which
// every command would pay, `moacert oracle` and `--version` included, were
// it linked into the binary. So it is not: the `torch` variants, their
// costs and the checks of each call are registered by torch_variants.cpp,
// and the module, libmoacert_torch.so (torch_adaptor.cpp, the one file that
// includes torch/torch.h), is loaded on the first call that runs one.
#pragma once

#include <span>

#include "kernels/registry.hpp"

namespace moacert::kernels::torch_module {

// The module's one symbol: runs the `torch` variant of p.op on tensors
// already checked against the problem (check_tensors, and no f16).
inline constexpr const char* kRunSymbol = "moacert_torch_run";
using Run = void (*)(const Problem& p, std::span<const TensorRef> inputs,
                     std::span<const TensorRef> outputs, const RunOptions& options);

}  // namespace moacert::kernels::torch_module
