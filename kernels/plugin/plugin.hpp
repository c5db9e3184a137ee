// Plugins (docs/design.md, "Plugin ABI"; docs/plugins.md): a user's shared
// library of kernels, certified like any built-in variant. The library is
// untrusted, so moacert never loads it: it is validated in a short-lived
// child, and each call runs in a worker process (moacert-plugin-worker),
// kept alive across calls and started again after a failure. Inputs are
// mapped read-only there, outputs sit between guard pages and canary
// bytes. A crash, a hang past the timeout, an error return or a write
// outside the outputs throws KernelFault, which certification turns into a
// counterexample.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/isolation/process.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::plugin {

// A plugin moacert refuses to use (no symbol, another ABI version, an
// unknown op or dtype, several kernels and no #NAME, ...): bad input, exit 2.
class PluginError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct LoadOptions {
  double timeout_s = 60;  // per call; past it the worker is killed
  // The worker executable; empty: $MOACERT_PLUGIN_WORKER, else beside the
  // running executable, else the build tree's.
  std::string worker;
};

// "LIB.so" or "LIB.so#NAME": the library's kernels named NAME (one per
// dtype) as one Variant `plugin:<file>#<name>` of backend "plugin". Without
// #NAME the library must hold one name; `default_name` (a token's) is used
// when it holds several. Throws PluginError.
Variant load(const std::string& spec, const LoadOptions& options = {},
             const std::string& default_name = {});

// The NAME of a variant name `plugin:<file>#NAME`, or empty.
std::string kernel_name_of(const std::string& variant);

// Workers still running (none once every plugin Variant is destroyed), and
// their process ids (kernels/isolation/process.hpp).
using isolation::live_worker_pids;
using isolation::live_workers;

}  // namespace moacert::kernels::plugin
