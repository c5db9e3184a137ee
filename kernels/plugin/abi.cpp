#include "kernels/plugin/abi.hpp"

#include <cstdio>

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

std::string params_json(const Problem& p) {
  char buf[256];
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      std::snprintf(buf, sizeof buf, "{\"scale\":%.17g,\"causal\":%s}", p.scale(),
                    p.causal() ? "true" : "false");
      break;
    case Op::attention_decode:
      std::snprintf(buf, sizeof buf, "{\"scale\":%.17g}", p.scale());
      break;
    case Op::rmsnorm:
      std::snprintf(buf, sizeof buf, "{\"eps\":%.17g}", p.params.eps);
      break;
    case Op::mlp_swiglu:
      std::snprintf(buf, sizeof buf, "{}");
      break;
    case Op::block:
      std::snprintf(buf, sizeof buf, "{\"heads\":%lld,\"kv_heads\":%lld,\"eps\":%.17g}",
                    static_cast<long long>(p.dims.H), static_cast<long long>(p.dims.Hkv),
                    p.params.eps);
      break;
  }
  return buf;
}

}  // namespace moacert::kernels::plugin
