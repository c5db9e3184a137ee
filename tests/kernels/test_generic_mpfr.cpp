// The generic loop nests of cpu.flash and cpu.split instantiate with
// boost::multiprecision::mpfr_float, as the property engine needs them to
// (kernels/cpu/<op>/*_generic.hpp): at 200 bits they agree with the DNF in the
// same arithmetic far below double's resolution, for several tilings.
#include <gtest/gtest.h>

#include <boost/multiprecision/mpfr.hpp>
#include <random>

#include "kernels/cpu/attention_decode/split_generic.hpp"
#include "kernels/cpu/attention_fwd/flash_generic.hpp"
#include "reference/dnf/attention.hpp"

namespace moacert::kernels::cpu {
namespace {

using Real = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<60>>;
using moa::Shape;
using moa::Tensor;

Tensor<Real> random_tensor(const Shape& s, std::mt19937& rng) {
  Tensor<Real> t(s);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : t.storage()) x = Real(u(rng));
  return t;
}

// A rewrite error would be O(1); rounding at 60 decimal digits over these
// few hundred operations stays below 1e-50.
const Real kAgree("1e-50");

TEST(GenericMpfr, FlashAgreesWithTheDnf) {
  std::mt19937 rng(31);
  const extent_t B = 1, H = 4, Hkv = 2, N = 7, M = 5, D = 3;
  for (bool causal : {false, true}) {
    auto q = random_tensor({B, H, N, D}, rng), k = random_tensor({B, Hkv, M, D}, rng),
         v = random_tensor({B, Hkv, M, D}, rng);
    Tensor<Real> o_want(Shape{B, H, N, D}), lse_want(Shape{B, H, N});
    dnf::attention_fwd<Real>(q.view(), k.view(), v.view(), 0.6, causal, o_want.view(),
                             lse_want.view());
    for (auto [bm, bn] : {std::pair<extent_t, extent_t>{1, 1}, {2, 3}, {64, 64}}) {
      Tensor<Real> o(Shape{B, H, N, D}), lse(Shape{B, H, N});
      flash_fwd_generic<Real>(q.view(), k.view(), v.view(), 0.6, causal, o.view(), lse.view(), bm,
                              bn);
      for (const moa::Index& i : moa::iota(o.shape()))
        EXPECT_LT(abs(o.view()(i) - o_want.view()(i)), kAgree);
      for (const moa::Index& i : moa::iota(lse.shape())) {
        if (isinf(lse_want.view()(i))) {
          EXPECT_EQ(lse.view()(i), lse_want.view()(i));  // causal, N > M: no visible key
        } else {
          EXPECT_LT(abs(lse.view()(i) - lse_want.view()(i)), kAgree);
        }
      }
    }
  }
}

TEST(GenericMpfr, DecodeSplitAgreesWithTheDnf) {
  std::mt19937 rng(32);
  const extent_t B = 2, H = 4, Hkv = 1, L = 9, D = 3;
  auto q = random_tensor({B, H, 1, D}, rng), k = random_tensor({B, Hkv, L, D}, rng),
       v = random_tensor({B, Hkv, L, D}, rng);
  Tensor<std::int64_t> lens(Shape{B});
  lens.view()(0) = 9;
  lens.view()(1) = 4;
  Tensor<Real> o_want(Shape{B, H, 1, D}), lse_want(Shape{B, H, 1});
  dnf::attention_decode<Real>(q.view(), k.view(), v.view(), lens.view(), 0.5, o_want.view(),
                              lse_want.view());
  for (extent_t split_len : {1, 2, 5, 16}) {
    Tensor<Real> o(Shape{B, H, 1, D}), lse(Shape{B, H, 1});
    decode_split_generic<Real>(q.view(), k.view(), v.view(), lens.view(), 0.5, o.view(), lse.view(),
                               split_len);
    for (const moa::Index& i : moa::iota(o.shape()))
      EXPECT_LT(abs(o.view()(i) - o_want.view()(i)), kAgree);
    for (const moa::Index& i : moa::iota(lse.shape()))
      EXPECT_LT(abs(lse.view()(i) - lse_want.view()(i)), kAgree);
  }
}

}  // namespace
}  // namespace moacert::kernels::cpu
