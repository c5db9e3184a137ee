// mlp.swiglu, cpu.tiled, against the DNF in double.
//
// Bound (inputs in [-1, 1]): write |·|-DNF for the DNF evaluated on the
// absolute values of the inputs; for a matrix product it is exactly Σ|terms|,
// and silu(|z|) >= |silu(z)|, so it bounds every intermediate's Σ|terms|.
// With A = |x|-DNF magnitudes: G = x W1 and U = x W3 err by at most
// γ_{Dm} A_G, A_U; silu is 1.1-Lipschitz and its own evaluation (exp of
// -|z| within 1 ulp, an add, a multiply, a divide) adds 5 u |silu|; the
// product H = silu(G) U adds u. So the error of H is at most
// e_H = (1.1 γ_{Dm} + γ_{Dm} + γ_6) A_H with A_H = silu(A_G) A_U, and
// y = H W2 errs by at most Σ_f (e_H)_f |W2| + γ_F A_y <= (2.1 γ_{Dm} + γ_6 + γ_F) A_y.
#include <gtest/gtest.h>

#include "reference/dnf/norm_mlp.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace moacert::kernels::testing {
namespace {

struct MlpCase {
  extent_t T, Dm, F;
  LayoutKind layout;
};

const MlpCase kCases[] = {
    {13, 17, 29, LayoutKind::row_major},  // edges in every micro-tile direction
    {7, 3, 5, LayoutKind::col_major},
    {150, 40, 70, LayoutKind::permuted},  // more rows than one packed A block (144)
    {9, 300, 20, LayoutKind::padded},     // two k-blocks (256): silu on the last only
};

TEST(MlpTiledBound, SiluIsOnePointOneLipschitz) {
  // max |silu'(z)| = 1.0998 at z ≈ 2.4; checked on a grid.
  double worst = 0;
  for (double z = -20; z <= 20; z += 1e-3) {
    const double s = 1 / (1 + std::exp(-z));
    worst = std::max(worst, std::fabs(s * (1 + z * (1 - s))));
  }
  EXPECT_LE(worst, 1.1);
}

class MlpTiled : public ::testing::TestWithParam<std::tuple<Format, MlpCase>> {};

TEST_P(MlpTiled, AgreesWithTheDnf) {
  const auto [format, mc] = GetParam();
  Problem p;
  p.op = Op::mlp_swiglu;
  p.format = format;
  p.dims.T = mc.T;
  p.dims.Dm = mc.Dm;
  p.dims.F = mc.F;
  std::mt19937 rng(41);
  std::vector<AnyTensor> in;
  for (const Shape& s : input_shapes(p))
    in.push_back(random_tensor(dtype_of(format), s, mc.layout, rng));
  std::vector<moa::Tensor<double>> d, a;  // values and absolute values
  for (const AnyTensor& t : in) {
    d.push_back(to_double(t));
    a.push_back(to_double(t));
    for (double& x : a.back().storage()) x = std::fabs(x);
  }
  moa::Tensor<double> y(Shape{mc.T, mc.Dm}), mag(Shape{mc.T, mc.Dm});
  dnf::mlp_swiglu<double>(d[0].view(), d[1].view(), d[2].view(), d[3].view(), y.view());
  dnf::mlp_swiglu<double>(a[0].view(), a[1].view(), a[2].view(), a[3].view(), mag.view());
  auto rel = [&](double u) {
    return 2.1 * gamma(double(mc.Dm), u) + gamma(6, u) + gamma(double(mc.F), u);
  };
  const double r = rel(unit_roundoff(format)) + rel(unit_roundoff(Format::f64));
  const auto out = run_variant(variant(Op::mlp_swiglu, "cpu.tiled"), p, in, mc.layout);
  for (const moa::Index& i : moa::iota(y.shape()))
    EXPECT_LE(std::fabs(out[0].get(i) - y.view()(i)), r * mag.view()(i)) << i.str();
  const auto one = run_variant(variant(Op::mlp_swiglu, "cpu.tiled"), p, in, mc.layout, 1);
  const auto two = run_variant(variant(Op::mlp_swiglu, "cpu.tiled"), p, in, mc.layout, 2);
  EXPECT_TRUE(bitwise_equal(one[0], two[0])) << "1 vs 2 threads";
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Format, MlpCase>>& param) {
  const Format f = std::get<0>(param.param);
  const MlpCase& c = std::get<1>(param.param);
  return std::string(name(f)) + "_T" + std::to_string(c.T) + "_Dm" + std::to_string(c.Dm) + "_F" +
         std::to_string(c.F) + "_" + layout_name(c.layout);
}

INSTANTIATE_TEST_SUITE_P(Cases, MlpTiled,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kCases)),
                         case_name);

}  // namespace
}  // namespace moacert::kernels::testing
