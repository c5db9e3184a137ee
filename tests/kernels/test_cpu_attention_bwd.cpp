// attention.bwd, cpu.flash_bwd, within the oracle's a priori bounds of each
// case; o and lse are the oracle's correctly rounded forward (as certify
// hands them over, docs/design.md).
#include <gtest/gtest.h>

#include <limits>

#include "tests/kernels/attention_cases.hpp"

namespace moacert::test {
namespace {

// q, k, v, dO random; o and lse the oracle's correctly rounded forward.
Case bwd_case(const Problem& p, LayoutKind kind, std::uint64_t seed) {
  return with_oracle_forward(make_case(p, seed, kind));
}

const kernels::Variant& flash_bwd() {
  return variant(Op::attention_bwd, "cpu.flash_bwd");
}

class FlashBwd : public ::testing::TestWithParam<std::tuple<Format, AttnCase>> {};

TEST_P(FlashBwd, WithinTheOracleBounds) {
  const auto [format, ac] = GetParam();
  const Case c = bwd_case(attention_problem(Op::attention_bwd, format, ac.shape), ac.layout, 11);
  EXPECT_TRUE(within_bounds(reference(c), run(flash_bwd(), c, ac.layout)));
}

TEST_P(FlashBwd, OneAndTwoThreadsAreBitwiseEqual) {
  const auto [format, ac] = GetParam();
  const Case c = bwd_case(attention_problem(Op::attention_bwd, format, ac.shape), ac.layout, 12);
  const auto one = run(flash_bwd(), c, ac.layout, 1), two = run(flash_bwd(), c, ac.layout, 2);
  for (int t = 0; t < 3; ++t) EXPECT_TRUE(same_storage_bits(one[t], two[t])) << "output " << t;
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashBwd,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kAttnCases)),
                         attn_param_name);

// Row with no visible key: lse = -inf, and the row contributes nothing. With
// N = 6, M = 2, causal, rows 0..3 see no key; their dO is NaN here, so any
// contribution from them would show.
TEST(FlashBwdEdge, RowsWithNoVisibleKeyContributeNothing) {
  const Problem p = attention_problem(Op::attention_bwd, Format::f64, {1, 1, 1, 6, 2, 3, true, 0});
  Case c = bwd_case(p, LayoutKind::row_major, 13);
  for (extent_t i = 0; i < 4; ++i) {
    ASSERT_EQ(c.inputs[4].get({0, 0, i}), -std::numeric_limits<double>::infinity());
    for (extent_t d = 0; d < 3; ++d) c.inputs[5].set({0, 0, i, d}, std::nan(""));
  }
  const auto out = run(flash_bwd(), c);
  for (extent_t i = 0; i < 4; ++i)
    for (extent_t d = 0; d < 3; ++d) EXPECT_EQ(out[0].get({0, 0, i, d}), 0.0) << "dq row " << i;
  for (const moa::Index& i : moa::iota(out[1].shape())) {
    EXPECT_TRUE(std::isfinite(out[1].get(i))) << "dk " << i.str();
    EXPECT_TRUE(std::isfinite(out[2].get(i))) << "dv " << i.str();
  }
}

// A key receives nothing from a row that does not see it: with causal
// N = M = 12, row 0 sees key 0 only; a NaN in its dO must reach dV_0 and dK_0
// (as in the DNF) and no other key.
TEST(FlashBwdEdge, KeysARowDoesNotSeeGetNothingFromIt) {
  for (const Format f : {Format::f64, Format::f32}) {
    const Problem p = attention_problem(Op::attention_bwd, f, {1, 1, 1, 12, 12, 4, true, 0});
    Case c = bwd_case(p, LayoutKind::row_major, 14);
    c.inputs[5].set({0, 0, 0, 1}, std::nan(""));
    const auto out = run(flash_bwd(), c);
    EXPECT_TRUE(std::isnan(out[2].get({0, 0, 0, 1}))) << name(f) << " dv of key 0";
    for (extent_t j = 1; j < 12; ++j) {
      for (extent_t d = 0; d < 4; ++d) {
        EXPECT_TRUE(std::isfinite(out[1].get({0, 0, j, d}))) << name(f) << " dk " << j;
        EXPECT_TRUE(std::isfinite(out[2].get({0, 0, j, d}))) << name(f) << " dv " << j;
      }
    }
  }
}

}  // namespace
}  // namespace moacert::test
