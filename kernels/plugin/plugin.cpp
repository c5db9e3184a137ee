#include "kernels/plugin/plugin.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "kernels/plugin/abi.hpp"
#include "kernels/plugin/exchange.hpp"
#include "kernels/plugin/library.hpp"
#include "reference/arithmetic_spec.hpp"

namespace moacert::kernels::plugin {

namespace {

namespace fs = std::filesystem;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string kernel_name_of(const std::string& variant) {
  if (variant.rfind("plugin:", 0) != 0) return {};
  const auto hash = variant.rfind('#');
  return hash == std::string::npos ? std::string() : variant.substr(hash + 1);
}

Variant load(const std::string& spec, const LoadOptions& options, const std::string& default_name) {
  if (!(options.timeout_s > 0) || !std::isfinite(options.timeout_s))
    throw PluginError("--timeout must be a positive number of seconds");
  std::string lib = spec, wanted;
  if (const auto hash = spec.rfind('#'); hash != std::string::npos) {
    lib = spec.substr(0, hash);
    wanted = spec.substr(hash + 1);
    if (wanted.empty()) throw PluginError("plugin " + spec + ": empty kernel name after '#'");
  }
  std::error_code ec;
  if (!fs::is_regular_file(lib, ec)) throw PluginError("plugin " + lib + ": no such file");
  const std::string path = fs::absolute(lib, ec).string();
  const std::string worker = worker_path(options);
  const std::vector<Entry> table = list_library(path, worker, std::max(10.0, options.timeout_s));
  const std::string who = "plugin " + lib;

  // Every entry must name a known op and dtype; a name is one op.
  std::vector<std::string> names;
  std::map<std::string, Op> op_of;
  for (const Entry& e : table) {
    if (e.name == "(null)" || e.name.empty()) throw PluginError(who + ": a kernel has no name");
    const auto op = parse_op(e.op);
    if (!op) throw PluginError(who + ": kernel '" + e.name + "' has unknown op '" + e.op + "'");
    if (!parse_format(e.dtype))
      throw PluginError(who + ": kernel '" + e.name + "' has unknown dtype '" + e.dtype +
                        "' (f64, f32, bf16, f16)");
    if (!e.has_run) throw PluginError(who + ": kernel '" + e.name + "' has no run function");
    const auto [it, fresh] = op_of.emplace(e.name, *op);
    if (fresh)
      names.push_back(e.name);
    else if (it->second != *op)
      throw PluginError(who + ": kernel name '" + e.name + "' is used for two ops");
  }
  if (wanted.empty()) {
    if (names.size() == 1)
      wanted = names.front();
    else if (!default_name.empty() && op_of.count(default_name))
      wanted = default_name;
    else
      throw PluginError(who + " holds several kernels (" + join(names) + "): name one as " + lib +
                        "#NAME");
  }
  if (!op_of.count(wanted))
    throw PluginError(who + " has no kernel '" + wanted + "' (it has: " + join(names) + ")");

  Variant v;
  v.op = op_of[wanted];
  v.name = "plugin:" + fs::path(lib).filename().string() + "#" + wanted;
  v.backend = "plugin";
  v.role = Role::plugin;
  v.accepts_strided = true;
  v.deterministic = true;  // while every entry of the name claims it (ABI 4)
  v.summary = "plugin kernel '" + wanted + "' of " + path + ", run in an isolated worker";
  const std::string kernel = fs::path(lib).filename().string() + "#" + wanted;
  std::map<Format, int> index_of;
  std::optional<std::string> declared_by;  // the dtype whose entry declared v.envelope
  for (std::size_t i = 0; i < table.size(); ++i) {
    const Entry& e = table[i];
    if (e.name != wanted) continue;
    const Format f = *parse_format(e.dtype);
    if (index_of.count(f))
      throw PluginError(who + ": kernel '" + wanted + "' is listed twice for " + e.dtype);
    index_of[f] = int(i);
    v.formats.push_back(f);
    v.accepts_strided = v.accepts_strided && e.accepts_strided != 0;
    v.deterministic = v.deterministic && e.deterministic == 1;
    // One Variant, one envelope and one arithmetic: its entries (one per
    // dtype) declare the same.
    const Envelope envelope = envelope_of(e, v.op, kernel);
    const Arithmetic arithmetic = arithmetic_of(e, v.op, kernel);
    const Conventions conventions = conventions_of(e, v.op, kernel);
    if (!declared_by) {
      v.envelope = envelope;
      v.arithmetic = arithmetic;
      v.conventions = conventions;
      declared_by = e.dtype;
    } else if (!(envelope == v.envelope)) {
      throw PluginError(kernel + ": envelope: its " + *declared_by + " and " + e.dtype +
                        " entries declare different envelopes (" + v.envelope.str() + " | " +
                        envelope.str() + ")");
    } else if (!(arithmetic == v.arithmetic)) {
      throw PluginError(kernel + ": arithmetic: its " + *declared_by + " and " + e.dtype +
                        " entries declare different arithmetic (" + to_string(v.arithmetic) +
                        " | " + to_string(arithmetic) + ")");
    } else if (!(conventions == v.conventions)) {
      throw PluginError(kernel + ": conventions: its " + *declared_by + " and " + e.dtype +
                        " entries declare different conventions (" + to_string(v.conventions) +
                        " | " + to_string(conventions) + ")");
    }
  }
  std::sort(v.formats.begin(), v.formats.end());
  if (const Variant* dnf = Registry::builtin().find_role(v.op, Role::dnf)) v.cost = dnf->cost;
  auto w = std::make_shared<Worker>(worker, path, options.timeout_s, [op = v.op](int i) {
    const OpInfo& oi = info(op);
    return std::size_t(i) < oi.inputs.size()
               ? std::string(oi.inputs[std::size_t(i)])
               : std::string(oi.outputs[std::size_t(i) - oi.inputs.size()]);
  });
  v.run = [w, index_of, envelope = v.envelope](const Problem& p, std::span<const TensorRef> in,
                                               std::span<const TensorRef> out,
                                               const RunOptions& run_options) {
    const auto it = index_of.find(p.format);
    if (it == index_of.end())
      throw std::invalid_argument("plugin kernel does not run " + std::string(name(p.format)));
    try {
      w->call(it->second, p, in, out, run_options.schedule_seed, {}, run_options.threads);
    } catch (const Unsupported& refusal) {
      // Inside its own envelope a refusal is a fault like any other.
      if (envelope.why_outside(p).empty())
        throw KernelFault(
            std::string(refusal.what()) + " inside its own envelope (" + envelope.str() + ")",
            false);
      throw;
    }
  };
  // bench of a plugin kernel: its calls alone, timed in the worker on the
  // tensors it keeps across the timed calls (a `cuda` kernel's launches on
  // the device, its copies apart; a `cpu` kernel's call without moacert's
  // copies into and out of the shared memory and its guard checks, which
  // would otherwise dominate a memory-bound kernel).
  v.time_on_device = [w, index_of](const Problem& p, std::span<const TensorRef> in,
                                   std::span<const TensorRef> out, const DeviceTimingOptions& opt) {
    const wire::Timing t = w->call(index_of.at(p.format), p, in, out, 0, {opt.warmup, opt.repeats});
    // A timer's failure without a device error (which the call throws)
    // leaves nothing timed: say so rather than take a median of nothing.
    if (t.calls < 1)
      throw std::runtime_error("plugin worker: its " + std::string(t.clock) +
                               " timed none of the calls");
    DeviceTimes d;
    d.clock = t.clock;
    d.launches.assign(t.seconds, t.seconds + t.calls);
    d.copy_to_device_seconds = t.copy_to_device_seconds;
    d.copy_to_device_bytes = t.copy_to_device_bytes;
    d.copy_from_device_seconds = t.copy_from_device_seconds;
    d.copy_from_device_bytes = t.copy_from_device_bytes;
    return d;
  };
  v.fresh_process = [w] { w->fresh(); };
  v.instrumentation = std::make_shared<SimtCountersOnly>([w] { return w->simt_counters(); });
  return v;
}

}  // namespace moacert::kernels::plugin
