// Case files: a round trip keeps every value, layout and parameter; the
// reader takes exactly the values of the dtype and names the field it
// refuses. (tests/oracle/cases/bad/ covers the refusals through the CLI.)
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include <nlohmann/json.hpp>

#include "oracle/case_json.hpp"
#include "tests/support/harness.hpp"

namespace moacert::oracle {
namespace {

using nlohmann::json;

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

TEST(CaseJson, RoundTripEveryOpAndFormat) {
  for (const OpInfo& op : all_ops()) {
    for (Format f : kAllFormats) {
      SCOPED_TRACE(std::string(op.name) + " " + std::string(name(f)));
      Case c = test::make_case(
          op.op, f, test::small_dims(op.op), 31, /*causal=*/true,
          f == Format::bf16 ? moa::LayoutKind::col_major : moa::LayoutKind::row_major);
      if (op.op == Op::rmsnorm) c.problem.params.eps = 0x1.5p-17;
      if (op.op == Op::attention_fwd) c.problem.params.scale = 0.3;
      const json j = json::parse(write_case(c).dump());  // through text
      const Case back = read_case(j);
      EXPECT_EQ(back.problem.op, c.problem.op);
      EXPECT_EQ(back.problem.format, c.problem.format);
      EXPECT_EQ(back.problem.dims, c.problem.dims);
      EXPECT_EQ(back.problem.params.scale, c.problem.params.scale);
      if (op.op == Op::rmsnorm || op.op == Op::block) {
        EXPECT_EQ(back.problem.params.eps, c.problem.params.eps);
      }
      ASSERT_EQ(back.inputs.size(), c.inputs.size());
      for (std::size_t k = 0; k < c.inputs.size(); ++k) {
        EXPECT_EQ(back.inputs[k].layout(), c.inputs[k].layout());
        EXPECT_EQ(back.inputs[k].dtype(), c.inputs[k].dtype());
        for (const moa::Index& i : moa::iota(c.inputs[k].shape()))
          EXPECT_TRUE(same_bits(back.inputs[k].get(i), c.inputs[k].get(i)));
      }
    }
  }
}

// A generated case's broadcast inputs (stride 0 on the batch axis), as
// `reproduce --save` writes them, read back in the same layout with the
// same values: stride 0 is a broadcast, not an alias to refuse.
TEST(CaseJson, RoundTripBroadcastStrides) {
  Dims dims = test::small_dims(Op::attention_fwd);
  dims.B = 3;
  const Case c =
      test::make_case(Op::attention_fwd, Format::f32, dims, 5, false, moa::LayoutKind::broadcast);
  ASSERT_EQ(c.inputs[1].layout().strides()[0], 0);
  const Case back = read_case(json::parse(write_case(c).dump()));
  ASSERT_EQ(back.inputs.size(), c.inputs.size());
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    EXPECT_EQ(back.inputs[k].layout(), c.inputs[k].layout());
    for (const moa::Index& i : moa::iota(c.inputs[k].shape()))
      EXPECT_TRUE(same_bits(back.inputs[k].get(i), c.inputs[k].get(i)));
  }
}

// A one-tensor rmsnorm case with x's data replaced.
json rmsnorm_doc(const std::string& dtype, const std::vector<std::string>& x) {
  json data = json::array();
  for (const auto& s : x) data.push_back(s);
  json w = json::array();
  for (std::size_t i = 0; i < x.size(); ++i) w.push_back("0x1p+0");
  return {{"op", "rmsnorm"},
          {"dtype", dtype},
          {"tensors",
           {{"x", {{"shape", {1, x.size()}}, {"data", data}}},
            {"w", {{"shape", {x.size()}}, {"data", w}}}}}};
}

std::string error_of(const json& j) {
  try {
    read_case(j);
  } catch (const CaseError& e) {
    return e.what();
  }
  return "";
}

TEST(CaseJson, ExactValuesOfTheDtypeOnly) {
  // Subnormals, signed zero and the non-finite spellings are values.
  const Case c = read_case(rmsnorm_doc("f32", {"0x1p-149", "-0x0p+0", "inf", "-inf", "nan",
                                               "0x1.fffffep+127", "0X1.8P-1", "0x.8p1"}));
  EXPECT_EQ(c.inputs[0].get({0, 0}), 0x1p-149);
  EXPECT_TRUE(std::signbit(c.inputs[0].get({0, 1})));
  EXPECT_EQ(c.inputs[0].get({0, 2}), INFINITY);
  EXPECT_EQ(c.inputs[0].get({0, 3}), -INFINITY);
  EXPECT_TRUE(std::isnan(c.inputs[0].get({0, 4})));
  EXPECT_EQ(c.inputs[0].get({0, 6}), 0.75);
  EXPECT_EQ(c.inputs[0].get({0, 7}), 1.0);
  // Not values of the dtype.
  EXPECT_EQ(error_of(rmsnorm_doc("f32", {"0x1p-150"})),
            "tensors.x.data[0]: \"0x1p-150\" is not representable in f32");
  EXPECT_EQ(error_of(rmsnorm_doc("f32", {"0x1p+128"})),
            "tensors.x.data[0]: \"0x1p+128\" is not representable in f32");
  EXPECT_EQ(error_of(rmsnorm_doc("f16", {"0x1p-25"})),
            "tensors.x.data[0]: \"0x1p-25\" is not representable in f16");
  EXPECT_EQ(error_of(rmsnorm_doc("bf16", {"0x1.01p+0"})),
            "tensors.x.data[0]: \"0x1.01p+0\" is not representable in bf16");
  EXPECT_EQ(error_of(rmsnorm_doc("f64", {"0x1.00000000000008p+0"})),
            "tensors.x.data[0]: \"0x1.00000000000008p+0\" is not representable in f64");
  // Not hex floats.
  for (const char* s : {"1.5", "0x1.8", "0x1.8p", "0xp1", "+0x1p0", "Inf", "-nan", "0x1p1 ", ""})
    EXPECT_NE(error_of(rmsnorm_doc("f32", {s})).find("is not a hex float"), std::string::npos) << s;
}

TEST(CaseJson, AnswerHasTheCaseForm) {
  const Case c = test::make_case(Op::rmsnorm, Format::f16, test::small_dims(Op::rmsnorm), 32);
  const Answer a = evaluate(c, {.exact_digits = 40});
  const json j = write_answer(c, a);
  EXPECT_EQ(j.at("op"), "rmsnorm");
  const json& y = j.at("tensors").at("y");
  EXPECT_EQ(y.at("shape"), json({2, 5}));
  ASSERT_EQ(y.at("data").size(), 10u);
  ASSERT_EQ(y.at("exact").size(), 10u);
  EXPECT_EQ(y.at("data")[0].get<std::string>(), hex_float(a.outputs[0].rounded[0]));
  EXPECT_FALSE(j.contains("undetermined"));
}

}  // namespace
}  // namespace moacert::oracle
