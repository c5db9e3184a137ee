// A fragment loaded in the wrong layout (issue #30 item 2): simt.flash_tc
// built with MOACERT_PLANTED_FRAGMENT_LAYOUT reads V's mma fragments
// without .trans. No hazard fires (the addresses are the right ones), so
// only the values can tell; certify must fail it where the fixed kernel,
// on the same cases, holds. M = 1 (one key: P = 1, O = V) so that the fixed
// kernel holds within today's bound (docs/cuda.md: with M > 1 it does not
// yet, issue #30 item 3).
#include <gtest/gtest.h>

#include <span>
#include <string>

#include "kernels/registry.hpp"
#include "properties/certify.hpp"
#include "tests/cuda/flash_tc_planted.hpp"

namespace moacert {
namespace {

properties::CertifyOptions options_for(const kernels::Variant& v, moa::extent_t D) {
  properties::CertifyOptions o;
  o.variant = &v;
  o.format = Format::bf16;
  o.cases = 3;
  o.seed = 7;
  o.equivalence = false;
  o.shape.set(&Dims::D, {D, D});
  o.shape.set(&Dims::M, {1, 1});
  return o;
}

class FlashTcPlanted : public ::testing::TestWithParam<moa::extent_t> {};

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
  planted.take_counts = nullptr;
  planted.take_count_mismatch = nullptr;
  planted.take_launch_counts = nullptr;
  const auto planted_cert = properties::certify(options_for(planted, GetParam()));
  EXPECT_FALSE(planted_cert.holds);
  RecordProperty("planted_failure", planted_cert.failure);
  // Caught by its values, not by a hazard or a refusal.
  EXPECT_NE(planted_cert.failure.find("error"), std::string::npos) << planted_cert.failure;
  EXPECT_EQ(planted_cert.failure.find("threw"), std::string::npos) << planted_cert.failure;
}

INSTANTIATE_TEST_SUITE_P(HeadWidths, FlashTcPlanted, ::testing::Values(64, 128));

}  // namespace
}  // namespace moacert
