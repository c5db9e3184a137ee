// The ops of docs/design.md: their names (part of the interface), and the names
// of their inputs, outputs and parameters in the table's order.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace moacert {

enum class Op {
  attention_fwd,
  attention_bwd,
  attention_fwdbwd,
  attention_decode,
  rmsnorm,
  mlp_swiglu,
  block
};

struct OpInfo {
  Op op;
  std::string_view name;
  std::vector<std::string_view> inputs;
  std::vector<std::string_view> outputs;
  std::vector<std::string_view> params;
};

inline const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = {
      {Op::attention_fwd, "attention.fwd", {"q", "k", "v"}, {"o", "lse"}, {"scale", "causal"}},
      {Op::attention_bwd,
       "attention.bwd",
       {"q", "k", "v", "o", "lse", "do"},
       {"dq", "dk", "dv"},
       {"scale", "causal"}},
      {Op::attention_fwdbwd,
       "attention.fwdbwd",
       {"q", "k", "v", "do"},
       {"o", "lse", "dq", "dk", "dv"},
       {"scale", "causal"}},
      {Op::attention_decode, "attention.decode", {"q", "k", "v", "lens"}, {"o", "lse"}, {"scale"}},
      {Op::rmsnorm, "rmsnorm", {"x", "w"}, {"y"}, {"eps"}},
      {Op::mlp_swiglu, "mlp.swiglu", {"x", "w1", "w3", "w2"}, {"y"}, {}},
      {Op::block,
       "block",
       {"x", "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w1", "w3", "w2"},
       {"y"},
       {"heads", "kv_heads", "eps"}},
  };
  return ops;
}

inline const OpInfo& info(Op op) {
  return all_ops()[static_cast<std::size_t>(op)];
}

inline std::optional<Op> parse_op(std::string_view s) {
  for (const OpInfo& o : all_ops())
    if (o.name == s) return o.op;
  return std::nullopt;
}

}  // namespace moacert
