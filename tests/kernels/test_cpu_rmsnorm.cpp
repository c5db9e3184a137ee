// rmsnorm, cpu.fused, against the DNF in double.
//
// Bound: the sum of D squares has all terms positive, so its relative error
// is at most γ_D; adding eps, dividing by D, the sqrt (half the relative
// error of its argument plus u), the reciprocal and the two products add at
// most 6 u more. Per element |y - y_exact| <= γ_{D+6} |y_exact|; the DNF in
// double has the same form with its u.
#include <gtest/gtest.h>

#include "reference/dnf/norm_mlp.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace moacert::kernels::testing {
namespace {

struct RmsCase {
  extent_t T, D;
  double eps;
  LayoutKind layout;
};

const RmsCase kCases[] = {
    {13, 37, 1e-6, LayoutKind::row_major},  // D not a multiple of any vector
    {8, 64, 1e-5, LayoutKind::col_major},
    {5, 1, 0.5, LayoutKind::permuted},  // one column: y = x / sqrt(x² + eps) w
    {70, 130, 0.0, LayoutKind::padded},
};

class RmsnormFused : public ::testing::TestWithParam<std::tuple<Format, RmsCase>> {
 protected:
  Problem problem() const {
    const auto [format, rc] = GetParam();
    Problem p;
    p.op = Op::rmsnorm;
    p.format = format;
    p.dims.T = rc.T;
    p.dims.D = rc.D;
    p.params.eps = rc.eps;
    return p;
  }
};

TEST_P(RmsnormFused, AgreesWithTheDnf) {
  const auto [format, rc] = GetParam();
  const Problem p = problem();
  std::mt19937 rng(31);
  std::vector<AnyTensor> in;
  for (const Shape& s : input_shapes(p))
    in.push_back(random_tensor(dtype_of(format), s, rc.layout, rng));
  const auto x = to_double(in[0]), w = to_double(in[1]);
  moa::Tensor<double> y(Shape{rc.T, rc.D});
  dnf::rmsnorm<double>(x.view(), w.view(), rc.eps, y.view());
  const auto out = run_variant(variant(Op::rmsnorm, "cpu.fused"), p, in, rc.layout);
  const double rel = gamma(double(rc.D) + 6, unit_roundoff(format)) +
                     gamma(double(rc.D) + 6, unit_roundoff(Format::f64));
  for (const moa::Index& i : moa::iota(y.shape())) {
    const double want = y.view()(i);
    EXPECT_LE(std::fabs(out[0].get(i) - want), rel * std::fabs(want)) << i.str();
  }
  const auto one = run_variant(variant(Op::rmsnorm, "cpu.fused"), p, in, rc.layout, 1);
  const auto two = run_variant(variant(Op::rmsnorm, "cpu.fused"), p, in, rc.layout, 2);
  EXPECT_TRUE(bitwise_equal(one[0], two[0])) << "1 vs 2 threads";
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Format, RmsCase>>& param) {
  const Format f = std::get<0>(param.param);
  const RmsCase& c = std::get<1>(param.param);
  return std::string(name(f)) + "_T" + std::to_string(c.T) + "_D" + std::to_string(c.D) + "_" +
         layout_name(c.layout);
}

INSTANTIATE_TEST_SUITE_P(Cases, RmsnormFused,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kCases)),
                         case_name);

}  // namespace
}  // namespace moacert::kernels::testing
