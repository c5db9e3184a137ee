#include "oracle/ops/table.hpp"

#include <stdexcept>
#include <string>

namespace moacert::oracle {

namespace {

// The one switch on the op in oracle/: a new op fails to compile here
// (-Wswitch) until its row is written.
OracleOp row_of(Op op) {
  switch (op) {
    case Op::attention_fwd:
      return ops::attention_fwd();
    case Op::attention_bwd:
      return ops::attention_bwd();
    case Op::attention_fwdbwd:
      return ops::attention_fwdbwd();
    case Op::attention_decode:
      return ops::attention_decode();
    case Op::rmsnorm:
      return ops::rmsnorm();
    case Op::mlp_swiglu:
      return ops::mlp_swiglu();
    case Op::block:
      return ops::block();
  }
  throw std::logic_error("oracle: no table row for op " + std::to_string(static_cast<int>(op)));
}

}  // namespace

const OracleOp& oracle_op(Op op) {
  static const std::vector<OracleOp> table = [] {
    std::vector<OracleOp> t;
    for (const OpInfo& o : all_ops()) t.push_back(row_of(o.op));
    return t;
  }();
  return table[static_cast<std::size_t>(op)];
}

}  // namespace moacert::oracle
