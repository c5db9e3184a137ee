// Conventions (reference/conventions.hpp, docs/design.md#conventions): each
// field read as declared, refused in one line naming the field, and the
// problem as a kernel declaring them takes it.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "reference/conventions.hpp"

namespace moacert {
namespace {

// The message `fn` throws (std::invalid_argument), or "" when it does not.
template <class Fn>
std::string refusal(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Conventions, OutputsNameWhatIsWrittenAndReturnWhatIsNot) {
  const Op fwd = Op::attention_fwd;
  EXPECT_EQ(parse_not_produced("o", fwd), std::vector<std::string>{"lse"});
  EXPECT_TRUE(parse_not_produced("", fwd).empty());
  EXPECT_TRUE(parse_not_produced("lse, o", fwd).empty());
  EXPECT_EQ(parse_not_produced("dq dk", Op::attention_bwd), std::vector<std::string>{"dv"});
  EXPECT_EQ(refusal([&] { parse_not_produced("o,lse2", fwd); }),
            "outputs: 'lse2' is not an output of attention.fwd (its outputs: o, lse)");
  EXPECT_EQ(refusal([&] { parse_not_produced("o,o", fwd); }), "outputs: 'o' is named twice");
  EXPECT_EQ(refusal([&] { parse_not_produced(" , ", fwd); }),
            "outputs: names no output; the op has o, lse");
}

TEST(Conventions, AlignmentAndParameterFormats) {
  EXPECT_EQ(parse_causal_alignment("", Op::attention_fwd), CausalAlignment::bottom_right);
  EXPECT_EQ(parse_causal_alignment("top_left", Op::attention_bwd), CausalAlignment::top_left);
  EXPECT_EQ(refusal([] { parse_causal_alignment("diagonal", Op::attention_fwd); }),
            "causal_alignment: 'diagonal' is not bottom_right or top_left");
  // Decode has no causal option: its one query sees its lens.
  EXPECT_EQ(refusal([] { parse_causal_alignment("top_left", Op::attention_decode); }),
            "causal_alignment: attention.decode has no causal option");
  EXPECT_EQ(parse_param_format("f32"), ParamFormat::f32);
  EXPECT_EQ(refusal([] { parse_param_format("f16"); }), "params: 'f16' is not f64 or f32");
}

TEST(Conventions, TensorFormatsNameFloatTensorsAndMixedOnesAreTaken) {
  const Op decode = Op::attention_decode;
  const auto formats = parse_tensor_formats("q=f32, k=f16,v=f16 o=f32", decode);
  ASSERT_EQ(formats.size(), 4u);
  EXPECT_EQ(formats[1], (std::pair<std::string, Format>{"k", Format::f16}));
  EXPECT_EQ(refusal([&] { parse_tensor_formats("lens=f32", decode); }),
            "tensor_formats: 'lens' is not a tensor of attention.decode with a format (its "
            "tensors: q, k, v, o, lse)");
  EXPECT_EQ(refusal([&] { parse_tensor_formats("q=f8", decode); }),
            "tensor_formats: q: 'f8' is not a format (f64, f32, bf16, f16)");
  EXPECT_EQ(refusal([&] { parse_tensor_formats("q", decode); }),
            "tensor_formats: 'q' is not TENSOR=FORMAT (q=f32)");
  EXPECT_EQ(refusal([&] { parse_tensor_formats("q=f32,q=f16", decode); }),
            "tensor_formats: 'q' is named twice");
  Conventions c;
  c.tensor_formats = formats;
  EXPECT_FALSE(uniform_formats(c, Format::f16));
  // As taken: each tensor in its declared format, the rest in the dtype
  // (docs/design.md#per-tensor-formats).
  Problem p;
  p.op = decode;
  p.format = Format::f16;
  const Problem taken = as_taken(p, c);
  EXPECT_TRUE(mixed_formats(taken));
  EXPECT_EQ(input_format(taken, 0), Format::f32);   // q
  EXPECT_EQ(input_format(taken, 1), Format::f16);   // k
  EXPECT_EQ(output_format(taken, 0), Format::f32);  // o
  EXPECT_EQ(output_format(taken, 1), Format::f16);  // lse, not named: the dtype
  EXPECT_FALSE(all_f64(taken));
  EXPECT_EQ(input_dtype(taken, 3), DType::i64);  // lens
  EXPECT_EQ(make_outputs(taken)[0].dtype(), DType::f32);
  // A case in one format has its inputs rounded into theirs.
  Case k{p, {}};
  for (const moa::Shape& s : input_shapes(p))
    k.inputs.emplace_back(k.inputs.size() == 3 ? DType::i64 : DType::f16,
                          moa::Layout::row_major(s));
  k.inputs[3].set({0}, 1);
  const Case kt = as_taken(k, c);
  EXPECT_EQ(kt.inputs[0].dtype(), DType::f32);
  EXPECT_EQ(kt.inputs[1].dtype(), DType::f16);
  EXPECT_EQ(kt.inputs[3].get({0}), 1);
  // A uniform declaration says what the dtype says: nothing taken.
  c.tensor_formats = parse_tensor_formats("q=f16,k=f16", decode);
  EXPECT_TRUE(uniform_formats(c, Format::f16));
  EXPECT_FALSE(mixed_formats(as_taken(p, c)));
  EXPECT_TRUE(as_taken(p, c).tensor_formats.empty());
}

// The problem as the kernel takes it: its mask's alignment, and scale and
// eps rounded to f32 where it reads them so; moacert's own convention
// leaves it as it was.
TEST(Conventions, TheProblemAsTakenIsWhatTheKernelComputesWith) {
  Problem p;
  p.op = Op::attention_fwd;
  p.dims.D = 3;  // 1/sqrt(3) is no float
  p.params.causal = true;
  EXPECT_EQ(as_taken(p, {}).params, p.params);
  Conventions c;
  c.params = ParamFormat::f32;
  c.causal_alignment = CausalAlignment::top_left;
  const Problem taken = as_taken(p, c);
  EXPECT_EQ(taken.scale(), double(float(1 / std::sqrt(3.0))));
  EXPECT_NE(taken.scale(), p.scale());
  EXPECT_EQ(taken.mask(), causal::Mask(true, CausalAlignment::top_left));
  EXPECT_EQ(as_taken(taken, c).params, taken.params);  // taken twice: the same
  Problem norm;
  norm.op = Op::rmsnorm;
  norm.params.eps = 1e-6;
  EXPECT_EQ(as_taken(norm, c).params.eps, double(1e-6f));
  EXPECT_EQ(to_string(c), "causal_alignment top_left; params f32");
  EXPECT_EQ(to_string(Conventions{}), "standard");
}

}  // namespace
}  // namespace moacert
