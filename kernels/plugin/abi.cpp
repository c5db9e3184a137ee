#include "kernels/plugin/abi.hpp"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "include/moacert/plugin.h"
#include "kernels/plugin/protocol.hpp"
#include "reference/arithmetic_spec.hpp"
#include "reference/conventions.hpp"

namespace moacert::kernels::plugin {

DLDataType dl_type(DType t) {
  switch (t) {
    case DType::f64:
      return {kDLFloat, 64, 1};
    case DType::f32:
      return {kDLFloat, 32, 1};
    case DType::bf16:
      return {kDLBfloat, 16, 1};
    case DType::f16:
      return {kDLFloat, 16, 1};
    case DType::i64:
      return {kDLInt, 64, 1};
  }
  return {kDLFloat, 32, 1};
}

std::string params_json(const Problem& p, int threads) {
  // Each parameter the op's row names (reference/ops.hpp), in its order;
  // reals with 17 significant digits, so that they parse back exactly.
  auto value = [&](std::string_view param) -> std::string {
    char buf[64];
    if (param == "scale")
      std::snprintf(buf, sizeof buf, "%.17g", p.scale());
    else if (param == "eps")
      std::snprintf(buf, sizeof buf, "%.17g", p.params.eps);
    else if (param == "causal")
      return p.causal() ? "true" : "false";
    else if (param == "heads")
      return std::to_string(p.dims.H);
    else if (param == "kv_heads")
      return std::to_string(p.dims.Hkv);
    else
      throw std::logic_error("params_json: no value for the parameter " + std::string(param));
    return buf;
  };
  std::string json = "{";
  for (std::string_view param : info(p.op).params) {
    if (json.size() > 1) json += ',';
    json += '"';
    json += param;
    json += "\":";
    json += value(param);
  }
  if (threads > 0)
    json += (json.size() > 1 ? ",\"threads\":" : "\"threads\":") + std::to_string(threads);
  return json + "}";
}

Envelope envelope_of(const Entry& e, Op op, const std::string& kernel) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw PluginError(kernel + ": envelope " + field + ": " + why);
  };
  Envelope envelope;
  for (const Entry::Axis& a : e.axes) {
    AxisEnvelope allowed;
    if (a.min != 0) allowed.lo = a.min;  // 0: unbounded, as the ABI says
    if (a.max != 0) allowed.hi = a.max;
    if (a.multiple != 0) allowed.multiple = a.multiple;
    if (a.values.empty()) fail(a.name, "values: an empty list admits no extent");
    if (a.values == "many")
      fail(a.name, "more than " + std::to_string(wire::kMaxValues) + " values");
    if (a.values != "-") {
      std::istringstream cells(a.values);
      for (std::string v; std::getline(cells, v, ',');) allowed.values.push_back(std::stoll(v));
    }
    envelope.axes.emplace_back(a.name, allowed);
  }
  constexpr int known =
      MOACERT_REFUSES_CAUSAL | MOACERT_REFUSES_NON_CAUSAL | MOACERT_REFUSES_GROUPED_HEADS;
  if (e.refuses & ~known) fail("refuses", "unknown flags " + std::to_string(e.refuses & ~known));
  envelope.causal = !(e.refuses & MOACERT_REFUSES_CAUSAL);
  envelope.non_causal = !(e.refuses & MOACERT_REFUSES_NON_CAUSAL);
  envelope.grouped_heads = !(e.refuses & MOACERT_REFUSES_GROUPED_HEADS);
  if (e.device == "cpu")
    envelope.device = Device::cpu;
  else if (e.device == "cuda")
    envelope.device = Device::cuda;
  else
    fail("device", "\"" + e.device + "\" is not \"cpu\" or \"cuda\"");
  if (envelope.device == Device::cuda && !MOACERT_HAVE_CUDA_FLAG && !MOACERT_HAVE_SIMT_FLAG)
    fail("device", "cuda needs a build with CUDA or the SIMT emulator (this one has neither)");
  if (envelope.device == Device::cuda && e.device_runtime != "ok")
    fail("device", "cuda, but " + e.device_runtime);
  try {
    envelope.check(op, kernel);
  } catch (const std::invalid_argument& why) {
    throw PluginError(why.what());
  }
  return envelope;
}

Arithmetic arithmetic_of(const Entry& e, Op op, const std::string& kernel) {
  try {
    return parse_arithmetic(e.arithmetic, op);
  } catch (const std::invalid_argument& why) {
    throw PluginError(kernel + ": " + why.what());
  }
}

Conventions conventions_of(const Entry& e, Op op, const std::string& kernel) {
  try {
    Conventions c;
    c.not_produced = parse_not_produced(e.outputs, op);
    c.causal_alignment = parse_causal_alignment(e.causal_alignment, op);
    c.params = parse_param_format(e.params);
    c.tensor_formats = parse_tensor_formats(e.tensor_formats, op);
    // A uniform declaration says what dtype says, and is dropped; a mixed
    // one is judged tensor by tensor (docs/design.md#per-tensor-formats).
    if (uniform_formats(c, parse_format(e.dtype).value_or(Format::f32))) c.tensor_formats.clear();
    return c;
  } catch (const std::invalid_argument& why) {
    throw PluginError(kernel + ": " + why.what());
  }
}

}  // namespace moacert::kernels::plugin
