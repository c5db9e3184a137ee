// Algorithmic equivalence: the generic loop nests of the flash forward, the
// fused forward+backward and the split decode, instantiated with mpfr_float
// at 256 bits, agree with the oracle's exact values to 2^-200, relative to
// the magnitude of the terms each output sums (the largest exact value, or
// the inputs' bound on its terms when cancellation makes the value itself
// small: 256-bit rounding of terms that cancel is not an algorithmic error). Rounding cannot
// explain a disagreement at that level, so this proves the ONF rewrite — tiling, online rescaling,
// recomputation, split-K merge — right as mathematics, independently of any floating-point format.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>  // needs gtest.h first

#include <cmath>

#include <boost/multiprecision/mpfr.hpp>

#include "kernels/cpu/attention_decode/split_generic.hpp"
#include "kernels/cpu/attention_fwd/flash_generic.hpp"
#include "kernels/cpu/attention_fwdbwd/fused_generic.hpp"
#include "oracle/oracle.hpp"
#include "properties/case_gen.hpp"

namespace moacert::properties {
namespace {

using Mp = boost::multiprecision::mpfr_float;
using moa::extent_t;

constexpr unsigned kBits = 256;

struct Precision {
  Precision() { Mp::default_precision(boost::multiprecision::detail::digits2_2_10(kBits)); }
};

std::vector<moa::Tensor<Mp>> inputs_mp(const Case& c) {
  std::vector<moa::Tensor<Mp>> out;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    moa::Tensor<Mp> t(c.inputs[k].shape());
    if (!is_index_input(c.problem, int(k)))
      for (const moa::Index& i : moa::iota(t.shape())) t.view()(i) = Mp(c.inputs[k].get(i));
    out.push_back(std::move(t));
  }
  return out;
}

double max_abs(const AnyTensor& t) {
  double m = 0;
  for (const moa::Index& i : moa::iota(t.shape())) m = std::max(m, std::fabs(t.get(i)));
  return m;
}

// The magnitude of the terms of each attention output: o sums P·v, lse is
// about max |s| + log M, dq sums σ P (dP - D) k with |dP - D| <= 2 D |dO| |v|,
// dk the same over every row of the group, dv sums P dO over them.
std::vector<double> term_scales(const Case& c) {
  const Dims& d = c.problem.dims;
  const double q = max_abs(c.inputs[0]), k = max_abs(c.inputs[1]), v = max_abs(c.inputs[2]);
  const double sigma = c.problem.scale(), rows = double(d.N * (d.H / d.Hkv));
  const double logits = sigma * double(d.D) * q * k + std::log(double(d.M)) + 1;
  if (c.problem.op != Op::attention_fwdbwd) return {v, logits};
  const double dO = max_abs(c.inputs[3]), dp = 2 * double(d.D) * dO * v;
  return {v, logits, sigma * dp * k * double(d.M), sigma * dp * q * rows, dO * rows};
}

// Every output element within 2^-200 of the oracle's 70-digit value,
// relative to the larger of the tensor's largest exact magnitude and the
// magnitude of its terms; infinities equal.
void expect_equivalent(const Case& c, const std::vector<moa::Tensor<Mp>>& got) {
  const std::vector<double> terms = term_scales(c);
  oracle::Options o;
  o.exact_digits = 70;
  const oracle::Answer exact = oracle::evaluate(c, o);
  for (std::size_t t = 0; t < got.size(); ++t) {
    std::vector<Mp> x;
    Mp scale = terms[t];
    for (const std::string& s : exact.outputs[t].exact_decimal) {
      x.push_back(Mp(s));
      if (boost::multiprecision::isfinite(x.back())) scale = std::max(scale, Mp(abs(x.back())));
    }
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(got[t].shape())) {
      const Mp& y = got[t].view()(i);
      if (!boost::multiprecision::isfinite(x[n])) {
        RC_ASSERT(y == x[n]);
      } else {
        RC_ASSERT(Mp(abs(y - x[n])) <= ldexp(scale, -200));
      }
      ++n;
    }
  }
}

// Small tiles, so that tails, several rescales and several chunks occur.
rc::Gen<extent_t> gen_block() {
  return rc::gen::inRange<extent_t>(1, 6);
}

RC_GTEST_PROP(AlgorithmicEquivalence, FlashForwardAt256Bits, ()) {
  static const Precision precision;
  const extent_t bm = *gen_block(), bn = *gen_block();
  const Case c = build_case(*gen_case_spec(Op::attention_fwd, Format::f64, {bm, bn}));
  RC_TAG(c.problem.causal() ? "causal" : "not causal");
  const auto in = inputs_mp(c);
  const auto shapes = output_shapes(c.problem);
  std::vector<moa::Tensor<Mp>> out{moa::Tensor<Mp>(shapes[0]), moa::Tensor<Mp>(shapes[1])};
  kernels::cpu::flash_fwd_generic<Mp>(in[0].view(), in[1].view(), in[2].view(), c.problem.scale(),
                                      c.problem.causal(), out[0].view(), out[1].view(), bm, bn);
  expect_equivalent(c, out);
}

RC_GTEST_PROP(AlgorithmicEquivalence, FusedForwardBackwardAt256Bits, ()) {
  static const Precision precision;
  const extent_t bm = *gen_block(), bn = *gen_block();
  const Case c = build_case(*gen_case_spec(Op::attention_fwdbwd, Format::f64, {bm, bn}));
  RC_TAG(c.problem.causal() ? "causal" : "not causal");
  const auto in = inputs_mp(c);
  std::vector<moa::Tensor<Mp>> out;
  for (const moa::Shape& s : output_shapes(c.problem)) out.emplace_back(s);
  kernels::cpu::fused_fwdbwd_generic<Mp>(
      in[0].view(), in[1].view(), in[2].view(), in[3].view(), c.problem.scale(), c.problem.causal(),
      out[0].view(), out[1].view(), out[2].view(), out[3].view(), out[4].view(), bm, bn);
  expect_equivalent(c, out);
}

RC_GTEST_PROP(AlgorithmicEquivalence, SplitDecodeAt256Bits, ()) {
  static const Precision precision;
  const extent_t split = *gen_block();
  const Case c = build_case(*gen_case_spec(Op::attention_decode, Format::f64, {split}));
  const auto in = inputs_mp(c);
  const auto shapes = output_shapes(c.problem);
  std::vector<moa::Tensor<Mp>> out{moa::Tensor<Mp>(shapes[0]), moa::Tensor<Mp>(shapes[1])};
  kernels::cpu::decode_split_generic<Mp>(in[0].view(), in[1].view(), in[2].view(),
                                         c.inputs[3].view<std::int64_t>(), c.problem.scale(),
                                         out[0].view(), out[1].view(), split);
  expect_equivalent(c, out);
}

}  // namespace
}  // namespace moacert::properties
