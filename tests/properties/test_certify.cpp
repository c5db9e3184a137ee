// certify and reproduce: a deliberately wrong kernel is caught, its
// counterexample shrinks, and the token re-creates the inputs the kernel
// failed on, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>

#include <omp.h>

#include "properties/certify.hpp"
#include "properties/properties.hpp"
#include "tests/support/harness.hpp"

namespace moacert::properties {
namespace {

// The inputs of the planted kernel's latest run, copied as they arrived.
struct Recorder {
  std::vector<AnyTensor> latest;
};

// The DNF kernel, except that it drops the last visible key of every row
// once a row has at least five keys: wrong only on larger cases, so the
// counterexample has something to shrink. Each run records its inputs.
kernels::Variant planted_wrong_kernel(std::shared_ptr<Recorder> recorder) {
  const kernels::Variant* dnf = kernels::Registry::builtin().find(Op::attention_fwd, "cpu.dnf");
  kernels::Variant v = *dnf;
  v.name = "test.drops_last_key";
  v.run = [dnf, recorder](const Problem& p, std::span<const TensorRef> in,
                          std::span<const TensorRef> out, const kernels::RunOptions& o) {
    recorder->latest.clear();
    for (const TensorRef& t : in) {
      AnyTensor copy(t.dtype, t.layout);
      std::memcpy(copy.data(), t.data,
                  std::size_t(t.layout.cosize()) * std::size_t(dtype_bytes(t.dtype)));
      recorder->latest.push_back(std::move(copy));
    }
    if (p.dims.M < 5 || p.causal()) return dnf->run(p, in, out, o);
    Problem fewer = p;
    fewer.dims.M = p.dims.M - 1;
    std::vector<TensorRef> shorter(in.begin(), in.end());
    for (int k = 1; k < 3; ++k) {  // k and v without their last key
      const moa::Layout& l = in[k].layout;
      shorter[k].layout =
          moa::Layout::strided({p.dims.B, p.dims.Hkv, p.dims.M - 1, p.dims.D}, l.strides());
    }
    dnf->run(fewer, shorter, out, o);
  };
  return v;
}

// rmsnorm's DNF (f32) reading w from a cache kept from call to call, as a
// process keeps state (fresh_process empties it), refreshed only by a call
// wider than every call before: right alone, wrong after a wider (or as
// wide) call with other weights.
kernels::Variant stale_weights_kernel() {
  const kernels::Variant* dnf = kernels::Registry::builtin().find(Op::rmsnorm, "cpu.dnf");
  auto cache = std::make_shared<std::vector<float>>();  // (the widest call's D)
  kernels::Variant v = *dnf;
  v.name = "test.stale_weights";
  v.formats = {Format::f32};
  v.run = [dnf, cache](const Problem& p, std::span<const TensorRef> in,
                       std::span<const TensorRef> out, const kernels::RunOptions& o) {
    const TensorRef& w = in[1];  // rmsnorm's inputs: x, w
    const moa::Shape shape = w.layout.shape();
    if (shape[0] > moa::extent_t(cache->size())) {
      cache->clear();
      for (const moa::Index& i : moa::iota(shape))
        cache->push_back(static_cast<const float*>(w.data)[w.layout(i)]);
    }
    AnyTensor stale(DType::f32, moa::make_layout(moa::LayoutKind::row_major, shape));
    std::copy_n(cache->begin(), shape[0], static_cast<float*>(stale.data()));
    std::vector<TensorRef> with_stale(in.begin(), in.end());
    with_stale[1] = stale.ref();
    dnf->run(p, with_stale, out, o);
  };
  v.fresh_process = [cache] { cache->clear(); };
  return v;
}

// A failure that depends on earlier calls (docs/design.md#certify): run
// again alone in a fresh process it holds, so certify names the call that
// sets it up, its token carries that call, and a replay makes it first.
TEST(Certify, AFailureThatDependsOnEarlierCallsNamesThemAndItsTokenReplays) {
  const kernels::Variant stale = stale_weights_kernel();
  CertifyOptions o;
  o.variant = &stale;
  o.format = Format::f32;
  o.cases = 20;
  o.seed = 7;
  const Certificate cert = certify(o);
  ASSERT_FALSE(cert.holds);
  EXPECT_NE(cert.failure.find("; depends on earlier calls: holds in a fresh worker, fails there "
                              "after the call of "),
            std::string::npos)
      << cert.failure;
  EXPECT_NE(cert.failure.find(", which the token replays first"), std::string::npos)
      << cert.failure;
  const std::optional<Token> token = Token::decode(cert.worst_token);
  ASSERT_TRUE(token);
  ASSERT_EQ(token->setup.size(), 1u);
  Token alone = *token;  // its case without the call that sets it up
  alone.setup.clear();
  stale.fresh_process();
  EXPECT_TRUE(replay(alone, stale).verdict.holds);
  const Replay r = replay(*token, stale);
  EXPECT_FALSE(r.verdict.holds);
  EXPECT_NE(r.verdict.why.find("; depends on earlier calls: holds in a fresh worker"),
            std::string::npos)
      << r.verdict.why;
}

TEST(Certify, CatchesAWrongKernelAndTheTokenReplaysItsCase) {
  const auto recorder = std::make_shared<Recorder>();
  const kernels::Variant wrong = planted_wrong_kernel(recorder);
  CertifyOptions o;
  o.variant = &wrong;
  o.format = Format::f32;
  o.cases = 100;
  o.seed = 12345;
  // The curated edge cases catch it first, and shrink it through
  // shrinkable_spec (no generator drew them) to the same edge: five keys,
  // no causal mask. Their token walks the same tree back.
  const Certificate curated = certify(o);
  ASSERT_FALSE(curated.holds);
  const std::optional<Token> curated_token = Token::decode(curated.worst_token);
  ASSERT_TRUE(curated_token);
  EXPECT_LT(curated_token->index, 0);
  EXPECT_FALSE(curated_token->path.empty()) << "the curated counterexample was not shrunk";
  EXPECT_EQ(curated.random_run, 0);
  // The figure beside the verdict is the counterexample's own error /
  // allowed: past 1, and finite, since every element it drops is allowed
  // some error.
  EXPECT_GT(curated.worst_ratio, 1);
  EXPECT_TRUE(std::isfinite(curated.worst_ratio));
  const Replay curated_replay = replay(*curated_token, wrong);
  EXPECT_FALSE(curated_replay.verdict.holds);
  EXPECT_EQ(describe(curated_replay.spec), curated.failure_case);
  EXPECT_EQ(curated_replay.spec.problem.dims.M, 5);
  EXPECT_FALSE(curated_replay.spec.problem.params.causal);
  EXPECT_TRUE(
      replay(*curated_token, *kernels::Registry::builtin().find(Op::attention_fwd, "cpu.dnf"))
          .verdict.holds);
  // Random cases alone: caught, then shrunk. Certify reports each shrink it
  // keeps right after judging it, so the kernel's latest inputs then are
  // those of the failing case found so far: the last such report holds the
  // inputs of the shrunk counterexample itself.
  o.curated = false;
  std::vector<AnyTensor> failing_inputs;
  o.progress = [&](int, int, const char* phase) {
    if (std::string(phase) == "shrinking") failing_inputs = recorder->latest;
  };
  const Certificate cert = certify(o);
  ASSERT_FALSE(failing_inputs.empty()) << "the counterexample was never shrunk";
  ASSERT_FALSE(cert.holds);
  ASSERT_FALSE(cert.worst_token.empty());
  ASSERT_FALSE(cert.failure_elements.empty());

  std::string why;
  const std::optional<Token> token = Token::decode(cert.worst_token, &why);
  ASSERT_TRUE(token) << why;
  EXPECT_EQ(token->variant, "test.drops_last_key");
  EXPECT_EQ(token->seed, 12345u);

  // The token's case is the shrunk counterexample: the same description
  // and, bit for bit, the same inputs in the same layouts as the kernel
  // received when certify found it.
  const Replay first = replay(*token, wrong);
  EXPECT_FALSE(first.verdict.holds);
  EXPECT_EQ(describe(first.spec), cert.failure_case);
  ASSERT_EQ(first.c.inputs.size(), failing_inputs.size());
  for (std::size_t k = 0; k < failing_inputs.size(); ++k) {
    EXPECT_EQ(first.c.inputs[k].layout(), failing_inputs[k].layout()) << "input " << k;
    EXPECT_TRUE(test::same_logical_elements(first.c.inputs[k], failing_inputs[k])) << "input " << k;
  }
  // Shrinking took it to the edge of the defect: five keys, no causal mask.
  EXPECT_EQ(first.spec.problem.dims.M, 5);
  // The correct kernel passes on the very same case.
  const kernels::Variant* dnf = kernels::Registry::builtin().find(Op::attention_fwd, "cpu.dnf");
  EXPECT_TRUE(replay(*token, *dnf).verdict.holds);
}

TEST(Certify, ACorrectKernelHoldsAndNamesItsWorstCase) {
  const kernels::Variant* dnf = kernels::Registry::builtin().find(Op::rmsnorm, "cpu.dnf");
  CertifyOptions o;
  o.variant = dnf;
  o.cases = 40;
  o.seed = 99;
  const Certificate cert = certify(o);
  EXPECT_TRUE(cert.holds) << cert.failure;
  EXPECT_EQ(cert.random_run, 40);
  EXPECT_GT(cert.curated_run, 0);
  EXPECT_GT(cert.worst_ratio, 0);
  EXPECT_LE(cert.worst_ratio, 1);
  EXPECT_TRUE(cert.determinism_checked && cert.determinism_holds);
  EXPECT_TRUE(Token::decode(cert.worst_token));
}

// rmsnorm's DNF, a host kernel claiming determinism, whose first output
// element moves by one ulp on a call with 2 threads (`by_threads`) or on
// every second call (`by_call`); `planted` false: neither, its correct twin.
kernels::Variant nondeterministic_host_kernel(bool planted, bool by_threads) {
  const kernels::Variant* dnf = kernels::Registry::builtin().find(Op::rmsnorm, "cpu.dnf");
  kernels::Variant v = *dnf;
  v.name = planted ? (by_threads ? "test.moves_at_2_threads" : "test.moves_every_second_call")
                   : "test.deterministic_twin";
  v.deterministic = true;
  v.host_threads = true;
  auto calls = std::make_shared<int>(0);
  v.run = [dnf, planted, by_threads, calls](const Problem& p, std::span<const TensorRef> in,
                                            std::span<const TensorRef> out,
                                            const kernels::RunOptions& o) {
    dnf->run(p, in, out, o);
    const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
    const bool moves = by_threads ? threads == 2 : (*calls)++ % 2 == 1;
    if (!planted || !moves) return;
    auto* y = static_cast<float*>(out[0].data);
    y[0] = std::nextafter(y[0], INFINITY);
  };
  return v;
}

// The determinism check with the case's own run standing for one of its
// three (docs/design.md#certify): a kernel whose outputs move with the
// thread count or from run to run still fails it, whatever thread count
// the case's run had, and its deterministic twin holds.
TEST(Certify, TheDeterminismCheckStillCatchesAKernelWhoseCaseRunStandsForOneOfItsRuns) {
  for (const int threads : {0, 1, 2, 3}) {
    for (const bool by_threads : {true, false}) {
      SCOPED_TRACE("--threads " + std::to_string(threads) +
                   (by_threads ? ", moves at 2 threads" : ", moves every second call"));
      const kernels::Variant planted = nondeterministic_host_kernel(true, by_threads);
      CertifyOptions o;
      o.variant = &planted;
      o.format = Format::f32;
      o.cases = 2;
      o.seed = 5;
      o.threads = threads;
      o.equivalence = false;
      o.max_shrinks = 0;
      const Certificate cert = certify(o);
      EXPECT_FALSE(cert.holds);
      EXPECT_FALSE(cert.determinism_holds);
      EXPECT_NE(cert.failure.find("is registered deterministic but its outputs differ between "
                                  "runs or thread counts"),
                std::string::npos)
          << cert.failure;
    }
    const kernels::Variant twin = nondeterministic_host_kernel(false, true);
    CertifyOptions o;
    o.variant = &twin;
    o.format = Format::f32;
    o.cases = 2;
    o.seed = 5;
    o.threads = threads;
    o.equivalence = false;
    const Certificate cert = certify(o);
    EXPECT_TRUE(cert.holds) << cert.failure;
    EXPECT_TRUE(cert.determinism_checked && cert.determinism_holds);
  }
}

TEST(Tokens, RoundTripAndRefuseCorruption) {
  Token t;
  t.op = Op::attention_decode;
  t.format = Format::bf16;
  t.variant = "cpu.split";
  t.rule = Rule{Rule::max_ulp, 2.5};
  t.seed = 0xdeadbeefcafef00dull;
  t.index = -3;
  t.size = 77;
  t.path = {0, 4, 1, 300};
  t.tiles = {16, 64};
  const std::string text = t.encode();
  for (char c : text)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_');
  const std::optional<Token> back = Token::decode(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->op, t.op);
  EXPECT_EQ(back->format, t.format);
  EXPECT_EQ(back->variant, t.variant);
  EXPECT_EQ(back->rule.kind, t.rule.kind);
  EXPECT_EQ(back->rule.k, t.rule.k);
  EXPECT_EQ(back->seed, t.seed);
  EXPECT_EQ(back->index, t.index);
  EXPECT_EQ(back->size, t.size);
  EXPECT_EQ(back->path, t.path);
  EXPECT_EQ(back->tiles, t.tiles);

  // The calls a failure that depends on earlier ones needs (Token::setup)
  // follow the variant's name: the bytes before them are the same.
  Token with_setup = t;
  with_setup.setup = {{-2, 0}, {5, 31}};
  const std::string longer = with_setup.encode();
  EXPECT_EQ(longer.substr(0, text.size() - 1), text.substr(0, text.size() - 1));
  const std::optional<Token> back_setup = Token::decode(longer);
  ASSERT_TRUE(back_setup);
  EXPECT_EQ(back_setup->setup, with_setup.setup);
  EXPECT_EQ(back_setup->variant, t.variant);
  EXPECT_FALSE(Token::decode(longer.substr(0, longer.size() - 2)));

  std::string why;
  EXPECT_FALSE(Token::decode("", &why));
  EXPECT_FALSE(Token::decode("mc2." + text.substr(4), &why));
  EXPECT_FALSE(Token::decode(text.substr(0, text.size() - 3), &why));
  EXPECT_FALSE(Token::decode(text + "A", &why));
  EXPECT_FALSE(Token::decode("mc1.!!!", &why));
  EXPECT_NE(why, "");
}

// One output tensor of three elements with these exact values.
oracle::Answer answer_of(std::vector<double> exact) {
  oracle::TensorAnswer t;
  t.name = "o";
  for (double x : exact) {
    t.exact.push_back(oracle::DD{x, 0});
    t.rounded.push_back(x);
    t.evaluated.push_back(1);
    t.undetermined.push_back(0);
  }
  oracle::Answer a;
  a.outputs.push_back(std::move(t));
  return a;
}

// Where PyTorch gives a tensor no scale, R times its error allows anything;
// the a priori bound judges it instead (docs/design.md, vs-torch). Both
// used to be +inf: a kernel wrong by any finite amount passed.
TEST(VsTorchRule, WithoutAScaleFromPyTorchTheAprioriBoundJudges) {
  const std::vector<std::vector<double>> bounds = {{1e-6, 2e-6, 3e-6}};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const std::vector<double>& torch : {std::vector<double>{0, nan, 1e-7}, {inf, 0, 0}}) {
    const auto allowed =
        vs_torch_allowed(answer_of({1.0, 2.0, 0.5}), {torch}, bounds, Format::f32, kVsTorchR);
    EXPECT_EQ(allowed, bounds) << "PyTorch's error " << torch[0] << ", " << torch[1];
  }
  const auto zero =
      vs_torch_allowed(answer_of({0.0, -0.0, 0.0}), {{0, 0, 0}}, bounds, Format::f32, kVsTorchR);
  EXPECT_EQ(zero, bounds) << "a tensor of exact zeros";
  // With a scale the rule is R times PyTorch's error plus an ulp: finite.
  const auto scaled = vs_torch_allowed(answer_of({1.0, 2.0, 0.5}), {{0, 1e-7, 1e-7}}, bounds,
                                       Format::f32, kVsTorchR);
  for (double a : scaled[0]) {
    EXPECT_GE(a, kVsTorchR * 1e-7);
    EXPECT_TRUE(std::isfinite(a));
  }
}

}  // namespace
}  // namespace moacert::properties
