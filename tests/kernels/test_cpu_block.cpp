// block, cpu.composed, against the DNF in double.
//
// Bound. Write A for the magnitude of a quantity's Σ|terms|, obtained by
// running the DNF's steps on the absolute values of the inputs (exact for
// the matrix products, an upper bound through silu since silu(|z|) >=
// |silu(z)|). Each step adds at most γ_n (n its sum length) relative to its
// A, and passes on its input errors times its Lipschitz constant relative
// to A: 1 for the products, 1.1 for silu; rmsnorm is scale invariant (its
// output's relative error is at most twice its input's, plus γ_{Dm+6});
// softmax turns an absolute score error δ into a relative P error δ, and
// scores have absolute error at most γ_{D+1} s_max + (the q, k errors)
// s_max, s_max = scale D max A_q max A_k. So the relative error of y is at
// most (with every γ_n <= γ_{n_chain} for the longest sum of the step)
//   2·2·(γ_{Dm+6} + γ_{Dm}) (1 + s_max) + γ_{N+4} + γ_{H D} + 2 γ_{Dm+6}
//   + 2.1 γ_{Dm} + γ_6 + γ_F
// of A_y; the test allows that with u of the format plus the same with the
// u of double for the reference, the factors collected in block_rel_bound.
#include <gtest/gtest.h>

#include <algorithm>

#include "reference/dnf/block.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace moacert::kernels::testing {
namespace {

struct BlockCase {
  extent_t B, N, Dm, H, Hkv, D, F;
  LayoutKind layout;
};

const BlockCase kCases[] = {
    {2, 9, 16, 4, 2, 4, 24, LayoutKind::row_major},  // GQA
    {1, 70, 12, 2, 1, 6, 10, LayoutKind::permuted},  // MQA, N past one query block (64)
    {1, 5, 8, 2, 2, 4, 7, LayoutKind::padded},
    {2, 3, 6, 3, 1, 2, 5, LayoutKind::col_major},
};

double block_rel_bound(const BlockCase& c, double s_max, double u) {
  const double Dm = double(c.Dm);
  return 4 * (gamma(Dm + 6, u) + gamma(Dm, u)) * (1 + s_max) + gamma(double(c.N) + 4, u) +
         gamma(double(c.H * c.D), u) + 2 * gamma(Dm + 6, u) + 2.1 * gamma(Dm, u) + gamma(6, u) +
         gamma(double(c.F), u);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Format, BlockCase>>& param) {
  const Format f = std::get<0>(param.param);
  const BlockCase& c = std::get<1>(param.param);
  return std::string(name(f)) + "_B" + std::to_string(c.B) + "_N" + std::to_string(c.N) + "_Dm" +
         std::to_string(c.Dm) + "_H" + std::to_string(c.H) + "_Hkv" + std::to_string(c.Hkv) + "_" +
         layout_name(c.layout);
}

class BlockComposed : public ::testing::TestWithParam<std::tuple<Format, BlockCase>> {};

TEST_P(BlockComposed, AgreesWithTheDnf) {
  const auto [format, bc] = GetParam();
  Problem p;
  p.op = Op::block;
  p.format = format;
  p.dims = {bc.B, bc.H, bc.Hkv, bc.N, 1, bc.D, 1, bc.Dm, bc.F};
  p.params.eps = 1e-6;
  std::mt19937 rng(51);
  std::vector<AnyTensor> in;
  for (const Shape& s : input_shapes(p))
    in.push_back(random_tensor(dtype_of(format), s, bc.layout, rng));
  std::vector<moa::Tensor<double>> d, a;  // values and absolute values
  for (const AnyTensor& t : in) {
    d.push_back(to_double(t));
    a.push_back(to_double(t));
    for (double& x : a.back().storage()) x = std::fabs(x);
  }
  moa::Tensor<double> y(Shape{bc.B, bc.N, bc.Dm}), mag(Shape{bc.B, bc.N, bc.Dm});
  auto run_dnf = [&](std::vector<moa::Tensor<double>>& t, moa::Tensor<double>& out) {
    dnf::block<double>(t[0].view(), t[1].view(), t[2].view(), t[3].view(), t[4].view(), t[5].view(),
                       t[6].view(), t[7].view(), t[8].view(), t[9].view(), bc.H, bc.Hkv,
                       p.params.eps, out.view());
  };
  run_dnf(d, y);
  run_dnf(a, mag);
  // s_max from the magnitudes of q and k: |xn| <= sqrt(Dm) |attn_norm|.
  double w_max = 0, wq_max = 0, wk_max = 0;
  for (double x : a[1].storage()) w_max = std::max(w_max, x);
  for (double x : a[2].storage()) wq_max = std::max(wq_max, x);
  for (double x : a[3].storage()) wk_max = std::max(wk_max, x);
  const double xn_max = std::sqrt(double(bc.Dm)) * w_max;
  const double s_max = double(bc.D) / std::sqrt(double(bc.D)) * (double(bc.Dm) * xn_max * wq_max) *
                       (double(bc.Dm) * xn_max * wk_max);
  const double rel = block_rel_bound(bc, s_max, unit_roundoff(format)) +
                     block_rel_bound(bc, s_max, unit_roundoff(Format::f64));
  const auto out = run_variant(variant(Op::block, "cpu.composed"), p, in, bc.layout);
  for (const moa::Index& i : moa::iota(y.shape()))
    EXPECT_LE(std::fabs(out[0].get(i) - y.view()(i)), rel * mag.view()(i)) << i.str();
  const auto one = run_variant(variant(Op::block, "cpu.composed"), p, in, bc.layout, 1);
  const auto two = run_variant(variant(Op::block, "cpu.composed"), p, in, bc.layout, 2);
  EXPECT_TRUE(bitwise_equal(one[0], two[0])) << "1 vs 2 threads";
}

INSTANTIATE_TEST_SUITE_P(Cases, BlockComposed,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kCases)),
                         case_name);

}  // namespace
}  // namespace moacert::kernels::testing
