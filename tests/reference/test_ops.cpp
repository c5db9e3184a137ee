// The ops table's traits and the tensors by name that derive from it
// (reference/ops.hpp, reference/named.hpp).
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "reference/named.hpp"
#include "reference/problem.hpp"

namespace moacert {
namespace {

TEST(Ops, FamiliesAreThoseOfTheDesign) {
  EXPECT_EQ(info(Op::attention_fwd).family, Family::attention);
  EXPECT_EQ(info(Op::attention_decode).family, Family::attention);
  EXPECT_EQ(info(Op::rmsnorm).family, Family::rows);
  EXPECT_EQ(info(Op::mlp_swiglu).family, Family::rows);
  EXPECT_EQ(info(Op::block).family, Family::block);
  EXPECT_TRUE(is_attention(Op::attention_fwdbwd));
  EXPECT_FALSE(is_attention(Op::block));
}

// Exactly one tensor of all the ops holds integers, decode's lens, and it
// is known by its element type, not by its position.
TEST(Ops, TheOnlyIndexInputIsDecodesLens) {
  int index_inputs = 0;
  for (const OpInfo& o : all_ops()) {
    ASSERT_EQ(o.input_elements.size(), o.inputs.size()) << o.name;
    ASSERT_EQ(o.output_elements.size(), o.outputs.size()) << o.name;
    for (std::size_t k = 0; k < o.inputs.size(); ++k) {
      if (!is_index_input(o.op, k)) continue;
      ++index_inputs;
      EXPECT_EQ(o.op, Op::attention_decode);
      EXPECT_EQ(o.inputs[k], "lens");
      EXPECT_EQ(k, input_position(Op::attention_decode, "lens"));
    }
    for (Element e : o.output_elements) EXPECT_EQ(e, Element::real) << o.name;
  }
  EXPECT_EQ(index_inputs, 1);
}

TEST(Ops, TensorsByNameFollowTheSignature) {
  std::vector<std::string> bwd_inputs = {"q", "k", "v", "o", "lse", "do"};
  const auto in = inputs_by_name(Op::attention_bwd, bwd_inputs);
  for (std::string_view name : info(Op::attention_bwd).inputs) EXPECT_EQ(in[name], name);
  std::array<std::string, 10> block_inputs;
  for (std::size_t k = 0; k < block_inputs.size(); ++k)
    block_inputs[k] = std::string(info(Op::block).inputs[k]);
  EXPECT_EQ(inputs_by_name(Op::block, block_inputs)["wo"], "wo");
  const std::vector<int> fwd_outputs = {7, 8};
  EXPECT_EQ(outputs_by_name(Op::attention_fwd, fwd_outputs)["lse"], 8);
  EXPECT_TRUE(in.has("do"));
  EXPECT_FALSE(in.has("wo"));
}

TEST(Ops, ANameOrACountTheSignatureLacksIsAProgrammingError) {
  std::vector<int> three = {1, 2, 3};
  EXPECT_THROW(inputs_by_name(Op::attention_bwd, three), std::logic_error);
  const auto in = inputs_by_name(Op::attention_fwd, three);
  EXPECT_THROW(in["do"], std::logic_error);
}

// The checks derived from the signature refuse what the per-op checks
// refused, naming the op and the dimension.
TEST(Ops, ValidateReadsTheSignature) {
  auto refusal = [](Problem p) {
    try {
      validate(p);
    } catch (const moa::ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  Problem decode{Op::attention_decode, Format::f32, {}, {}};
  decode.dims.M = 0;
  EXPECT_EQ(refusal(decode), "attention.decode: dimension L is 0, must be positive");
  decode.dims.M = 4;
  decode.dims.N = 2;
  EXPECT_EQ(refusal(decode), "attention.decode: dimension N is 2, must be 1");
  Problem swiglu{Op::mlp_swiglu, Format::f32, {}, {}};
  swiglu.dims.F = -3;
  EXPECT_EQ(refusal(swiglu), "mlp.swiglu: dimension F is -3, must be positive");
  Problem gqa{Op::attention_fwd, Format::f32, {}, {}};
  gqa.dims.H = 3;
  gqa.dims.Hkv = 2;
  EXPECT_EQ(refusal(gqa), "attention.fwd: H (3) is not a multiple of Hkv (2)");
  Problem block{Op::block, Format::f32, {}, {}};
  block.dims.H = block.dims.D = moa::extent_t(1) << 40;
  EXPECT_EQ(refusal(block), "block: H*D overflows int64");
  block.dims.H = block.dims.D = 1;
  block.params.eps = -1;
  EXPECT_EQ(refusal(block), "block: parameter eps (-1.000000) must be non-negative and finite");
  Problem rows{Op::rmsnorm, Format::f32, {}, {}};
  EXPECT_EQ(refusal(rows), "accepted");
}

}  // namespace
}  // namespace moacert
