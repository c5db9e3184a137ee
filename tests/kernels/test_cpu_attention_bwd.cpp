// attention.bwd, cpu.flash_bwd, against the DNF in double on the exact
// values it receives; o and lse are the DNF's forward outputs rounded to the
// format (as the oracle hands them over, docs/design.md).
#include <gtest/gtest.h>

#include <limits>

#include "reference/dnf/attention.hpp"
#include "tests/kernels/attention_cases.hpp"

namespace moacert::kernels::testing {
namespace {

struct BwdInputs {
  std::vector<AnyTensor> in;  // q, k, v, o, lse, do
  moa::Tensor<double> dq, dk, dv;
  double weight;  // max_j Σ_i P_ij
};

BwdInputs make_case(const Problem& p, LayoutKind kind, unsigned seed) {
  std::mt19937 rng(seed);
  const DType dt = dtype_of(p.format);
  const auto shapes = input_shapes(p);
  BwdInputs c;
  AnyTensor q = random_tensor(dt, shapes[0], kind, rng),
            k = random_tensor(dt, shapes[1], kind, rng),
            v = random_tensor(dt, shapes[2], kind, rng),
            dout = random_tensor(dt, shapes[5], kind, rng);
  const auto qd = to_double(q), kd = to_double(k), vd = to_double(v), dod = to_double(dout);
  moa::Tensor<double> o(shapes[3]), lse(shapes[4]);
  dnf::attention_fwd<double>(qd.view(), kd.view(), vd.view(), p.scale(), p.causal(), o.view(),
                             lse.view());
  c.dq = moa::Tensor<double>(shapes[0]);
  c.dk = moa::Tensor<double>(shapes[1]);
  c.dv = moa::Tensor<double>(shapes[2]);
  dnf::attention_bwd<double>(qd.view(), kd.view(), vd.view(), dod.view(), p.scale(), p.causal(),
                             c.dq.view(), c.dk.view(), c.dv.view());
  c.weight = column_weight(p, qd, kd, vd);
  c.in.push_back(std::move(q));
  c.in.push_back(std::move(k));
  c.in.push_back(std::move(v));
  c.in.push_back(from_double(dt, o, kind));    // o rounded to the format
  c.in.push_back(from_double(dt, lse, kind));  // lse rounded to the format
  c.in.push_back(std::move(dout));
  return c;
}

class FlashBwd : public ::testing::TestWithParam<std::tuple<Format, AttnCase>> {};

TEST_P(FlashBwd, AgreesWithTheDnf) {
  const auto [format, ac] = GetParam();
  const Problem p = attention_problem(Op::attention_bwd, format, ac);
  const BwdInputs c = make_case(p, ac.layout, 11);
  const auto out = run_variant(variant(Op::attention_bwd, "cpu.flash_bwd"), p, c.in, ac.layout);
  const double u = unit_roundoff(format), u_ref = unit_roundoff(Format::f64);
  // The kernel's bound (given lse rounded in its format) plus the DNF's own.
  const AttnBounds kb = attention_bounds(p, u, lse_error_rounded(p, u), c.weight);
  const AttnBounds rb = attention_bounds(p, u_ref, lse_error_computed(p, u_ref), c.weight);
  EXPECT_TRUE(near_all(out[0], c.dq, kb.dq + rb.dq, "dq"));
  EXPECT_TRUE(near_all(out[1], c.dk, kb.dk + rb.dk, "dk"));
  EXPECT_TRUE(near_all(out[2], c.dv, kb.dv + rb.dv, "dv"));
}

TEST_P(FlashBwd, OneAndTwoThreadsAreBitwiseEqual) {
  const auto [format, ac] = GetParam();
  const Problem p = attention_problem(Op::attention_bwd, format, ac);
  const BwdInputs c = make_case(p, ac.layout, 12);
  const Variant& v = variant(Op::attention_bwd, "cpu.flash_bwd");
  const auto one = run_variant(v, p, c.in, ac.layout, 1),
             two = run_variant(v, p, c.in, ac.layout, 2);
  for (int t = 0; t < 3; ++t) EXPECT_TRUE(bitwise_equal(one[t], two[t])) << "output " << t;
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashBwd,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kAttnCases)),
                         attn_param_name);

// Row with no visible key: lse = -inf, and the row contributes nothing. With
// N = 6, M = 2, causal, rows 0..3 see no key; their dO is NaN here, so any
// contribution from them would show.
TEST(FlashBwdEdge, RowsWithNoVisibleKeyContributeNothing) {
  Problem p = attention_problem(Op::attention_bwd, Format::f64,
                                {1, 1, 1, 6, 2, 3, true, 0, LayoutKind::row_major});
  BwdInputs c = make_case(p, LayoutKind::row_major, 13);
  for (extent_t i = 0; i < 4; ++i) {
    ASSERT_EQ(c.in[4].get({0, 0, i}), -std::numeric_limits<double>::infinity());
    for (extent_t d = 0; d < 3; ++d) c.in[5].set({0, 0, i, d}, std::nan(""));
  }
  const auto out =
      run_variant(variant(Op::attention_bwd, "cpu.flash_bwd"), p, c.in, LayoutKind::row_major);
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
    Problem p = attention_problem(Op::attention_bwd, f,
                                  {1, 1, 1, 12, 12, 4, true, 0, LayoutKind::row_major});
    BwdInputs c = make_case(p, LayoutKind::row_major, 14);
    c.in[5].set({0, 0, 0, 1}, std::nan(""));
    const auto out =
        run_variant(variant(Op::attention_bwd, "cpu.flash_bwd"), p, c.in, LayoutKind::row_major);
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
}  // namespace moacert::kernels::testing
