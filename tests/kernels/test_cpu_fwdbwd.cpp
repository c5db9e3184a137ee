// attention.fwdbwd: the vectorised cpu.fused and the scalar generic template
// of the same ONF (fwdbwd_generic.hpp), within the oracle's a priori bounds.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/attention_fwdbwd/fused_generic.hpp"
#include "tests/kernels/attention_cases.hpp"

namespace moacert::test {
namespace {

const kernels::Variant& fused() {
  return variant(Op::attention_fwdbwd, "cpu.fused");
}

class FusedFwdBwd : public ::testing::TestWithParam<std::tuple<Format, AttnCase>> {};

TEST_P(FusedFwdBwd, WithinTheOracleBounds) {
  const auto [format, ac] = GetParam();
  const Case c =
      make_case(attention_problem(Op::attention_fwdbwd, format, ac.shape), 21, ac.layout);
  EXPECT_TRUE(within_bounds(reference(c), run(fused(), c, ac.layout)));
}

TEST_P(FusedFwdBwd, OneAndTwoThreadsAreBitwiseEqual) {
  const auto [format, ac] = GetParam();
  const Case c =
      make_case(attention_problem(Op::attention_fwdbwd, format, ac.shape), 22, ac.layout);
  const auto one = run(fused(), c, ac.layout, 1), two = run(fused(), c, ac.layout, 2);
  for (int t = 0; t < 5; ++t) EXPECT_TRUE(same_storage_bits(one[t], two[t])) << "output " << t;
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedFwdBwd,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kAttnCases)),
                         attn_param_name);

// The scalar generic template of the ONF, instantiated with double, with
// tiles that leave tails (3 × 4) and with one tile covering everything.
class GenericFwdBwd : public ::testing::TestWithParam<AttnCase> {};

TEST_P(GenericFwdBwd, WithinTheOracleBounds) {
  const AttnCase ac = GetParam();
  const Case c =
      make_case(attention_problem(Op::attention_fwdbwd, Format::f64, ac.shape), 23, ac.layout);
  const Reference ref = reference(c);
  for (const auto& [block_m, block_n] : {std::pair<extent_t, extent_t>{3, 4}, {64, 256}}) {
    std::vector<AnyTensor> out = nan_outputs(c.problem, ac.layout);
    kernels::cpu::fused_fwdbwd_generic<double>(
        c.inputs[0].view<double>(), c.inputs[1].view<double>(), c.inputs[2].view<double>(),
        c.inputs[3].view<double>(), c.problem.scale(), c.problem.causal(), out[0].view<double>(),
        out[1].view<double>(), out[2].view<double>(), out[3].view<double>(), out[4].view<double>(),
        block_m, block_n);
    EXPECT_TRUE(within_bounds(
        ref, out, "blocks " + std::to_string(block_m) + " x " + std::to_string(block_n)));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GenericFwdBwd, ::testing::ValuesIn(kAttnCases),
                         [](const ::testing::TestParamInfo<AttnCase>& param) {
                           return attn_param_name({{Format::f64, param.param}, param.index});
                         });

}  // namespace
}  // namespace moacert::test
