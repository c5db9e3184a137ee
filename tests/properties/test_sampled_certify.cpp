// Sampled certification (docs/design.md, "Sampled certification"): at a
// shape where the whole oracle would be slow, certify judges a stratified
// sample of rows, which catches a kernel wrong on one row just past a tile
// boundary; the sample holds every stratum and is the same on every run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "oracle/memory.hpp"
#include "properties/certify.hpp"
#include "properties/sample.hpp"
#include "tests/support/harness.hpp"

namespace moacert::properties {
namespace {

using moa::extent_t;

bool has(const std::vector<extent_t>& rows, extent_t r) {
  return std::binary_search(rows.begin(), rows.end(), r);
}

// N = M = 300, D = 128, 4 heads: twice the whole-oracle threshold, so
// certify samples (oracle_work = 2·4·300·300·128 = 2^26.5).
Case large_case(Op op, bool causal, std::uint64_t seed) {
  const Dims d{.B = 1, .H = 4, .Hkv = 2, .N = 300, .M = 300, .D = 128};
  return test::make_case(op, Format::f32, d, seed, causal);
}

// cpu.flash, except that query row 128 of head 1 (the first row of the
// second 128-row tile) comes out 2^-8 too large relative to its value:
// wrong on one row of 1200.
kernels::Variant wrong_after_a_tile_edge() {
  const kernels::Variant* flash = kernels::Registry::builtin().find(Op::attention_fwd, "cpu.flash");
  kernels::Variant v = *flash;
  v.name = "test.row_128_wrong";
  v.run = [flash](const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
                  const kernels::RunOptions& o) {
    flash->run(p, in, out, o);
    if (p.dims.N <= 128) return;
    const TensorRef& t = out[0];  // o (B, H, N, D), f32
    auto* data = static_cast<float*>(t.data);
    for (extent_t d = 0; d < p.dims.D; ++d) data[t.layout({0, 1, 128, d})] *= 1 + 0x1p-8f;
  };
  return v;
}

TEST(SampledCertify, CatchesAKernelWrongOnOneRowAfterATileEdge) {
  ASSERT_GT(oracle_work(large_case(Op::attention_fwd, false, 1).problem), kWholeOracleWork);
  const kernels::Variant wrong = wrong_after_a_tile_edge();
  CertifyOptions o;
  o.variant = &wrong;
  o.case_files = {{"N=300", large_case(Op::attention_fwd, /*causal=*/false, 5)}};
  const Certificate cert = certify(o);
  ASSERT_FALSE(cert.holds);
  EXPECT_NE(cert.failure.find("o(0,1,128,"), std::string::npos) << cert.failure;
  ASSERT_FALSE(cert.tensors.empty());
  const TensorSummary& t = cert.tensors[0];  // o: judged on a sample
  EXPECT_EQ(t.cases_sampled, 1);
  EXPECT_LT(t.elements, t.elements_total / 4);
  EXPECT_EQ(t.elements_total, 4 * 300 * 128);

  // The kernel it wraps holds on the same case, judged the same way.
  o.variant = kernels::Registry::builtin().find(Op::attention_fwd, "cpu.flash");
  const Certificate right = certify(o);
  EXPECT_TRUE(right.holds) << right.failure;
}

// A case file's case is handed to its judge, not copied (a long decode's
// is gigabytes): it is judged once, and a second run of its position is a
// programming error, not a judgement of an emptied case.
TEST(SampledCertify, HandsEachCaseFileToItsJudgeOnce) {
  CertifyOptions o;
  o.variant = kernels::Registry::builtin().find(Op::attention_fwd, "cpu.flash");
  o.case_files = {{"small", test::make_case(Op::attention_fwd, Format::f32,
                                            test::small_dims(Op::attention_fwd), 3)}};
  const CaseRunner runner(std::move(o));
  ASSERT_EQ(runner.size(), 1);
  const CaseRecord r = runner.run(0);
  EXPECT_TRUE(r.holds) << r.why;
  EXPECT_EQ(r.kind, CaseRecord::case_file);
  EXPECT_THROW(runner.run(0), std::logic_error);
}

TEST(SampledCertify, TheSampleHoldsEveryStratum) {
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    const Case c = large_case(Op::attention_bwd, causal, 9);
    const Sample s = sample_rows(c, /*variant_tiles=*/{48});
    ASSERT_TRUE(s.rows);
    const auto& q = s.rows->query_rows;
    const auto& k = s.rows->key_rows;
    for (const Sample::Stratum& st : s.strata) {
      EXPECT_GT(st.query_rows, 0) << st.name;
      EXPECT_GT(st.key_rows, 0) << st.name;
    }
    EXPECT_EQ(s.strata.size(), 5u);
    // In every head: first and last, either side of the first and the last
    // edge of the common tiles (128: rows 127, 128, 255, 256) and of the
    // variant's (48: 47, 48, 287, 288), along queries and keys alike.
    for (extent_t head = 0; head < 4; ++head)
      for (extent_t i : {0, 299, 15, 16, 127, 128, 255, 256, 47, 48, 287, 288})
        EXPECT_TRUE(has(q, head * 300 + i)) << head << " " << i;
    for (extent_t kv = 0; kv < 2; ++kv)
      for (extent_t j : {0, 299, 127, 128, 255, 256, 47, 48})
        EXPECT_TRUE(has(k, kv * 300 + j)) << kv << " " << j;
    // The row whose logits can be largest: the largest ||q_i||.
    extent_t largest = 0;
    double best = -1;
    for (extent_t r = 0; r < 1200; ++r) {
      double n2 = 0;
      for (extent_t d = 0; d < 128; ++d) {
        const double x = c.inputs[0].get({0, r / 300, r % 300, d});
        n2 += x * x;
      }
      if (n2 > best) best = n2, largest = r;
    }
    EXPECT_TRUE(has(q, largest));
    // Far fewer rows than the tensor's, and the same rows on a second call
    // (the random ones come from the case's own bytes).
    EXPECT_LT(q.size(), 300u);
    EXPECT_EQ(sample_rows(c, {48}).rows->query_rows, q);
    EXPECT_EQ(sample_rows(c, {48}).rows->key_rows, k);
  }
}

TEST(SampledCertify, FewestAndMostKeys) {
  // Causal with N > M: the first rows see no key; the first that sees one
  // (N - M) and the last row are sampled. Decode: the shortest and the
  // longest cache.
  Case c = test::make_case(Op::attention_fwd, Format::f32,
                           {.B = 1, .H = 1, .Hkv = 1, .N = 900, .M = 600, .D = 128}, 3, true);
  Sample s = sample_rows(c, {}, /*whole_work=*/0);
  ASSERT_TRUE(s.rows);
  for (extent_t i : {0, 300, 899}) EXPECT_TRUE(has(s.rows->query_rows, i)) << i;

  c = test::make_case(Op::attention_decode, Format::f32,
                      {.B = 8, .H = 2, .Hkv = 1, .N = 1, .M = 64, .D = 8}, 4);
  for (extent_t b = 0; b < 8; ++b) c.inputs[3].set({b}, double(10 + b * 3));
  c.inputs[3].set({5}, 2);
  s = sample_rows(c, {}, 0);
  EXPECT_TRUE(has(s.rows->query_rows, 5 * 2));      // lens 2: the fewest keys
  EXPECT_TRUE(has(s.rows->query_rows, 7 * 2 + 1));  // lens 31: the most, last head
}

// sample_bound, from the shape alone, bounds what sample_rows chooses on
// any data: its rows are in every sample, the sample adds at most its
// `more` rows of each kind, and so memory_needed of the bound is at least
// the sample's. Over every sampled op, causal or not, GQA, ragged lens, a
// variant tile, and several seeds (whole_work 0 samples small shapes).
TEST(SampledCertify, TheShapesBoundHoldsEverySample) {
  const std::vector<extent_t> tiles{24};
  for (const OpInfo& op : all_ops()) {
    if (op.op == Op::block) {  // judged whole: no bound
      EXPECT_FALSE(sample_bound(
          test::make_case(op.op, Format::f32, test::small_dims(op.op), 1).problem, tiles, 0));
      continue;
    }
    Dims d = test::small_dims(op.op);
    if (op.op == Op::attention_decode) d = {.B = 3, .H = 8, .Hkv = 4, .N = 1, .M = 40, .D = 4};
    if (op.op == Op::rmsnorm || op.op == Op::mlp_swiglu) d.T = 70;
    if (op.op == Op::attention_fwd || op.op == Op::attention_bwd || op.op == Op::attention_fwdbwd)
      d = {.B = 2, .H = 4, .Hkv = 2, .N = 70, .M = 50, .D = 4};
    for (const bool causal : {false, true}) {
      for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        SCOPED_TRACE(std::string(op.name) + (causal ? " causal" : "") + " seed " +
                     std::to_string(seed));
        const Case c = test::make_case(op.op, Format::f32, d, seed, causal);
        const Sample sample = sample_rows(c, tiles, /*whole_work=*/0);
        const auto bound = sample_bound(c.problem, tiles, /*whole_work=*/0);
        ASSERT_TRUE(sample.rows);
        ASSERT_TRUE(bound);
        auto beyond = [](const std::vector<extent_t>& rows, const std::vector<extent_t>& fixed) {
          extent_t n = 0;
          for (extent_t r : fixed) EXPECT_TRUE(has(rows, r)) << "fixed row " << r;
          for (extent_t r : rows) n += !has(fixed, r);
          return n;
        };
        EXPECT_LE(beyond(sample.rows->query_rows, bound->rows.query_rows), bound->more_query_rows);
        EXPECT_LE(beyond(sample.rows->key_rows, bound->rows.key_rows), bound->more_key_rows);
        const oracle::SelectionBound judged{*sample.rows};
        EXPECT_LE(oracle::memory_needed(c.problem, 1024, 2, &judged),
                  oracle::memory_needed(c.problem, 1024, 2, &*bound));
      }
    }
  }
}

// At deployment scale the sample's statement is at most the whole
// oracle's (long-cache decode over 256 kv heads, the forward at
// N = M = 16384), and the whole oracle's does not hold every head's rows at
// the cap: each pass converts a run of at most two threads' units at a time,
// one where two would pass 512 MiB (detail::for_each_chunk, chunk_limit),
// so decode's states less than a tenth of its inputs in MPFI.
// (certify's refusal and acceptance at such a shape:
// bad_input.certify_sampled_shape_budget.)
TEST(SampledCertify, ADeploymentShapesStatementHoldsAFewUnitsAtOnce) {
  Problem decode, forward;
  decode.op = Op::attention_decode;
  decode.dims = {.B = 16, .H = 16, .Hkv = 16, .N = 1, .M = 16384, .D = 128};
  forward.op = Op::attention_fwd;
  forward.dims = {.B = 1, .H = 8, .Hkv = 1, .N = 16384, .M = 16384, .D = 128};
  for (const Problem& p : {decode, forward}) {
    SCOPED_TRACE(std::string(info(p.op).name));
    const auto bound = sample_bound(p, {});
    ASSERT_TRUE(bound);
    const double whole = oracle::memory_needed(p, 1024, 2),
                 sampled = oracle::memory_needed(p, 1024, 2, &*bound);
    EXPECT_LE(sampled, whole);
    const double inputs_at_the_cap = 384.0 * double(element_count(input_shapes(p)));
    if (p.op == Op::attention_decode) {
      EXPECT_LT(whole, inputs_at_the_cap / 10) << whole << " of " << inputs_at_the_cap;
    }
  }
}

TEST(SampledCertify, SmallCasesAreJudgedWhole) {
  const Case c =
      test::make_case(Op::attention_fwd, Format::f32, test::small_dims(Op::attention_fwd), 2);
  EXPECT_FALSE(sample_rows(c, {}).rows);
}

}  // namespace
}  // namespace moacert::properties
