// The oracle's allowances (oracle.hpp, Options::allowed): an element's
// `exact` is within 2^-exact_ulp_bits of the larger of its ulp and its
// allowance, an element whose rounding was left open says so with a NaN
// `rounded`, and every rounding that was decided is the correct one.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "oracle/oracle.hpp"
#include "oracle/ulp.hpp"
#include "tests/support/harness.hpp"

namespace moacert::oracle {
namespace {

using moa::extent_t;

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// |a - b| in ulps of b: a.hi - b.hi is exact for DDs this close (Sterbenz),
// so the lo parts, which carry an f64's last bits, count too.
double distance_in_ulps(Format f, const DD& a, const DD& b) {
  return std::fabs((a.hi - b.hi) + (a.lo - b.lo)) / ulp(f, b);
}

// A sampled backward whose key rows sum 2·512 query rows: its dK and dV
// cancel, so the first pass leaves some of their enclosures wider than
// 2^-9 ulp (the key rows the certify sample judges at scale).
struct Backward {
  Case c;
  Selection rows;
};
Backward long_backward(Format f) {
  const Dims d{.B = 1, .H = 2, .Hkv = 1, .N = 512, .M = 512, .D = 64};
  Backward b{test::make_case(Op::attention_bwd, f, d, 29), {}};
  b.rows.query_rows = {0, 511, 1023};
  for (extent_t j = 0; j < d.M; j += 16) b.rows.key_rows.push_back(j);
  return b;
}

// The allowance every evaluated element gets: `ulps` ulps of its exact value.
std::vector<std::vector<double>> allowances_of(const Answer& reference, Format f, double ulps) {
  std::vector<std::vector<double>> out;
  for (const TensorAnswer& t : reference.outputs) {
    std::vector<double> a(t.exact.size(), 0.0);
    for (std::size_t i = 0; i < a.size(); ++i)
      if (t.evaluated[i]) a[i] = ulps * ulp(f, t.exact[i]);
    out.push_back(std::move(a));
  }
  return out;
}

// f32: f64's first pass (double-doubles) already gives this case's every
// element to 2^-9 ulp, so an allowance changes nothing there (the exact
// zeros below exercise f64).
TEST(Allowances, ExactIsWithinItsShareOfTheAllowance) {
  const Format f = Format::f32;
  const Backward b = long_backward(f);
  // The reference: every `exact` within 2^-20 ulp. And the default's answer.
  const Answer reference = evaluate(b.c, {.exact_ulp_bits = 20, .rows = b.rows});
  const Answer plain = evaluate(b.c, {.rows = b.rows});
  ASSERT_EQ(reference.undetermined, 0);
  // 16 ulps: the oracle may stop at enclosures 2^-5 ulp wide, 16 times the
  // default's 2^-9.
  constexpr double kUlps = 16;
  const auto allowed = allowances_of(reference, f, kUlps);
  const Answer a = evaluate(b.c, {.allowed = &allowed, .rows = b.rows});
  EXPECT_EQ(a.undetermined, 0);
  int settled_sooner = 0, open = 0, judged = 0;
  for (std::size_t k = 0; k < a.outputs.size(); ++k) {
    const TensorAnswer& t = a.outputs[k];
    const TensorAnswer& r = reference.outputs[k];
    for (std::size_t i = 0; i < t.exact.size(); ++i) {
      ASSERT_EQ(t.evaluated[i], r.evaluated[i]);
      if (!t.evaluated[i]) continue;
      ++judged;
      // Against the reference, in ulps: within 2^-10 of 16 ulps, and the
      // reference's own 2^-20.
      EXPECT_LE(distance_in_ulps(f, t.exact[i], r.exact[i]), 0x1p-10 * kUlps + 0x1p-20)
          << t.name << "[" << i << "]";
      const DD& p = plain.outputs[k].exact[i];
      settled_sooner += !same_bits(t.exact[i].hi, p.hi) || !same_bits(t.exact[i].lo, p.lo);
      if (std::isnan(t.rounded[i])) {
        ++open;
      } else {
        EXPECT_TRUE(same_bits(t.rounded[i], r.rounded[i])) << t.name << "[" << i << "]";
      }
    }
  }
  // The allowance was used: some `exact` was taken from an enclosure the
  // default would have narrowed further; otherwise the test checks nothing
  // the default does not. (Roundings left open: ExactZeros below; here
  // the first pass's blocked sums decide nearly all, `open` is often 0.)
  EXPECT_GT(settled_sooner, 0) << "of " << judged << ", " << open << " left open";
}

// An output that is exactly 0 through inexact operations: keys in equal
// pairs whose value rows are opposite, so O = P_1 (v - v) + P_2 (w - w),
// with P inexact. Its enclosure straddles 0 at every precision: without an
// allowance it is undetermined at the cap (docs/oracle.md, "Undetermined");
// with one, the first pass settles it, its rounding open.
Case cancelling_forward(Format f) {
  Case c =
      test::make_case(Op::attention_fwd, f, {.B = 1, .H = 1, .Hkv = 1, .N = 1, .M = 4, .D = 2}, 5);
  const double q[2] = {0.75, -0.5}, k[2][2] = {{0.25, 1}, {-1, 0.5}}, v[2][2] = {{1, 2}, {3, -1}};
  for (extent_t d = 0; d < 2; ++d) {
    c.inputs[0].set({0, 0, 0, d}, q[d]);
    for (extent_t j = 0; j < 4; ++j) {
      c.inputs[1].set({0, 0, j, d}, k[j / 2][d]);
      c.inputs[2].set({0, 0, j, d}, j % 2 == 0 ? v[j / 2][d] : -v[j / 2][d]);
    }
  }
  return c;
}

class ExactZeros : public ::testing::TestWithParam<Format> {};
INSTANTIATE_TEST_SUITE_P(Oracle, ExactZeros, ::testing::Values(Format::f32, Format::f64),
                         [](const auto& p) { return std::string(name(p.param)); });

TEST_P(ExactZeros, AreSettledByAnAllowanceNotTheCap) {
  const Format f = GetParam();
  const Case c = cancelling_forward(f);
  const Answer plain = evaluate(c, {.max_precision = 256});
  EXPECT_EQ(plain.undetermined, 2) << "o's two elements, at the cap";
  constexpr double kAllowed = 0x1p-20;
  const std::vector<std::vector<double>> allowed{{kAllowed, kAllowed}, {kAllowed}};
  const Answer a = evaluate(c, {.max_precision = 256, .allowed = &allowed});
  EXPECT_EQ(a.undetermined, 0);
  for (std::size_t d = 0; d < 2; ++d) {
    const TensorAnswer& o = a.outputs[0];
    EXPECT_TRUE(std::isnan(o.rounded[d])) << "o[" << d << "]: its rounding was not decided";
    EXPECT_LE(std::fabs(o.exact[d].hi + o.exact[d].lo), 0x1p-10 * kAllowed) << "o[" << d << "]";
  }
  // lse is decided as without an allowance.
  EXPECT_TRUE(same_bits(a.outputs[1].rounded[0], plain.outputs[1].rounded[0]));
}

TEST(Allowances, ZeroAllowancesAreTheDefault) {
  const Backward b = long_backward(Format::f32);
  const Answer plain = evaluate(b.c, {.rows = b.rows});
  std::vector<std::vector<double>> none;
  for (const TensorAnswer& t : plain.outputs) none.emplace_back(t.exact.size(), 0.0);
  none[1][0] = std::numeric_limits<double>::infinity();  // asks for nothing either
  const Answer a = evaluate(b.c, {.allowed = &none, .rows = b.rows});
  for (std::size_t k = 0; k < a.outputs.size(); ++k) {
    for (std::size_t i = 0; i < a.outputs[k].exact.size(); ++i) {
      if (!a.outputs[k].evaluated[i]) continue;
      EXPECT_TRUE(same_bits(a.outputs[k].rounded[i], plain.outputs[k].rounded[i]));
      EXPECT_TRUE(same_bits(a.outputs[k].exact[i].hi, plain.outputs[k].exact[i].hi));
      EXPECT_TRUE(same_bits(a.outputs[k].exact[i].lo, plain.outputs[k].exact[i].lo));
    }
  }
}

TEST(Allowances, RefusesAllowancesOfAnotherShape) {
  const Case c = test::make_case(Op::rmsnorm, Format::f32, test::small_dims(Op::rmsnorm), 3);
  const std::vector<std::vector<double>> short_by_one{
      std::vector<double>(static_cast<std::size_t>(moa::tau(output_shapes(c.problem)[0])) - 1)};
  EXPECT_THROW(evaluate(c, {.allowed = &short_by_one}), std::invalid_argument);
  const std::vector<std::vector<double>> none;
  EXPECT_THROW(evaluate(c, {.allowed = &none}), std::invalid_argument);
}

}  // namespace
}  // namespace moacert::oracle
