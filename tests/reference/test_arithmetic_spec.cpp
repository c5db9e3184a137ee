// The text of a declared arithmetic (reference/arithmetic_spec.hpp,
// docs/design.md#arithmetic): what it reads, what it refuses, and the
// order --arithmetic-at-most compares in.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "reference/arithmetic_spec.hpp"

namespace moacert {
namespace {

TEST(ArithmeticSpec, ReadsEachKindOfItemAndWritesItBack) {
  const Arithmetic a = parse_arithmetic(
      "sum=tensor_core; sum.PV = f16, round.P=storage, exp=4ulp, log=2.5 ulps, ftz=both",
      Op::attention_fwd);
  EXPECT_EQ(a.accumulation, Accumulation::tensor_core);
  EXPECT_EQ(a.accumulation_of("PV"), Accumulation::f16);
  EXPECT_EQ(a.accumulation_of("QK"), Accumulation::tensor_core);
  EXPECT_EQ(a.rounded_format("P", Format::bf16), Format::bf16);
  EXPECT_EQ(a.rounded_format("S", Format::bf16), std::nullopt);
  EXPECT_EQ(a.ulps_of("exp"), 4.0);
  EXPECT_EQ(a.ulps_of("log"), 2.5);
  EXPECT_EQ(a.flush, Flush::both);
  EXPECT_EQ(to_string(a),
            "sum=tensor_core, sum.PV=f16, round.P=storage, exp=4ulp, log=2.5ulp, ftz=both");
  EXPECT_EQ(parse_arithmetic(to_string(a), Op::attention_fwd), a);
  EXPECT_TRUE(parse_arithmetic("standard", Op::rmsnorm).standard());
  EXPECT_EQ(to_string(Arithmetic{}), "standard");
}

// One line naming the field, for each way a declaration can be wrong.
TEST(ArithmeticSpec, RefusesWhatTheOpsVocabularyLacks) {
  const struct {
    const char* spec;
    Op op;
    const char* says;
  } bad[] = {
      {"round.P=bf16", Op::rmsnorm, "arithmetic field 'round.P': the op has no intermediate 'P'"},
      {"sum.QK=f16", Op::attention_bwd, "arithmetic field 'sum.QK': the op has no contraction"},
      {"round.S=f8", Op::attention_fwd, "arithmetic field 'round.S': 'f8' is not one of"},
      {"sum=f16", Op::attention_fwd, "every contraction at once takes rounded or tensor_core"},
      {"exp=-1ulp", Op::attention_fwd, "'-1ulp' is not a finite, non-negative count of ulps"},
      {"exp=infulp", Op::attention_fwd, "is not a finite, non-negative count of ulps"},
      {"exp=nan", Op::attention_fwd, "is not a finite, non-negative count of ulps"},
      {"cos=1ulp", Op::attention_fwd, "arithmetic field 'cos': not in the vocabulary"},
      {"ftz=inputs", Op::mlp_swiglu, "no bound for flushed inputs"},
      {"round.P", Op::attention_fwd, "'round.P' is not NAME=VALUE"},
      {"round.P=bf16,,exp=2ulp", Op::attention_fwd, "an empty item"},
  };
  for (const auto& b : bad) {
    try {
      parse_arithmetic(b.spec, b.op);
      ADD_FAILURE() << b.spec << " was read";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
    }
  }
}

// --arithmetic-at-most: a looser accumulation, a rounding to fewer bits,
// more ulps or more flushing goes beyond; the same or less does not.
TEST(ArithmeticSpec, BeyondNamesTheFirstFreedomPastTheLimit) {
  const Op op = Op::attention_fwd;
  const Arithmetic standard;
  const Arithmetic fa2 = parse_arithmetic("sum=tensor_core, round.P=storage", op);
  EXPECT_EQ(beyond(fa2, standard, Format::bf16), "sum=tensor_core");
  EXPECT_EQ(beyond(fa2, fa2, Format::bf16), std::nullopt);
  EXPECT_EQ(beyond(standard, fa2, Format::bf16), std::nullopt);
  EXPECT_EQ(beyond(parse_arithmetic("round.P=bf16", op), parse_arithmetic("round.P=f16", op),
                   Format::f32),
            "round.P=bf16");
  EXPECT_EQ(beyond(parse_arithmetic("round.P=f16", op), parse_arithmetic("round.P=bf16", op),
                   Format::f32),
            std::nullopt);
  // storage is the call's format: bf16 storage is as narrow as bf16
  EXPECT_EQ(beyond(parse_arithmetic("round.P=storage", op), parse_arithmetic("round.P=bf16", op),
                   Format::bf16),
            std::nullopt);
  EXPECT_EQ(beyond(parse_arithmetic("exp=4ulp", op), standard, Format::f32), "exp=4ulp");
  EXPECT_EQ(beyond(parse_arithmetic("exp=2ulp", op), standard, Format::f32), std::nullopt);
  EXPECT_EQ(
      beyond(parse_arithmetic("sum.PV=f16", op), parse_arithmetic("sum.PV=tf32", op), Format::f32),
      "sum.PV=f16");
  EXPECT_EQ(
      beyond(parse_arithmetic("ftz=both", op), parse_arithmetic("ftz=inputs", op), Format::f32),
      "ftz=both");
}

}  // namespace
}  // namespace moacert
