// attention.fwdbwd: the vectorised cpu.fused and the scalar generic template
// of the same ONF (fwdbwd_generic.hpp), against the DNF in double.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/attention_fwdbwd/fused_generic.hpp"
#include "reference/dnf/attention.hpp"
#include "tests/kernels/attention_cases.hpp"

namespace moacert::kernels::testing {
namespace {

struct FwdBwdCase {
  std::vector<AnyTensor> in;  // q, k, v, do
  moa::Tensor<double> o, lse, dq, dk, dv;
  double weight;  // max_j Σ_i P_ij
};

FwdBwdCase make_case(const Problem& p, LayoutKind kind, unsigned seed) {
  std::mt19937 rng(seed);
  const DType dt = dtype_of(p.format);
  const auto shapes = input_shapes(p);
  const auto outs = output_shapes(p);
  FwdBwdCase c{{},
               moa::Tensor<double>(outs[0]),
               moa::Tensor<double>(outs[1]),
               moa::Tensor<double>(outs[2]),
               moa::Tensor<double>(outs[3]),
               moa::Tensor<double>(outs[4]),
               0};
  for (const Shape& s : shapes) c.in.push_back(random_tensor(dt, s, kind, rng));
  const auto q = to_double(c.in[0]), k = to_double(c.in[1]), v = to_double(c.in[2]),
             dout = to_double(c.in[3]);
  dnf::attention_fwdbwd<double>(q.view(), k.view(), v.view(), dout.view(), p.scale(), p.causal(),
                                c.o.view(), c.lse.view(), c.dq.view(), c.dk.view(), c.dv.view());
  c.weight = column_weight(p, q, k, v);
  return c;
}

void expect_near_dnf(const std::vector<AnyTensor>& out, const FwdBwdCase& c, const Problem& p,
                     double u) {
  const double u_ref = unit_roundoff(Format::f64);
  // Both sides compute their own LSE.
  const AttnBounds kb = attention_bounds(p, u, lse_error_computed(p, u), c.weight);
  const AttnBounds rb = attention_bounds(p, u_ref, lse_error_computed(p, u_ref), c.weight);
  EXPECT_TRUE(near_all(out[0], c.o, kb.o + rb.o, "o"));
  EXPECT_TRUE(near_all(out[1], c.lse, kb.lse + rb.lse, "lse"));
  EXPECT_TRUE(near_all(out[2], c.dq, kb.dq + rb.dq, "dq"));
  EXPECT_TRUE(near_all(out[3], c.dk, kb.dk + rb.dk, "dk"));
  EXPECT_TRUE(near_all(out[4], c.dv, kb.dv + rb.dv, "dv"));
}

class FusedFwdBwd : public ::testing::TestWithParam<std::tuple<Format, AttnCase>> {};

TEST_P(FusedFwdBwd, AgreesWithTheDnf) {
  const auto [format, ac] = GetParam();
  const Problem p = attention_problem(Op::attention_fwdbwd, format, ac);
  const FwdBwdCase c = make_case(p, ac.layout, 21);
  const auto out = run_variant(variant(Op::attention_fwdbwd, "cpu.fused"), p, c.in, ac.layout);
  expect_near_dnf(out, c, p, unit_roundoff(format));
}

TEST_P(FusedFwdBwd, OneAndTwoThreadsAreBitwiseEqual) {
  const auto [format, ac] = GetParam();
  const Problem p = attention_problem(Op::attention_fwdbwd, format, ac);
  const FwdBwdCase c = make_case(p, ac.layout, 22);
  const Variant& v = variant(Op::attention_fwdbwd, "cpu.fused");
  const auto one = run_variant(v, p, c.in, ac.layout, 1),
             two = run_variant(v, p, c.in, ac.layout, 2);
  for (int t = 0; t < 5; ++t) EXPECT_TRUE(bitwise_equal(one[t], two[t])) << "output " << t;
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedFwdBwd,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kAttnCases)),
                         attn_param_name);

// The scalar generic template of the ONF, instantiated with double, with
// tiles that leave tails (3 × 4) and with one tile covering everything.
class GenericFwdBwd : public ::testing::TestWithParam<AttnCase> {};

TEST_P(GenericFwdBwd, AgreesWithTheDnf) {
  const AttnCase ac = GetParam();
  const Problem p = attention_problem(Op::attention_fwdbwd, Format::f64, ac);
  const FwdBwdCase c = make_case(p, ac.layout, 23);
  for (const auto& [block_m, block_n] : {std::pair<extent_t, extent_t>{3, 4}, {64, 256}}) {
    std::vector<AnyTensor> out;
    for (const Shape& s : output_shapes(p)) out.emplace_back(DType::f64, make_layout(s, ac.layout));
    cpu::fused_fwdbwd_generic<double>(
        c.in[0].view<const double>(), c.in[1].view<const double>(), c.in[2].view<const double>(),
        c.in[3].view<const double>(), p.scale(), p.causal(), out[0].view<double>(),
        out[1].view<double>(), out[2].view<double>(), out[3].view<double>(), out[4].view<double>(),
        block_m, block_n);
    SCOPED_TRACE("blocks " + std::to_string(block_m) + " x " + std::to_string(block_n));
    expect_near_dnf(out, c, p, unit_roundoff(Format::f64));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GenericFwdBwd, ::testing::ValuesIn(kAttnCases),
                         [](const ::testing::TestParamInfo<AttnCase>& param) {
                           return attn_param_name({{Format::f64, param.param}, param.index});
                         });

}  // namespace
}  // namespace moacert::kernels::testing
