// The scalar generic template of the fused fwd+bwd ONF instantiated with
// boost::multiprecision::mpfr_float (as the property engine will), against
// the DNF in the same type: at 60 decimal digits the two loop nests must
// agree far below double's resolution, which shows the ONF rewrite (online
// softmax, recomputation from LSE, owner-computes dK/dV and dQ) computes the
// DNF's function and that the template compiles for an MPFR type.
#include <gtest/gtest.h>

#include <boost/multiprecision/mpfr.hpp>
#include <random>

#include "kernels/cpu/attention_fwdbwd/fused_generic.hpp"
#include "reference/dnf/attention.hpp"

namespace moacert::kernels::cpu {
namespace {

using mp = boost::multiprecision::mpfr_float;
using moa::Shape;
using moa::Tensor;

constexpr unsigned kDigits = 60;

Tensor<mp> random_tensor(const Shape& s, std::mt19937& rng) {
  Tensor<mp> t(s);
  std::uniform_real_distribution<double> u(-1, 1);
  for (mp& x : t.storage()) x = u(rng);
  return t;
}

TEST(FwdBwdGenericMpfr, AgreesWithTheDnfAtSixtyDigits) {
  mp::default_precision(kDigits);
  std::mt19937 rng(61);
  for (const bool causal : {false, true}) {
    const extent_t B = 1, H = 2, Hkv = 1, N = 7, M = 5, D = 3;  // GQA; causal rows 0, 1 see no key
    auto q = random_tensor({B, H, N, D}, rng), k = random_tensor({B, Hkv, M, D}, rng),
         v = random_tensor({B, Hkv, M, D}, rng), dout = random_tensor({B, H, N, D}, rng);
    Tensor<mp> o(Shape{B, H, N, D}), lse(Shape{B, H, N}), dq(Shape{B, H, N, D}),
        dk(Shape{B, Hkv, M, D}), dv(Shape{B, Hkv, M, D});
    Tensor<mp> o2 = o, lse2 = lse, dq2 = dq, dk2 = dk, dv2 = dv;
    fused_fwdbwd_generic<mp>(q.view(), k.view(), v.view(), dout.view(), 0.6, causal, o.view(),
                             lse.view(), dq.view(), dk.view(), dv.view(), /*block_m=*/2,
                             /*block_n=*/2);
    dnf::attention_fwdbwd<mp>(q.view(), k.view(), v.view(), dout.view(), 0.6, causal, o2.view(),
                              lse2.view(), dq2.view(), dk2.view(), dv2.view());
    // Values are O(1); 60 digits of working precision, a few hundred
    // roundings: 1e-50 is far above the rounding error and far below double.
    const mp tol("1e-50");
    auto same = [&](const Tensor<mp>& a, const Tensor<mp>& b, const char* what) {
      for (std::size_t i = 0; i < a.storage().size(); ++i) {
        const mp &x = a.storage()[i], &y = b.storage()[i];
        if (boost::multiprecision::isinf(y)) {
          EXPECT_EQ(x, y) << what << " element " << i;
        } else {
          EXPECT_LT(boost::multiprecision::abs(x - y), tol) << what << " element " << i;
        }
      }
    };
    same(o, o2, "o");
    same(lse, lse2, "lse");
    same(dq, dq2, "dq");
    same(dk, dk2, "dk");
    same(dv, dv2, "dv");
  }
}

}  // namespace
}  // namespace moacert::kernels::cpu
