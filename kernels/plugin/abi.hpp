// The ABI's mapping of a problem (include/moacert/plugin.h): DLPack's
// type codes of moacert's dtypes and the params JSON a kernel reads.
#pragma once

#include <string>

#include <dlpack/dlpack.h>

#include "kernels/envelope.hpp"
#include "kernels/plugin/library.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::plugin {

DLDataType dl_type(DType t);

// {"scale":..., "causal":...}, {"eps":...}, ... as the op's entry of the
// ABI's table says, and "threads":N where the call asks for N > 0 threads
// (certify's --threads; 1 and 2 in the determinism check).
std::string params_json(const Problem& p, int threads = 0);

// The envelope entry `e` of the table declares (ABI 2: its axes, the
// options it refuses, its device; ABI 1: every problem, on the CPU),
// checked against `op` (Envelope::check) and against this build: a `cuda`
// kernel needs CUDA or the SIMT emulator. Throws PluginError, one line
// naming `kernel` and the field.
Envelope envelope_of(const Entry& e, Op op, const std::string& kernel);

// The arithmetic entry `e` declares (ABI 3; the standard model before),
// read against `op`'s vocabulary (reference/arithmetic_spec.hpp). Throws
// PluginError, one line naming `kernel` and the field.
Arithmetic arithmetic_of(const Entry& e, Op op, const std::string& kernel);

// The conventions `e` declares (ABI 4; moacert's own before), each field
// read against `op` (reference/conventions.hpp). Throws PluginError, one
// line naming `kernel` and the field.
Conventions conventions_of(const Entry& e, Op op, const std::string& kernel);

}  // namespace moacert::kernels::plugin
