// A fragment loaded in the wrong layout (issue #30 item 2): simt.flash_tc
// built with MOACERT_PLANTED_FRAGMENT_LAYOUT reads V's mma fragments
// without .trans. No hazard fires (the addresses are the right ones), so
// only the values can tell; certify must fail it where the fixed kernel,
// on the same cases, holds under the a priori bound of its declared
// arithmetic (tensor cores, P rounded to bf16: docs/bounds.md#tensor-cores).
// Several key tiles (M up to 100: the cp.async pipeline turns over), and
// M = 1 (one key: P = 1, O = V).
#include <gtest/gtest.h>

#include <ostream>
#include <span>
#include <string>

#include "kernels/registry.hpp"
#include "properties/certify.hpp"
#include "tests/cuda/flash_tc_planted.hpp"

namespace moacert {
namespace {

struct Shape {
  moa::extent_t D, M_lo, M_hi;
  friend std::ostream& operator<<(std::ostream& os, const Shape& s) {
    return os << "D=" << s.D << ",M=" << s.M_lo << ".." << s.M_hi;
  }
};

properties::CertifyOptions options_for(const kernels::Variant& v, const Shape& s) {
  properties::CertifyOptions o;
  o.variant = &v;
  o.format = Format::bf16;
  o.cases = 3;
  o.seed = 7;
  o.equivalence = false;
  o.shape.set(&Dims::D, {s.D, s.D});
  o.shape.set(&Dims::N, {1, 70});
  o.shape.set(&Dims::M, {s.M_lo, s.M_hi});
  return o;
}

// The declaration is what the fixed kernel's bound rests on, and each half
// of it is needed: the same kernel, declaring rounded accumulation, or
// tensor-core accumulation without the rounding of P to bf16, fails on
// several key tiles (by 8.2 and 4.1 times on certify's first curated case,
// docs/bounds.md#tensor-cores).
TEST(FlashTcArithmetic, UndeclaredRoundingOfPFailsItsBound) {
  const kernels::Variant* fixed =
      kernels::Registry::builtin().find(Op::attention_fwd, "simt.flash_tc");
  ASSERT_NE(fixed, nullptr);
  EXPECT_EQ(fixed->arithmetic.accumulation, Accumulation::tensor_core);
  EXPECT_EQ(fixed->arithmetic.rounding_of("P"), Rounding::storage);
  for (const Arithmetic& claimed :
       {Arithmetic{}, Arithmetic{.accumulation = Accumulation::tensor_core}}) {
    kernels::Variant undeclared = *fixed;
    undeclared.arithmetic = claimed;
    const auto cert = properties::certify(options_for(undeclared, {64, 33, 100}));
    EXPECT_FALSE(cert.holds);
    EXPECT_NE(cert.failure.find("error"), std::string::npos) << cert.failure;
  }
}

// "D64_M33to100"
std::string shape_name(const ::testing::TestParamInfo<Shape>& p) {
  std::string name("D");
  name.append(std::to_string(p.param.D)).append("_M").append(std::to_string(p.param.M_lo));
  return name.append("to").append(std::to_string(p.param.M_hi));
}

class FlashTcPlanted : public ::testing::TestWithParam<Shape> {};

TEST_P(FlashTcPlanted, FixedHoldsPlantedIsCaughtByItsValues) {
  const kernels::Variant* fixed =
      kernels::Registry::builtin().find(Op::attention_fwd, "simt.flash_tc");
  ASSERT_NE(fixed, nullptr);
  const auto fixed_cert = properties::certify(options_for(*fixed, GetParam()));
  EXPECT_TRUE(fixed_cert.holds) << fixed_cert.failure;

  kernels::Variant planted = *fixed;
  planted.name = "simt.flash_tc_planted";
  planted.run = [](const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
                   const kernels::RunOptions&) { tests::run_planted_flash_tc(p, in, out); };
  planted.instrumentation = nullptr;  // its launches are not simt.flash_tc's
  const auto planted_cert = properties::certify(options_for(planted, GetParam()));
  EXPECT_FALSE(planted_cert.holds);
  RecordProperty("planted_failure", planted_cert.failure);
  // Caught by its values, not by a hazard or a refusal.
  EXPECT_NE(planted_cert.failure.find("error"), std::string::npos) << planted_cert.failure;
  EXPECT_EQ(planted_cert.failure.find("threw"), std::string::npos) << planted_cert.failure;
}

INSTANTIATE_TEST_SUITE_P(HeadWidths, FlashTcPlanted,
                         ::testing::Values(Shape{64, 1, 1}, Shape{128, 1, 1}, Shape{64, 33, 100},
                                           Shape{128, 33, 100}),
                         shape_name);

}  // namespace
}  // namespace moacert
