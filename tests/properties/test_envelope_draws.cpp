// The envelope cases of generation 5 (issue #29 item 2;
// docs/design.md#generated-cases): a default run's share reaches each op's
// envelope edge and the straddles of its thresholds, one long axis at a
// time with the others small, and --shape narrows the edge.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "properties/case_gen.hpp"
#include "properties/ops/table.hpp"

namespace moacert::properties {
namespace {

using moa::extent_t;

std::vector<CaseSpec> draw(Op op, const ShapeConstraints& shape, int count) {
  GenSettings g;
  g.shape = shape;
  const rc::Gen<CaseSpec> gen = gen_case_spec(op, Format::f32, g);
  std::vector<CaseSpec> out;
  for (int k = 0; k < count; ++k)
    out.push_back(gen(rc::Random({std::uint64_t(k), 29, 0, 0}), 100).value());
  return out;
}

// The long axis of an envelope case, told by an extent no other case
// draws (past generation 4's deployment-scale limits: 2049, decode 8193,
// rmsnorm 4097, mlp.swiglu 1025; heads past 6); nullptr for another case
// (an envelope case drawn at a lower threshold included).
const EnvelopeAxis* long_axis(const CaseSpec& s) {
  for (const EnvelopeAxis& a : property_op(s.problem.op).envelope_axes) {
    const Dims& d = s.problem.dims;
    if (a.group ? d.Hkv == 1 && d.H > 6 : d.*a.field > 8193) return &a;
  }
  return nullptr;
}

TEST(EnvelopeDraws, EveryAxisReachesItsEdgeAndAStraddleOfItsLargestThreshold) {
  for (Op op :
       {Op::attention_fwd, Op::attention_bwd, Op::attention_decode, Op::rmsnorm, Op::mlp_swiglu}) {
    std::map<const EnvelopeAxis*, std::set<extent_t>> seen;
    const auto specs = draw(op, {}, 3000);
    for (const CaseSpec& s : specs) {
      const EnvelopeAxis* a = long_axis(s);
      if (!a) continue;
      seen[a].insert(s.problem.dims.*a->field);
      // The others small: every axis but the long one (and H over it) at most 4.
      for (extent_t Dims::*field : kDimFields) {
        if (field != a->field && field != &Dims::H && field != &Dims::Hkv) {
          EXPECT_LE(s.problem.dims.*field, field == &Dims::T ? 8 : 4) << describe(s);
        }
      }
    }
    for (const EnvelopeAxis& a : property_op(op).envelope_axes) {
      const std::set<extent_t>& s = seen[&a];
      EXPECT_TRUE(s.count(a.edge)) << info(op).name << ": the edge " << a.edge;
      const extent_t t = a.thresholds().back();
      EXPECT_TRUE(s.count(t - 1) || s.count(t) || s.count(t + 1))
          << info(op).name << ": a straddle of " << t;
    }
  }
}

// Generation 8's token counts (issue 47, item 6): rmsnorm's and the MLP's
// rows T drawn long, to the edge and the straddles of its thresholds, every
// other free extent at most 2; generation 7 never draws them long, so that
// its tokens name the cases they named.
TEST(EnvelopeDraws, TokenCountsFromGeneration8) {
  auto draws = [](Op op, int generation) {
    GenSettings g;
    g.generation = generation;
    const rc::Gen<CaseSpec> gen = gen_case_spec(op, Format::f32, g);
    std::vector<CaseSpec> out;
    for (int k = 0; k < 1500; ++k)
      out.push_back(gen(rc::Random({std::uint64_t(k), 47, 0, 0}), 100).value());
    return out;
  };
  for (Op op : {Op::rmsnorm, Op::mlp_swiglu}) {
    std::set<extent_t> long_ones;
    for (const CaseSpec& s : draws(op, 8)) {
      const Dims& d = s.problem.dims;
      if (d.T <= 1025) continue;  // generation 4's mlp.swiglu reaches T = 1025
      long_ones.insert(d.T);
      EXPECT_TRUE(s.envelope) << describe(s);
      for (extent_t Dims::*field : kDimFields)
        if (field != &Dims::T) {
          EXPECT_LE(d.*field, 2) << describe(s);
        }
    }
    EXPECT_TRUE(long_ones.count(kTokenEdge)) << info(op).name;
    EXPECT_GE(long_ones.size(), 3u) << info(op).name << ": the edge and straddles";
    for (const CaseSpec& s : draws(op, 7)) EXPECT_LE(s.problem.dims.T, 1025) << describe(s);
  }
}

TEST(EnvelopeDraws, ShapeNarrowsTheEdge) {
  ShapeConstraints shape;
  shape.set(&Dims::N, {1, 20000});
  int at_edge = 0;
  for (const CaseSpec& s : draw(Op::attention_fwd, shape, 2000)) {
    EXPECT_LE(s.problem.dims.N, 20000);
    at_edge += s.problem.dims.N == 20000;
  }
  EXPECT_GT(at_edge, 0);  // the narrowed edge is drawn
}

TEST(EnvelopeDraws, DecodeJudgesTheLengthDrawn) {
  for (const CaseSpec& s : draw(Op::attention_decode, {}, 1000))
    if (s.problem.dims.M > 8193) {  // past generation 4's limit: an envelope case
      EXPECT_EQ(s.lens.back(), s.problem.dims.M);
    }
}

}  // namespace
}  // namespace moacert::properties
