// The library and the worker executable: where moacert-plugin-worker is,
// starting it, and the library's kernel table as a short-lived worker
// reports it (moacert never loads a plugin itself).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/plugin/plugin.hpp"

namespace moacert::kernels::plugin {

// The worker executable: the option's, else $MOACERT_PLUGIN_WORKER, else
// beside the running executable, else the build tree's. Throws PluginError.
std::string worker_path(const LoadOptions& o);

// Starts the worker with `args`; one that cannot be started is bad input
// (PluginError).
pid_t spawn(const std::vector<std::string>& args);

// One entry of the library's kernel table, as the worker reports it.
// ABI 1's entries report device "cpu", nothing refused and no axes.
struct Entry {
  std::string op, name, dtype;
  int accepts_strided = 0;
  bool has_run = true;
  // Its envelope as declared (ABI 2), unchecked: abi.hpp's envelope_of
  // maps and checks it.
  std::string device = "cpu";
  int refuses = 0;  // MOACERT_REFUSES_* flags
  struct Axis {
    std::string name;
    std::int64_t min = 0, max = 0, multiple = 0;  // 0: unset
    std::string values;  // "-": none; else comma-separated ("" empty, "many" too many)
  };
  std::vector<Axis> axes;
  // Its arithmetic as declared (ABI 3; "standard" before), unparsed:
  // reference/arithmetic_spec.hpp reads it against the op.
  std::string arithmetic = "standard";
  // Its conventions as declared (ABI 4; empty: not declared, moacert's
  // own), unparsed: reference/conventions.hpp reads them against the op.
  std::string outputs, causal_alignment, params, tensor_formats;
  int deterministic = 0;  // ABI 4: 1 claims bitwise the same results on every run and thread count
  // A cuda kernel's: "ok" when device tensors can be had (its library's
  // CUDA runtime found and a device allocating), else why not, a clause.
  std::string device_runtime = "ok";
};

// The table of `lib`, listed by a worker within `timeout_s`. Throws
// PluginError (no symbol, another ABI, a crash while loading, ...).
std::vector<Entry> list_library(const std::string& lib, const std::string& worker,
                                double timeout_s);

// "2.5": seconds as a message shows them.
std::string seconds_text(double s);

}  // namespace moacert::kernels::plugin
