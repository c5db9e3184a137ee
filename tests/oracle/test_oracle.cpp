// The oracle through its public interface: closed forms, every op and
// format, layouts, threads, non-finite inputs and empty rows.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <thread>

#include <mpfr.h>

#include "oracle/oracle.hpp"
#include "oracle/rounding.hpp"
#include "oracle/ulp.hpp"
#include "tests/support/harness.hpp"

namespace moacert::oracle {
namespace {

using test::make_case;
using test::small_dims;

using moa::extent_t;
using moa::Shape;

constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// num / den (integers) correctly rounded to f, through MPFR at 300 bits.
double rounded_ratio(long num, long den, Format f) {
  mpfr_t x;
  mpfr_init2(x, 300);
  mpfr_set_si(x, num, MPFR_RNDN);
  mpfr_div_si(x, x, den, MPFR_RNDN);
  const double r = round_to_format(x, f);
  mpfr_clear(x);
  return r;
}

double rounded_log(long n, Format f) {
  mpfr_t x;
  mpfr_init2(x, 300);
  mpfr_set_si(x, n, MPFR_RNDN);
  mpfr_log(x, x, MPFR_RNDN);
  const double r = round_to_format(x, f);
  mpfr_clear(x);
  return r;
}

void set_all(AnyTensor& t, double value) {
  for (const moa::Index& i : moa::iota(t.shape())) t.set(i, value);
}

class EveryFormat : public ::testing::TestWithParam<Format> {};
INSTANTIATE_TEST_SUITE_P(Oracle, EveryFormat, ::testing::ValuesIn(kAllFormats),
                         [](const auto& p) { return std::string(name(p.param)); });

// Whether `rounded` is x's enclosure correctly rounded to f: every point of
// the enclosure rounds to it. The oracle exposes the enclosure through its
// DD (oracle.hpp, Options::exact_ulp_bits): a decided element's `exact` lies
// within 2^-exact_ulp_bits ulp of every point of it, the enclosure has one
// sign, and an exact zero is the point {0, 0}, which rounds to +0
// (docs/oracle.md). A non-zero result is checked at the midpoint (a
// decision never sits within 2^-10 ulp of a rounding boundary: the DD test
// below bounds the distance); a zero result at the end of the enclosure
// farthest from zero, which must round to the same signed zero.
bool correctly_rounded(Format f, double rounded, const DD& x) {
  if (rounded != 0) return same_bits(round_to_format(x.hi, f), rounded);
  if (x.hi == 0 && x.lo == 0) return same_bits(rounded, 0.0);
  const double reach = std::ldexp(ulp(f, x), -Options{}.exact_ulp_bits);
  return same_bits(round_to_format(x.hi + std::copysign(reach, x.hi), f), rounded);
}

// A case of `op` that has exact and underflowing zeros among its outputs
// where the op has them: causal attention with N > M (a row with no visible
// key: O = 0 and dQ = 0), a zero input row of rmsnorm and mlp.swiglu.
Case case_with_zeros(Op op, Format f) {
  Dims d = small_dims(op);
  const bool rows_without_keys =
      op == Op::attention_fwd || op == Op::attention_bwd || op == Op::attention_fwdbwd;
  if (rows_without_keys) {
    d.N = 5;
    d.M = 2;
  }
  Case c = make_case(op, f, d, 16, /*causal=*/rows_without_keys);
  if (op == Op::rmsnorm || op == Op::mlp_swiglu) {
    const Shape x = c.inputs[0].shape();
    for (extent_t k = 0; k < x[1]; ++k) c.inputs[0].set({0, k}, 0);
  }
  return c;
}

// Every op answers, decides every element, and its exact value rounds to
// its rounded value: zeros included, sign and all.
TEST_P(EveryFormat, EveryOpAnswers) {
  const Format f = GetParam();
  int zeros = 0;
  for (const OpInfo& op : all_ops()) {
    for (int which = 0; which < 3; ++which) {
      const bool causal = which == 1;
      SCOPED_TRACE(std::string(op.name) + (causal ? " causal" : "") +
                   (which == 2 ? " with zeros" : ""));
      const Case c = which == 2 ? case_with_zeros(op.op, f)
                                : make_case(op.op, f, small_dims(op.op), 11, causal);
      const Answer a = evaluate(c);
      ASSERT_EQ(a.outputs.size(), op.outputs.size());
      EXPECT_EQ(a.undetermined, 0);
      EXPECT_GT(a.elements, 0);
      const auto shapes = output_shapes(c.problem);
      for (std::size_t k = 0; k < a.outputs.size(); ++k) {
        const TensorAnswer& t = a.outputs[k];
        EXPECT_EQ(t.name, op.outputs[k]);
        EXPECT_EQ(t.shape, shapes[k]);
        ASSERT_EQ(static_cast<moa::extent_t>(t.rounded.size()), moa::tau(shapes[k]));
        for (std::size_t i = 0; i < t.rounded.size(); ++i) {
          EXPECT_FALSE(t.undetermined[i]);
          if (std::isinf(t.exact[i].hi)) continue;  // an empty row's LSE
          EXPECT_TRUE(std::isfinite(t.rounded[i])) << t.name << "[" << i << "]";
          zeros += t.rounded[i] == 0;
          EXPECT_TRUE(correctly_rounded(f, t.rounded[i], t.exact[i]))
              << t.name << "[" << i << "]: rounded " << t.rounded[i] << ", exact " << t.exact[i].hi
              << " + " << t.exact[i].lo;
          // The DD is within 2^-10 ulp (Options::exact_ulp_bits): the
          // correctly rounded value measures at most 0.5 + 2^-10 against it.
          EXPECT_LE(ulp_error(f, t.rounded[i], t.exact[i]), 0.5 + 0x1p-10)
              << t.name << "[" << i << "]";
        }
      }
    }
  }
  EXPECT_GT(zeros, 0) << "no zero result was checked";
}

// Equal logits (q = 0): P = 1/M exactly, O the mean of V, LSE = log M.
TEST_P(EveryFormat, EqualLogitsGiveTheExactMean) {
  const Format f = GetParam();
  for (long m : {3L, 4L}) {
    const Dims d{.B = 1, .H = 1, .Hkv = 1, .N = 2, .M = m, .D = m};
    Case c = make_case(Op::attention_fwd, f, d, 1);
    set_all(c.inputs[0], 0);  // q = 0
    set_all(c.inputs[2], 0);  // v = I: O_d = P_d = 1/M
    for (long j = 0; j < m; ++j) c.inputs[2].set({0, 0, j, j}, 1);
    const Answer a = evaluate(c);
    for (std::size_t i = 0; i < a.outputs[0].rounded.size(); ++i)
      EXPECT_TRUE(same_bits(a.outputs[0].rounded[i], rounded_ratio(1, m, f)));
    for (double lse : a.outputs[1].rounded) EXPECT_TRUE(same_bits(lse, rounded_log(m, f)));
    if (m == 4) {  // 1/4 is exact everywhere: decided at once, a point
      EXPECT_GE(a.decided_first, a.elements - 2);  // all but perhaps the LSEs (log 4)
      for (const DD& x : a.outputs[0].exact) EXPECT_EQ(x.hi, 0.25);
    }
  }
}

// One key: P = 1 whatever the score, so O = V exactly, decided at once.
TEST_P(EveryFormat, OneKeyReturnsItsValueExactly) {
  const Format f = GetParam();
  const Dims d{.B = 2, .H = 2, .Hkv = 1, .N = 3, .M = 1, .D = 4};
  const Case c = make_case(Op::attention_fwd, f, d, 2);
  const Answer a = evaluate(c);
  for (const moa::Index& i : moa::iota(a.outputs[0].shape)) {
    const auto flat = static_cast<std::size_t>(moa::row_major_offset(a.outputs[0].shape, i));
    const double v = c.inputs[2].get({i[0], 0, 0, i[3]});
    EXPECT_TRUE(same_bits(a.outputs[0].rounded[flat], v));
    EXPECT_EQ(a.outputs[0].exact[flat].hi, v);
    EXPECT_EQ(a.outputs[0].exact[flat].lo, 0);
  }
}

// RMSNorm of a constant c with eps = 0 is sign(c) · w exactly; with eps it
// is c / sqrt(c² + eps) · w.
TEST_P(EveryFormat, RmsnormOfAConstant) {
  const Format f = GetParam();
  Case c = make_case(Op::rmsnorm, f, {.D = 4, .T = 1}, 3);
  set_all(c.inputs[0], -3);
  for (long k = 0; k < 4; ++k) c.inputs[1].set({k}, double(k) - 1.5);
  c.problem.params.eps = 0;
  Answer a = evaluate(c);
  for (long k = 0; k < 4; ++k) EXPECT_EQ(a.outputs[0].rounded[k], -(double(k) - 1.5));
  c.problem.params.eps = 0.5;  // y = -3 / sqrt(9.5) · w: check against MPFR
  a = evaluate(c);
  mpfr_t x;
  mpfr_init2(x, 300);
  for (long k = 0; k < 4; ++k) {
    mpfr_set_d(x, 9.5, MPFR_RNDN);
    mpfr_rec_sqrt(x, x, MPFR_RNDN);
    mpfr_mul_d(x, x, -3 * (double(k) - 1.5), MPFR_RNDN);
    EXPECT_TRUE(same_bits(a.outputs[0].rounded[k], round_to_format(x, f)));
  }
  mpfr_clear(x);
}

// silu(0) = 0: an MLP whose input row is 0 answers exactly 0.
TEST_P(EveryFormat, SiluAtZero) {
  Case c = make_case(Op::mlp_swiglu, GetParam(), {.T = 1, .Dm = 3, .F = 2}, 4);
  set_all(c.inputs[0], 0);
  const Answer a = evaluate(c);
  for (std::size_t i = 0; i < a.outputs[0].rounded.size(); ++i) {
    EXPECT_TRUE(same_bits(a.outputs[0].rounded[i], 0.0));
    EXPECT_EQ(a.outputs[0].exact[i].hi, 0);
  }
  EXPECT_EQ(a.decided_first, a.elements);
}

// Causal with N > M: the first N - M rows see no key, O = 0 and LSE = -inf
// exactly; fwdbwd's dq is 0 there.
TEST_P(EveryFormat, EmptyCausalRows) {
  const Dims d{.B = 1, .H = 1, .Hkv = 1, .N = 4, .M = 2, .D = 2};
  const Case c = make_case(Op::attention_fwdbwd, GetParam(), d, 5, /*causal=*/true);
  const Answer a = evaluate(c);
  for (long i = 0; i < 2; ++i) {
    EXPECT_EQ(a.outputs[1].rounded[i], -kInf);
    EXPECT_EQ(a.outputs[1].exact[i].hi, -kInf);
    for (long x = 0; x < 2; ++x) {
      EXPECT_TRUE(same_bits(a.outputs[0].rounded[i * 2 + x], 0.0));
      EXPECT_TRUE(same_bits(a.outputs[2].rounded[i * 2 + x], 0.0));
    }
  }
  EXPECT_TRUE(std::isfinite(a.outputs[1].rounded[2]));
}

// The answer depends on the values, not on the layout they arrive in, nor
// on the number of threads.
TEST_P(EveryFormat, LayoutsAndThreadsDoNotMatter) {
  for (const OpInfo& op : all_ops()) {
    SCOPED_TRACE(op.name);
    const Case row = make_case(op.op, GetParam(), small_dims(op.op), 6, true);
    const Case col =
        make_case(op.op, GetParam(), small_dims(op.op), 6, true, moa::LayoutKind::col_major);
    const Answer a = evaluate(row, {.threads = 1}), b = evaluate(col, {.threads = 2});
    for (std::size_t k = 0; k < a.outputs.size(); ++k) {
      for (std::size_t i = 0; i < a.outputs[k].rounded.size(); ++i) {
        EXPECT_TRUE(same_bits(a.outputs[k].rounded[i], b.outputs[k].rounded[i]));
        EXPECT_TRUE(same_bits(a.outputs[k].exact[i].hi, b.outputs[k].exact[i].hi));
      }
    }
  }
}

// attention.bwd's answer depends on q, k, v and dO alone: it equals the
// backward half of fwdbwd, whatever o and lse hold.
TEST_P(EveryFormat, BackwardIgnoresOAndLse) {
  const Dims d = small_dims(Op::attention_bwd);
  const Case fused = make_case(Op::attention_fwdbwd, GetParam(), d, 12, /*causal=*/true);
  Case bwd = make_case(Op::attention_bwd, GetParam(), d, 13, /*causal=*/true);
  bwd.inputs[0] = fused.inputs[0];
  bwd.inputs[1] = fused.inputs[1];
  bwd.inputs[2] = fused.inputs[2];
  bwd.inputs[5] = fused.inputs[3];  // do; o and lse stay random
  const Answer a = evaluate(fused), b = evaluate(bwd);
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(a.outputs[2 + k].rounded.size(), b.outputs[k].rounded.size());
    for (std::size_t i = 0; i < b.outputs[k].rounded.size(); ++i)
      EXPECT_TRUE(same_bits(a.outputs[2 + k].rounded[i], b.outputs[k].rounded[i]));
  }
}

// y = silu(x w1) · (x w3) · w2 with one-element weights lands past the
// format's overflow threshold, or just under half its smallest subnormal:
// the oracle rounds to inf and to a signed zero while the exact value stays
// finite and non-zero.
TEST(Oracle, OverflowAndUnderflowOfTheOutput) {
  auto mlp = [](Format f, double w1, double w3, double w2) {
    Case c = make_case(Op::mlp_swiglu, f, {.T = 1, .Dm = 1, .F = 1}, 14);
    c.inputs[0].set({0, 0}, 1);
    c.inputs[1].set({0, 0}, w1);
    c.inputs[2].set({0, 0}, w3);
    c.inputs[3].set({0, 0}, w2);
    return evaluate(c).outputs[0];
  };
  // f16: 64 · 1024 · 2 · (1 - e^-64) > 65504 + 16
  TensorAnswer y = mlp(Format::f16, 64, 1024, 2);
  EXPECT_EQ(y.rounded[0], kInf);
  EXPECT_NEAR(y.exact[0].hi, 131072, 131072 * 0x1p-45);  // (the first pass decided it)
  // f16: 64 · 2^-7 · 2^-24 · (1 - e^-64) = 2^-25 (1 - e^-64): just under
  // half the smallest subnormal, so +0; with w1 = -64 a tiny negative, -0.
  y = mlp(Format::f16, 64, 0x1p-7, 0x1p-24);
  EXPECT_TRUE(same_bits(y.rounded[0], 0.0));
  EXPECT_GT(y.exact[0].hi, 0);
  y = mlp(Format::f16, -64, 0x1p-7, 0x1p-24);
  EXPECT_TRUE(same_bits(y.rounded[0], -0.0));
  // bf16 and f32: 2^100 · 2^100 · 2^100 overflows both; f64 holds it.
  EXPECT_EQ(mlp(Format::bf16, 0x1p100, 0x1p100, 0x1p100).rounded[0], kInf);
  EXPECT_EQ(mlp(Format::f32, 0x1p100, 0x1p100, 0x1p100).rounded[0], kInf);
  EXPECT_EQ(mlp(Format::f64, 0x1p100, 0x1p100, 0x1p100).rounded[0], 0x1p300);
  // bf16: a result just above half its smallest subnormal rounds up to it.
  y = mlp(Format::bf16, 0x1p-60, 0x1p-60, 0x1p-13);  // silu(z) = z/2 + z²/4 - ...: > 2^-134
  EXPECT_EQ(y.rounded[0], 0x1p-133);
}

// Concurrent evaluate() calls give the answers of sequential ones.
TEST(Oracle, ConcurrentCallsAgree) {
  const Case c = make_case(Op::attention_fwdbwd, Format::f64, small_dims(Op::attention_fwdbwd), 15);
  const Answer want = evaluate(c, {.threads = 1});
  std::vector<Answer> got(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = evaluate(c, {.threads = 1}); });
  for (std::thread& t : threads) t.join();
  for (const Answer& a : got)
    for (std::size_t k = 0; k < a.outputs.size(); ++k)
      for (std::size_t i = 0; i < a.outputs[k].rounded.size(); ++i)
        EXPECT_TRUE(same_bits(a.outputs[k].rounded[i], want.outputs[k].rounded[i]));
}

// Non-finite inputs propagate as the IEEE DNF says: an infinity in a seen
// value row makes O infinite, a NaN query makes its row NaN, and a NaN
// behind the causal mask is never read.
TEST(Oracle, NonFiniteInputs) {
  const Dims d{.B = 1, .H = 1, .Hkv = 1, .N = 2, .M = 2, .D = 2};
  Case c = make_case(Op::attention_fwd, Format::f32, d, 7, /*causal=*/true);
  c.inputs[2].set({0, 0, 1, 0}, std::numeric_limits<double>::quiet_NaN());  // seen by row 1 only
  c.inputs[2].set({0, 0, 0, 1}, kInf);                                      // seen by both
  c.inputs[0].set({0, 0, 1, 1}, std::numeric_limits<double>::quiet_NaN());  // q row 1
  const Answer a = evaluate(c);
  EXPECT_EQ(a.undetermined, 0);
  EXPECT_TRUE(std::isfinite(a.outputs[0].rounded[0]));  // row 0 does not see key 1
  EXPECT_EQ(a.outputs[0].rounded[1], kInf);
  EXPECT_TRUE(std::isnan(a.outputs[0].rounded[2]));
  EXPECT_TRUE(std::isnan(a.outputs[1].rounded[1]));
}

// 40 exact digits need MPFI past 128 bits (the first passes never give
// them); a tight cap leaves f64 elements undetermined (and says so) instead
// of guessing.
TEST(Oracle, PrecisionCap) {
  const Case c = make_case(Op::attention_fwd, Format::f64, small_dims(Op::attention_fwd), 8);
  const Answer full = evaluate(c, {.exact_digits = 40});
  EXPECT_EQ(full.undetermined, 0);
  EXPECT_GE(full.max_precision_used, 128);
  const Answer capped = evaluate(c, {.max_precision = 53, .exact_digits = 40});
  EXPECT_GT(capped.undetermined, 0);
  for (const TensorAnswer& t : capped.outputs)
    for (std::size_t i = 0; i < t.rounded.size(); ++i)
      if (t.undetermined[i]) {
        EXPECT_TRUE(std::isfinite(t.exact[i].hi));
      }
}

// With exact_digits, every element carries its decimal value and its DD is
// accurate to far better than 2^-106.
TEST(Oracle, ExactDigits) {
  const Case c = make_case(Op::rmsnorm, Format::bf16, small_dims(Op::rmsnorm), 9);
  const Answer a = evaluate(c, {.exact_digits = 40});
  EXPECT_EQ(a.undetermined, 0);
  EXPECT_LT(a.max_relative_width, std::ldexp(1.0, -130));
  for (const std::string& s : a.outputs[0].exact_decimal) {
    ASSERT_GE(s.size(), 41u);
    EXPECT_EQ(std::count_if(s.begin(), s.begin() + static_cast<long>(s.find('e')),
                            [](char ch) { return ch >= '0' && ch <= '9'; }),
              40);
  }
}

// Inputs that do not match the problem are refused.
TEST(Oracle, RefusesMismatchedInputs) {
  Case c = make_case(Op::rmsnorm, Format::f32, small_dims(Op::rmsnorm), 10);
  c.problem.format = Format::f16;  // the inputs hold f32
  EXPECT_THROW(evaluate(c), std::invalid_argument);
  c = make_case(Op::rmsnorm, Format::f32, small_dims(Op::rmsnorm), 10);
  c.inputs.pop_back();
  EXPECT_THROW(evaluate(c), std::invalid_argument);
}

}  // namespace
}  // namespace moacert::oracle
