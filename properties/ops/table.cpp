#include "properties/ops/table.hpp"

namespace moacert::properties {

namespace {

PropertyOp entry(Op op) {
  switch (op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
    case Op::attention_decode:
      return attention_op(op);
    case Op::rmsnorm:
      return rmsnorm_op();
    case Op::mlp_swiglu:
      return swiglu_op();
    case Op::block:
      return block_op();
  }
  throw std::logic_error("property_op: an op without an entry");
}

}  // namespace

const PropertyOp& property_op(Op op) {
  static const std::vector<PropertyOp> table = [] {
    std::vector<PropertyOp> out;
    for (const OpInfo& o : all_ops()) out.push_back(entry(o.op));
    return out;
  }();
  return table.at(static_cast<std::size_t>(op));
}

}  // namespace moacert::properties
