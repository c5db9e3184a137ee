// The DNF against closed forms, with one generic body per law instantiated
// for double and float (the oracle instantiates the same templates with MPFR
// and MPFI types, and tests them separately).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "reference/dnf/attention.hpp"
#include "reference/dnf/block.hpp"
#include "reference/dnf/norm_mlp.hpp"

namespace moacert::dnf {
namespace {

using moa::Shape;
using moa::Tensor;

template <class T>
Tensor<T> random_tensor(const Shape& s, std::mt19937& rng, double lo = -1, double hi = 1) {
  Tensor<T> t(s);
  std::uniform_real_distribution<double> u(lo, hi);
  for (auto& x : t.storage()) x = T(u(rng));
  return t;
}

template <class T>
class DnfTest : public ::testing::Test {
 protected:
  // A relative tolerance for comparing the DNF in T with a closed form in
  // double: a few rounding errors of T per term of the longest sum below.
  static double tol(int terms) { return 4.0 * terms * std::numeric_limits<T>::epsilon(); }
};
using Scalars = ::testing::Types<double, float>;
TYPED_TEST_SUITE(DnfTest, Scalars);

// Equal logits give the uniform softmax: O is the mean of V, LSE = log M.
TYPED_TEST(DnfTest, EqualLogitsAverageTheValues) {
  using T = TypeParam;
  std::mt19937 rng(1);
  const extent_t B = 2, H = 4, Hkv = 2, N = 3, M = 5, D = 4;
  Tensor<T> q(Shape{B, H, N, D}), o(Shape{B, H, N, D}), lse(Shape{B, H, N});  // q = 0
  auto k = random_tensor<T>({B, Hkv, M, D}, rng), v = random_tensor<T>({B, Hkv, M, D}, rng);
  attention_fwd<T>(q.view(), k.view(), v.view(), 0.5, /*causal=*/false, o.view(), lse.view());
  for (const moa::Index& i : moa::iota(o.shape())) {
    double mean = 0;
    for (extent_t j = 0; j < M; ++j) mean += double(v.view()(i[0], i[1] / 2, j, i[3]));
    mean /= double(M);
    EXPECT_NEAR(double(o.view()(i)), mean, this->tol(int(M)));
  }
  for (const moa::Index& i : moa::iota(lse.shape()))
    EXPECT_NEAR(double(lse.view()(i)), std::log(double(M)), this->tol(int(M)));
}

// With one key, attention returns that key's value row whatever the scores.
TYPED_TEST(DnfTest, OneKeyReturnsItsValue) {
  using T = TypeParam;
  std::mt19937 rng(2);
  const extent_t N = 4, D = 3;
  auto q = random_tensor<T>({1, 2, N, D}, rng), k = random_tensor<T>({1, 1, 1, D}, rng),
       v = random_tensor<T>({1, 1, 1, D}, rng);
  Tensor<T> o(Shape{1, 2, N, D}), lse(Shape{1, 2, N});
  attention_fwd<T>(q.view(), k.view(), v.view(), 0.7, /*causal=*/false, o.view(), lse.view());
  for (const moa::Index& i : moa::iota(o.shape()))
    EXPECT_NEAR(double(o.view()(i)), double(v.view()(0, 0, 0, i[3])), this->tol(1));
}

// Causal with N > M: the first N - M rows see no key, so O = 0, LSE = -inf;
// the last row sees every key.
TYPED_TEST(DnfTest, CausalRowsWithNoVisibleKey) {
  using T = TypeParam;
  std::mt19937 rng(3);
  const extent_t N = 6, M = 2, D = 3;
  auto q = random_tensor<T>({1, 1, N, D}, rng), k = random_tensor<T>({1, 1, M, D}, rng),
       v = random_tensor<T>({1, 1, M, D}, rng);
  Tensor<T> o(Shape{1, 1, N, D}), lse(Shape{1, 1, N});
  attention_fwd<T>(q.view(), k.view(), v.view(), 1.0, /*causal=*/true, o.view(), lse.view());
  for (extent_t i = 0; i < N - M; ++i) {
    EXPECT_EQ(double(lse.view()(0, 0, i)), -std::numeric_limits<double>::infinity());
    for (extent_t d = 0; d < D; ++d) EXPECT_EQ(double(o.view()(0, 0, i, d)), 0.0);
  }
  // Row N - M sees only key 0, so it returns V_0.
  for (extent_t d = 0; d < D; ++d)
    EXPECT_NEAR(double(o.view()(0, 0, N - M, d)), double(v.view()(0, 0, 0, d)), this->tol(1));
  EXPECT_TRUE(std::isfinite(double(lse.view()(0, 0, N - 1))));
}

// A masked key is never read: non-finite values behind the causal mask
// leave O finite (P = 0 there, and 0 · NaN would be NaN).
TYPED_TEST(DnfTest, CausalMaskedValuesAreNeverRead) {
  using T = TypeParam;
  std::mt19937 rng(6);
  const extent_t N = 3, M = 3, D = 2;
  auto q = random_tensor<T>({1, 1, N, D}, rng), k = random_tensor<T>({1, 1, M, D}, rng),
       v = random_tensor<T>({1, 1, M, D}, rng), dout = random_tensor<T>({1, 1, N, D}, rng);
  for (extent_t d = 0; d < D; ++d) v.view()(0, 0, M - 1, d) = std::numeric_limits<T>::quiet_NaN();
  Tensor<T> o(Shape{1, 1, N, D}), lse(Shape{1, 1, N});
  attention_fwd<T>(q.view(), k.view(), v.view(), 1.0, /*causal=*/true, o.view(), lse.view());
  Tensor<T> dq(Shape{1, 1, N, D}), dk(Shape{1, 1, M, D}), dv(Shape{1, 1, M, D});
  attention_bwd<T>(q.view(), k.view(), v.view(), dout.view(), 1.0, /*causal=*/true, dq.view(),
                   dk.view(), dv.view());
  for (extent_t i = 0; i < N - 1; ++i) {  // rows that do not see key M - 1
    for (extent_t d = 0; d < D; ++d) {
      EXPECT_TRUE(std::isfinite(double(o.view()(0, 0, i, d))));
      EXPECT_TRUE(std::isfinite(double(dq.view()(0, 0, i, d))));
    }
  }
}

// A top-left causal mask (query i sees keys j <= i, ONNX's is_causal) on
// N <= M keys is the bottom-right mask on the first N keys alone: the same
// outputs, bit for bit (the same sums in the same order), and the keys past
// N never read (NaN there). With N = M the two alignments agree.
TYPED_TEST(DnfTest, TopLeftMaskIsTheBottomRightMaskOnTheFirstKeys) {
  using T = TypeParam;
  std::mt19937 rng(8);
  const extent_t N = 3, M = 7, D = 2;
  auto q = random_tensor<T>({1, 1, N, D}, rng), k = random_tensor<T>({1, 1, M, D}, rng),
       v = random_tensor<T>({1, 1, M, D}, rng);
  for (extent_t j = N; j < M; ++j)
    for (extent_t d = 0; d < D; ++d) v.view()(0, 0, j, d) = std::numeric_limits<T>::quiet_NaN();
  const causal::Mask top_left{true, CausalAlignment::top_left};
  Tensor<T> o(Shape{1, 1, N, D}), lse(Shape{1, 1, N});
  attention_fwd<T>(q.view(), k.view(), v.view(), 0.5, top_left, o.view(), lse.view());
  const moa::Layout first = moa::Layout::row_major({1, 1, N, D});
  const moa::View<const T> k_first(&k.view()(0, 0, 0, 0), first),
      v_first(&v.view()(0, 0, 0, 0), first);
  Tensor<T> o_first(Shape{1, 1, N, D}), lse_first(Shape{1, 1, N});
  attention_fwd<T>(q.view(), k_first, v_first, 0.5, /*causal=*/true, o_first.view(),
                   lse_first.view());
  for (extent_t i = 0; i < N; ++i) {
    EXPECT_EQ(lse.view()(0, 0, i), lse_first.view()(0, 0, i)) << i;
    for (extent_t d = 0; d < D; ++d) EXPECT_EQ(o.view()(0, 0, i, d), o_first.view()(0, 0, i, d));
  }
  // Bottom-right on all M keys differs: row 0 sees M - N + 1 keys, not one.
  Tensor<T> o_br(Shape{1, 1, N, D}), lse_br(Shape{1, 1, N});
  auto v_finite = random_tensor<T>({1, 1, M, D}, rng);
  attention_fwd<T>(q.view(), k.view(), v_finite.view(), 0.5, /*causal=*/true, o_br.view(),
                   lse_br.view());
  EXPECT_NE(lse_br.view()(0, 0, 0), lse.view()(0, 0, 0));
  EXPECT_EQ(visible_keys(top_left, 0, N, M, M), 1);
  EXPECT_EQ(visible_keys(/*causal=*/true, 0, N, M, M), M - N + 1);
  EXPECT_EQ(visible_keys(top_left, 2, N, N, N), visible_keys(/*causal=*/true, 2, N, N, N));
}

// Decode equals the forward over the first lens[b] keys, and never reads
// past them (they hold NaN here).
TYPED_TEST(DnfTest, DecodeReadsOnlyTheValidCache) {
  using T = TypeParam;
  std::mt19937 rng(4);
  const extent_t B = 2, H = 2, L = 5, D = 3;
  auto q = random_tensor<T>({B, H, 1, D}, rng), k = random_tensor<T>({B, 1, L, D}, rng),
       v = random_tensor<T>({B, 1, L, D}, rng);
  Tensor<std::int64_t> lens(Shape{B});
  lens.view()(0) = 2;
  lens.view()(1) = L;
  for (extent_t j = 2; j < L; ++j)
    for (extent_t d = 0; d < D; ++d)
      k.view()(0, 0, j, d) = v.view()(0, 0, j, d) = std::numeric_limits<T>::quiet_NaN();
  Tensor<T> o(Shape{B, H, 1, D}), lse(Shape{B, H, 1});
  attention_decode<T>(q.view(), k.view(), v.view(), lens.view(), 0.6, o.view(), lse.view());
  for (extent_t b = 0; b < B; ++b) {
    const extent_t len = lens.view()(b);
    Tensor<T> o1(Shape{1, H, 1, D}), lse1(Shape{1, H, 1});
    const moa::View<const T> kb(&k.view()(b, 0, 0, 0), moa::Layout::row_major({1, 1, len, D}));
    const moa::View<const T> vb(&v.view()(b, 0, 0, 0), moa::Layout::row_major({1, 1, len, D}));
    const moa::View<const T> qb(&q.view()(b, 0, 0, 0), moa::Layout::row_major({1, H, 1, D}));
    attention_fwd<T>(qb, kb, vb, 0.6, false, o1.view(), lse1.view());
    for (extent_t h = 0; h < H; ++h) {
      EXPECT_EQ(double(lse.view()(b, h, 0)), double(lse1.view()(0, h, 0)));
      for (extent_t d = 0; d < D; ++d)
        EXPECT_EQ(double(o.view()(b, h, 0, d)), double(o1.view()(0, h, 0, d)));
    }
  }
}

// RMSNorm of a constant vector c is c / sqrt(c² + eps) · w; silu(0) = 0.
TYPED_TEST(DnfTest, RmsnormOfAConstantAndSiluAtZero) {
  using T = TypeParam;
  const extent_t D = 7;
  Tensor<T> x(Shape{1, D}), w(Shape{D}), y(Shape{1, D});
  for (extent_t d = 0; d < D; ++d) {
    x.view()(0, d) = T(3);
    w.view()(d) = T(double(d) - 2);
  }
  rmsnorm<T>(x.view(), w.view(), 0.5, y.view());
  for (extent_t d = 0; d < D; ++d)
    EXPECT_NEAR(double(y.view()(0, d)), 3.0 / std::sqrt(9.5) * (double(d) - 2),
                this->tol(int(D)) * 5);
  EXPECT_EQ(double(silu(T(0))), 0.0);
  EXPECT_NEAR(double(silu(T(2))), 2.0 / (1.0 + std::exp(-2.0)), this->tol(2));
}

// With Wo = 0 and W2 = 0 both residual branches vanish: block(x) = x.
TYPED_TEST(DnfTest, BlockWithZeroOutputProjectionsIsTheIdentity) {
  using T = TypeParam;
  std::mt19937 rng(5);
  const extent_t B = 2, N = 3, Dm = 4, H = 2, Hkv = 1, D = 2, F = 5;
  auto x = random_tensor<T>({B, N, Dm}, rng);
  auto an = random_tensor<T>({Dm}, rng), mn = random_tensor<T>({Dm}, rng);
  auto wq = random_tensor<T>({Dm, H * D}, rng), wk = random_tensor<T>({Dm, Hkv * D}, rng),
       wv = random_tensor<T>({Dm, Hkv * D}, rng);
  auto w1 = random_tensor<T>({Dm, F}, rng), w3 = random_tensor<T>({Dm, F}, rng);
  Tensor<T> wo(Shape{H * D, Dm}), w2(Shape{F, Dm}), y(Shape{B, N, Dm});
  block<T>(x.view(), an.view(), wq.view(), wk.view(), wv.view(), wo.view(), mn.view(), w1.view(),
           w3.view(), w2.view(), H, Hkv, 1e-6, y.view());
  for (const moa::Index& i : moa::iota(x.shape()))
    EXPECT_EQ(double(y.view()(i)), double(x.view()(i)));
}

// The backward is the derivative of the forward: with L = Σ dO ∘ O,
// dL/dθ matches a central difference for every input element (double only:
// the difference needs the precision).
TEST(DnfBackward, MatchesCentralDifferencesOfTheForward) {
  std::mt19937 rng(6);
  for (bool causal : {false, true}) {
    const extent_t B = 1, H = 2, Hkv = 1, N = 3, M = 4, D = 3;
    auto q = random_tensor<double>({B, H, N, D}, rng),
         k = random_tensor<double>({B, Hkv, M, D}, rng),
         v = random_tensor<double>({B, Hkv, M, D}, rng),
         dout = random_tensor<double>({B, H, N, D}, rng);
    Tensor<double> dq(Shape{B, H, N, D}), dk(Shape{B, Hkv, M, D}), dv(Shape{B, Hkv, M, D});
    const double scale = 0.8;
    attention_bwd<double>(q.view(), k.view(), v.view(), dout.view(), scale, causal, dq.view(),
                          dk.view(), dv.view());
    auto loss = [&] {
      Tensor<double> o(Shape{B, H, N, D}), lse(Shape{B, H, N});
      attention_fwd<double>(q.view(), k.view(), v.view(), scale, causal, o.view(), lse.view());
      double l = 0;
      for (const moa::Index& i : moa::iota(o.shape())) l += dout.view()(i) * o.view()(i);
      return l;
    };
    const double step = 1e-6;
    for (auto [x, dx] : {std::pair{&q, &dq}, std::pair{&k, &dk}, std::pair{&v, &dv}}) {
      for (const moa::Index& i : moa::iota(x->shape())) {
        double& xi = x->view()(i);
        const double saved = xi;
        xi = saved + step;
        const double up = loss();
        xi = saved - step;
        const double down = loss();
        xi = saved;
        // Central difference error O(step²) plus rounding O(eps / step).
        EXPECT_NEAR(dx->view()(i), (up - down) / (2 * step), 1e-8) << i.str();
      }
    }
  }
}

}  // namespace
}  // namespace moacert::dnf
