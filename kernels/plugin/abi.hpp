// The ABI's mapping of a problem (include/moacert/plugin.h): DLPack's
// type codes of moacert's dtypes and the params JSON a kernel reads.
#pragma once

#include <string>

#include <dlpack/dlpack.h>

#include "kernels/registry.hpp"

namespace moacert::kernels::plugin {

DLDataType dl_type(DType t);

// {"scale":..., "causal":...}, {"eps":...}, ... as the op's entry of the
// ABI's table says.
std::string params_json(const Problem& p);

}  // namespace moacert::kernels::plugin
