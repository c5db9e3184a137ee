// certify --shape and the deployment-scale cases (issue #17 items 1 and 2):
// every generated and curated case (and every shrink of a curated one) lies
// in the constraints, tokens carry them and re-create the identical case,
// version-1 tokens still name the cases they named, and without --shape a
// share of cases is deployment-scale and the common tiles are straddled
// although the variant declares none.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "properties/certify.hpp"
#include "properties/ops/table.hpp"
#include "properties/spec_shrinks.hpp"
#include "properties/token.hpp"

namespace moacert::properties {
namespace {

// Constraints on some of the op's axes: fixed, small ranges, and ranges
// past kLargeExtent; nullopt when no problem of the op satisfies them.
std::optional<ShapeConstraints> draw_constraints(Op op) {
  ShapeConstraints c;
  for (std::string_view axis : dims_of(op)) {
    if (*rc::gen::inRange(0, 3) != 0) continue;
    const moa::extent_t lo =
        *rc::gen::weightedOneOf<moa::extent_t>({{3, rc::gen::inRange<moa::extent_t>(1, 40)},
                                                {1, rc::gen::inRange<moa::extent_t>(200, 1100)}});
    const moa::extent_t width = *rc::gen::element<moa::extent_t>(0, 0, 3, 50, 5000);
    c.set(dim_field(axis), {lo, lo + width});
  }
  try {
    c.check(op);
  } catch (const moa::ShapeError&) {
    return std::nullopt;
  }
  return c;
}

bool lens_fit(const CaseSpec& s) {
  return std::all_of(s.lens.begin(), s.lens.end(),
                     [&](std::int64_t len) { return len >= 1 && len <= s.problem.dims.M; });
}

RC_GTEST_PROP(Shapes, EveryGeneratedAndCuratedCaseLiesInTheConstraints, ()) {
  const Op op = Op(*rc::gen::inRange<int>(0, int(all_ops().size())));
  RC_TAG(info(op).name);
  const std::optional<ShapeConstraints> shape = draw_constraints(op);
  RC_PRE(shape.has_value());
  RC_TAG(shape->empty() ? "free" : "constrained");
  GenSettings settings;
  settings.shape = *shape;
  settings.tiles = *rc::gen::container<std::vector<moa::extent_t>>(
      rc::gen::element<moa::extent_t>(16, 64, 100, 128));
  const rc::Gen<CaseSpec> gen = gen_case_spec(op, Format::f32, settings);
  for (int k = 0; k < 10; ++k) {
    const CaseSpec s =
        gen(rc::Random({std::uint64_t(k), 7, 0, 0}), *rc::gen::inRange(0, 101)).value();
    RC_ASSERT(shape->admits(s.problem.dims));
    validate(s.problem);
    RC_ASSERT(lens_fit(s));
  }
  for (const CaseSpec& s : curated_specs(op, Format::f32, settings)) {
    RC_ASSERT(shape->admits(s.problem.dims));
    validate(s.problem);
    RC_ASSERT(lens_fit(s));
    // A failing curated case shrinks through shrinkable_spec: each shrink is
    // a case certify could draw, laid out for its own shapes, and smaller.
    auto shrinks = shrinkable_spec(s, *shape).shrinks();
    while (const auto shrunk = shrinks.next()) {
      const CaseSpec& c = shrunk->value();
      RC_ASSERT(shape->admits(c.problem.dims));
      validate(c.problem);
      RC_ASSERT(lens_fit(c));
      const auto shapes = input_shapes(c.problem);
      for (std::size_t i = 0; i < shapes.size(); ++i) RC_ASSERT(c.layouts[i].shape() == shapes[i]);
      RC_ASSERT(c.problem.dims != s.problem.dims || c.kinds != s.kinds);
    }
  }
}

ShapeConstraints constraints(Op op, std::initializer_list<std::pair<const char*, ExtentRange>> l) {
  ShapeConstraints c;
  for (const auto& [axis, r] : l) c.set(dim_field(axis), r);
  c.check(op);
  return c;
}

TEST(Shapes, TheTokenCarriesTheConstraints) {
  Token t;
  t.op = Op::attention_fwd;
  t.variant = "cpu.flash";
  t.seed = 99;
  t.index = 4;
  t.size = 40;
  t.tiles = {16, 64};
  t.shape = constraints(Op::attention_fwd,
                        {{"N", {4096, 4096}}, {"M", {1, 8192}}, {"H", {8, 8}}, {"Hkv", {2, 2}}});
  const std::optional<Token> back = Token::decode(t.encode());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->version, kGeneration);
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->shape.str(Op::attention_fwd), "H=8,Hkv=2,N=4096,M=1..8192");
  EXPECT_EQ(back->encode(), t.encode());
  // Constraints no problem of the op satisfies are refused, with why.
  Token bad = t;
  bad.shape.set(&Dims::Hkv, {3, 3});
  std::string why;
  EXPECT_FALSE(Token::decode(bad.encode(), &why));
  EXPECT_NE(why.find("not a multiple of Hkv"), std::string::npos) << why;
}

// A plugin's envelope (plugin ABI 2) narrows the constraints as --shape
// does, values and steps included: every generated and curated case has an
// admitted extent (never D = 129 for D in {64, 128}), the token carries
// the narrowed ranges, and a --shape outside the envelope is refused.
TEST(Shapes, AnEnvelopeNarrowsTheDrawsToItsValuesAndSteps) {
  kernels::Variant v;
  v.op = Op::attention_fwd;
  v.name = "plugin:lib.so#attn";
  kernels::AxisEnvelope d, n;
  d.values = {64, 128};
  n.lo = 16;
  n.hi = 4096;
  n.multiple = 16;
  v.envelope.axes = {{"D", d}, {"N", n}};
  const ShapeConstraints shape = within_variant({}, v);
  EXPECT_EQ(shape.str(Op::attention_fwd), "N=16..4096%16,D={64,128}");
  GenSettings settings;
  settings.shape = shape;
  settings.tiles = {16, 128};
  const rc::Gen<CaseSpec> gen = gen_case_spec(Op::attention_fwd, Format::f32, settings);
  std::vector<moa::extent_t> seen_d;
  for (int k = 0; k < 200; ++k) {
    const CaseSpec s = gen(rc::Random({std::uint64_t(k), 7, 0, 0}), k % 101).value();
    EXPECT_EQ(v.envelope.why_outside(s.problem), "") << k;
    seen_d.push_back(s.problem.dims.D);
  }
  for (const CaseSpec& s : curated_specs(Op::attention_fwd, Format::f32, settings))
    EXPECT_EQ(v.envelope.why_outside(s.problem), "");
  EXPECT_NE(std::find(seen_d.begin(), seen_d.end(), 64), seen_d.end());
  EXPECT_NE(std::find(seen_d.begin(), seen_d.end(), 128), seen_d.end());
  // The token carries the values and the step.
  Token t;
  t.op = Op::attention_fwd;
  t.variant = v.name;
  t.shape = shape;
  const std::optional<Token> back = Token::decode(t.encode());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shape, shape);
  // A --shape outside the envelope: one line, naming it.
  ShapeConstraints asked;
  asked.set(&Dims::D, {129, 129});
  try {
    within_variant(asked, v);
    ADD_FAILURE() << "D = 129 was admitted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "plugin:lib.so#attn supports D in {64, 128} (its envelope); --shape asks D=129");
  }
  // Inside it, --shape narrows further: D = 100..128 leaves D = 128 alone.
  asked.set(&Dims::D, {100, 128});
  EXPECT_EQ(within_variant(asked, v).range(&Dims::D), (ExtentRange{128, 128}));
}

// A reach (Variant::reach: the emulated simt.* variants' token counts)
// narrows only the axes --shape leaves free, and what it excludes ends in
// its reason; simt.rmsnorm has one, cpu.dnf none.
TEST(Shapes, AReachNarrowsTheFreeAxesOnlyAndSaysWhy) {
  const kernels::Variant* simt = kernels::Registry::builtin().find(Op::rmsnorm, "simt.rmsnorm");
  ASSERT_TRUE(simt);
  EXPECT_EQ(within_variant({}, *simt).range(&Dims::T), (ExtentRange{1, 4096}));
  ShapeConstraints asked;
  asked.set(&Dims::T, {131072, 131072});
  EXPECT_EQ(within_variant(asked, *simt).range(&Dims::T), (ExtentRange{131072, 131072}));
  const std::vector<EnvelopeExclusion> x = excluded_by_reach(*simt);
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].what, "T");
  EXPECT_EQ(x[0].why.rfind("at most 4096; the deployment envelope reaches 131072 (thresholds out "
                           "of reach: 4096, 8192, 16384, 32768, 65536, 131072); drawn so by "
                           "moacert, not declared: the SIMT emulator",
                           0),
            0u)
      << x[0].why;
  const kernels::Variant* flash =
      kernels::Registry::builtin().find(Op::attention_fwd, "simt.flash");
  ASSERT_TRUE(flash);
  EXPECT_EQ(within_variant({}, *flash).range(&Dims::B), ExtentRange{});
  const kernels::Variant* dnf = kernels::Registry::builtin().find(Op::rmsnorm, "cpu.dnf");
  ASSERT_TRUE(dnf);
  EXPECT_EQ(within_variant({}, *dnf).range(&Dims::T), ExtentRange{});
  EXPECT_TRUE(excluded_by_reach(*dnf).empty());
}

// What an envelope keeps out of reach, as the certificate records it: each
// rule of excluded_by reached, and an axis the generator never grows large
// (decode's D) never named.
std::vector<std::string> names(const std::vector<EnvelopeExclusion>& xs) {
  std::vector<std::string> out;
  for (const EnvelopeExclusion& x : xs) out.push_back(x.what + ": " + x.why);
  return out;
}

TEST(Shapes, AnEnvelopeNamesTheRegimesAndTheDeploymentScaleItExcludes) {
  using V = std::vector<std::string>;
  const EnvelopeExclusions none = excluded_by(Op::attention_fwd, kernels::Envelope{});
  EXPECT_TRUE(none.regimes.empty() && none.deployment_scale.empty());

  kernels::Envelope no_causal;
  no_causal.causal = false;
  const EnvelopeExclusions a = excluded_by(Op::attention_fwd, no_causal);
  EXPECT_EQ(names(a.regimes),
            V{"softmax.no-key-row: needs causal masking, which the envelope refuses"});
  EXPECT_TRUE(a.deployment_scale.empty());

  kernels::Envelope short_rows;
  kernels::AxisEnvelope n, m;
  n.hi = 8;
  m.lo = 8;
  m.hi = 16;
  short_rows.axes = {{"N", n}, {"M", m}};
  const EnvelopeExclusions b = excluded_by(Op::attention_fwd, short_rows);
  EXPECT_EQ(names(b.regimes),
            V{"softmax.no-key-row: needs more queries than keys (N > M); N is at most 8, M at "
              "least 8"});
  // N and M are axes of attention's deployment envelope: named with its
  // edge and the thresholds no case can cross (not the generator's "large").
  EXPECT_EQ(names(b.deployment_scale),
            (V{"N: at most 8; the deployment envelope reaches 32768 (thresholds out of reach: "
               "1024, 2048, 4096, 8192, 16384, 32768)",
               "M: at most 16; the deployment envelope reaches 32768 (thresholds out of reach: "
               "1024, 2048, 4096, 8192, 16384, 32768)"}));

  // No grouped heads, or at most 4 query heads: the group axis (to 16).
  kernels::Envelope no_groups;
  no_groups.grouped_heads = false;
  EXPECT_EQ(names(excluded_by(Op::attention_fwd, no_groups).deployment_scale),
            V{"H/Hkv: at most 1; the deployment envelope reaches 16 (thresholds out of reach: 2, "
              "4, 8, 16)"});
  kernels::Envelope four_heads;
  kernels::AxisEnvelope h;
  h.hi = 4;
  four_heads.axes = {{"H", h}};
  EXPECT_EQ(names(excluded_by(Op::attention_bwd, four_heads).deployment_scale),
            (V{"H/Hkv: at most 4; the deployment envelope reaches 16 (thresholds out of reach: 4, "
               "8, 16)",
               "H: at most 4; deployment scale starts at 257"}));

  kernels::Envelope one_key;
  kernels::AxisEnvelope l, d;
  l.hi = 1;
  d.values = {64, 128};
  d.lo = 64;
  d.hi = 128;
  one_key.axes = {{"L", l}, {"D", d}};
  const EnvelopeExclusions c = excluded_by(Op::attention_decode, one_key);
  EXPECT_EQ(names(c.regimes),
            (V{"softmax.underflowing-tile: needs a whole tile of 16 keys; L is at most 1",
               "softmax.tie: needs two keys; L is at most 1",
               "softmax.dominant-key: needs two keys; L is at most 1"}));
  EXPECT_EQ(names(c.deployment_scale),
            V{"L: at most 1; the deployment envelope reaches 131072 (thresholds out of reach: "
              "1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)"});

  kernels::Envelope narrow_model;
  kernels::AxisEnvelope dm;
  dm.hi = 1;
  narrow_model.axes = {{"Dm", dm}};
  const EnvelopeExclusions e = excluded_by(Op::mlp_swiglu, narrow_model);
  EXPECT_EQ(names(e.regimes), V{"gemm.cancellation: needs a sum of two products; Dm is at most 1"});
  EXPECT_EQ(names(e.deployment_scale),
            V{"Dm: at most 1; the deployment envelope reaches 16384 (thresholds out of reach: "
              "1024, 2048, 4096, 8192, 16384)"});
  // An axis outside the deployment envelope keeps the generator's rule.
  kernels::Envelope narrow_head;
  kernels::AxisEnvelope hd;
  hd.hi = 128;
  narrow_head.axes = {{"D", hd}};
  EXPECT_EQ(names(excluded_by(Op::attention_fwd, narrow_head).deployment_scale),
            V{"D: at most 128; deployment scale starts at 257"});
}

// The tensors of two cases, bit for bit.
bool same_inputs(const Case& a, const Case& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (std::size_t k = 0; k < a.inputs.size(); ++k) {
    const AnyTensor &x = a.inputs[k], &y = b.inputs[k];
    if (x.layout().str() != y.layout().str() || x.dtype() != y.dtype()) return false;
    const auto bytes = std::size_t(x.layout().cosize()) * std::size_t(dtype_bytes(x.dtype()));
    if (std::memcmp(x.data(), y.data(), bytes) != 0) return false;
  }
  return true;
}

TEST(Shapes, ReproduceOfAConstrainedTokenGivesTheIdenticalCase) {
  const kernels::Variant* v = kernels::Registry::builtin().find(Op::rmsnorm, "cpu.fused");
  ASSERT_TRUE(v);
  CertifyOptions o;
  o.variant = v;
  o.cases = 6;
  o.seed = 31;
  o.shape = constraints(Op::rmsnorm, {{"T", {3, 3}}, {"D", {200, 700}}});
  const Certificate cert = certify(o);
  ASSERT_TRUE(cert.holds) << cert.failure;
  EXPECT_EQ(cert.shape, "D=200..700,T=3");  // in the order of dims_of
  const std::optional<Token> token = Token::decode(cert.worst_token);
  ASSERT_TRUE(token);
  EXPECT_EQ(token->shape, o.shape);
  // The token alone (no --shape) re-creates the case certify drew.
  const Replay r = replay(*token, *v);
  EXPECT_TRUE(o.shape.admits(r.spec.problem.dims)) << describe(r.spec);
  const CaseSpec drawn =
      token->index < 0 ? curated_specs(Op::rmsnorm, Format::f32,
                                       base_token(o).settings())[std::size_t(-token->index - 1)]
                       : gen_case_spec(Op::rmsnorm, Format::f32, base_token(o).settings())(
                             rc::Random({o.seed, std::uint64_t(token->index), 0, 0}), token->size)
                             .value();
  EXPECT_EQ(describe(r.spec), describe(drawn));
  EXPECT_TRUE(same_inputs(r.c, build_case(drawn)));
}

// Version-1 tokens name the cases they named: their descriptions as
// `moacert reproduce` printed them at 47c8639, before generation 2.
TEST(Shapes, VersionOneTokensNameTheCasesTheyNamed) {
  const std::pair<const char*, const char*> tokens[] = {
      {"mc1.AQABAAABNjcAAUAJY3B1LmZsYXNo",
       "attention.fwd f32 B=1 H=6 Hkv=2 N=13 M=1 D=5 scale=0.447214 values=large-logits "
       "seed=575803512\n  q (1,6,13,5):(1,1,6,78)\n  k (1,2,1,5):(10,5,5,1)\n"
       "  v (1,2,1,5):(10,5,5,1)"},
      {"mc1.AQMBAAABYGEAAYACCWNwdS5zcGxpdA",
       "attention.decode f32 B=2 H=4 Hkv=1 N=1 L=36 D=5 scale=0.3 values=large-logits "
       "seed=234052235 lens=(36,1)\n  q (2,4,1,5):(20,5,5,1)\n  k (2,1,36,5):(0,180,5,1)\n"
       "  v (2,1,36,5):(3,1,6,222)\n  lens (2):(1)"},
      {"mc1.AQEBAAABRkcAAxAggAINY3B1LmZsYXNoX2J3ZA",
       "attention.bwd f32 B=2 H=1 Hkv=1 N=1 M=3 D=3 scale=0.57735 values=normal seed=87374907\n"
       "  q (2,1,1,3):(3,3,3,1)\n  k (2,1,3,3):(9,9,3,1)\n  v (2,1,3,3):(9,9,3,1)\n"
       "  o (2,1,1,3):(3,3,3,1)\n  lse (2,1,1):(1,1,1)\n  do (2,1,1,3):(1,2,2,2)"},
      {"mc1.AQQBAAAFAQAAAAdjcHUuZG5m",  // a curated case
       "rmsnorm f32 T=6 D=8 eps=0.25 values=uniform seed=195620928\n  x (6,8):(8,1)\n"
       "  w (8):(1)"},
  };
  for (const auto& [text, expected] : tokens) {
    const std::optional<Token> t = Token::decode(text);
    ASSERT_TRUE(t) << text;
    EXPECT_EQ(t->version, 1);
    EXPECT_TRUE(t->shape.empty());
    EXPECT_EQ(t->encode(), text);
    const std::optional<CaseSpec> spec = spec_of(*t);
    ASSERT_TRUE(spec) << text;
    EXPECT_EQ(describe(*spec), expected) << text;
  }
}

// Version-2 tokens name the cases they named: the shrunk counterexample of
// tests/planted's buffered_fwd as `moacert reproduce` printed it at 04a0b13,
// before generation 3 (which draws attention.fwd's long axes differently).
TEST(Shapes, VersionTwoTokensNameTheCasesTheyNamed) {
  const char* text =
      "mc1.AgABAAAH-AE-CgEMAQEBAAAAAAAAAChwbHVnaW46bGlicGxhbnRlZF9mYXVsdHkuc28jYnVmZmVyZWRfZndk";
  const std::optional<Token> t = Token::decode(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->version, 2);
  EXPECT_EQ(t->encode(), text);
  const std::optional<CaseSpec> spec = spec_of(*t);
  ASSERT_TRUE(spec);
  EXPECT_EQ(describe(*spec),
            "attention.fwd f32 B=1 H=1 Hkv=1 N=1 M=1025 D=2 scale=0.3 values=uniform seed=0\n"
            "  q (1,1,1,2):(2,2,2,1)\n  k (1,1,1025,2):(2050,2050,2,1)\n"
            "  v (1,1,1025,2):(2050,2050,2,1)");
}

// A kernel's envelope refusing an option (causal masking, or grouped
// heads): the token carries it, and no case it names has the option,
// random, shrunk or curated; the same tokens without it do draw some.
TEST(Shapes, TheTokenCarriesTheSupportedOptionsAndEveryCaseRespectsThem) {
  for (const bool refuse_causal : {true, false}) {
    Token t;
    t.op = Op::attention_fwd;
    t.variant = "plugin:refusing";
    t.seed = 5;
    t.shape.supported.causal = !refuse_causal;
    t.shape.supported.grouped_heads = refuse_causal;
    const std::optional<Token> back = Token::decode(t.encode());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->shape, t.shape);
    EXPECT_EQ(back->encode(), t.encode());
    Token unlimited = t;
    unlimited.shape.supported = {};
    EXPECT_NE(unlimited.encode(), t.encode());
    const auto refused = [&](const Problem& p) {
      return refuse_causal ? p.params.causal : p.dims.Hkv < p.dims.H;
    };
    int refused_unlimited = 0;
    for (const Token* tok : {&t, &unlimited}) {
      for (int index = -int(curated_specs(t.op, t.format, t.settings()).size()); index < 40;
           ++index) {
        Token one = *tok;
        one.index = index;
        one.size = index < 0 ? 0 : size_for(index, 40);
        const std::optional<CaseSpec> spec = spec_of(one);
        ASSERT_TRUE(spec);
        if (tok == &t) {
          EXPECT_FALSE(refused(spec->problem)) << describe(*spec);
        } else {
          refused_unlimited += refused(spec->problem);
        }
      }
    }
    EXPECT_GT(refused_unlimited, 0);  // the test could fail
  }
}

// A variant as a plugin arrives: no declared tiles.
kernels::Variant without_tiles(Op op) {
  kernels::Variant v = *kernels::Registry::builtin().find(op, "cpu.dnf");
  v.name = "plugin:untiled";
  v.tiles.clear();
  return v;
}

// Without --shape, over 300 random cases of each op as certify draws them
// for a variant that declares no tiles: from generation 5 about one in
// kEnvelopeOneIn is an envelope case (ops with envelope axes), of the rest
// about one in large_one_in is deployment-scale, and some extent straddles
// (t-1, t or t+1) every common tile t. From generation 6 attention.fwd's
// flat-rows cases (M = 4096, one random case in 20) count as large too:
// about 0.21 for its 1/6, inside three deviations.
TEST(DeploymentScale, AShareOfLargeCasesAndStraddlesOfEveryCommonTile) {
  constexpr int kCases = 300;
  // The expected share, give or take three standard deviations (at 1/6 and
  // 1/10: about 0.065 and 0.052 over 300 draws, 0.071 and 0.057 over 250).
  auto near = [](int count, int of, double expected) {
    return std::abs(double(count) / of - expected) <= 3 * std::sqrt(expected * (1 - expected) / of);
  };
  for (const OpInfo& op : all_ops()) {
    const kernels::Variant v = without_tiles(op.op);
    CertifyOptions o;
    o.variant = &v;
    o.seed = 5;
    const GenSettings settings = base_token(o).settings();
    ASSERT_TRUE(settings.tiles.empty());
    ASSERT_EQ(settings.generation, kGeneration);
    const rc::Gen<CaseSpec> gen = gen_case_spec(op.op, Format::f32, settings);
    int envelope = 0, large = 0;
    std::vector<int> straddled(kCommonTiles.size(), 0);
    for (int i = 0; i < kCases; ++i) {
      const CaseSpec s =
          gen(rc::Random({o.seed, std::uint64_t(i), 0, 0}), size_for(i, kCases)).value();
      if (s.envelope) {
        ++envelope;
      } else {
        large += is_large(s.problem);
      }
      std::vector<moa::extent_t> extents(s.lens.begin(), s.lens.end());
      for (std::string_view axis : dims_of(op.op))
        extents.push_back(extent_of(s.problem.dims, axis));
      for (std::size_t k = 0; k < kCommonTiles.size(); ++k) {
        const moa::extent_t t = kCommonTiles[k];
        straddled[k] += std::any_of(extents.begin(), extents.end(),
                                    [&](moa::extent_t e) { return e >= t - 1 && e <= t + 1; });
      }
    }
    if (property_op(op.op).envelope_axes.empty()) {
      EXPECT_EQ(envelope, 0) << op.name;
    } else {
      EXPECT_PRED3(near, envelope, kCases, 1.0 / kEnvelopeOneIn) << op.name << ": " << envelope;
    }
    EXPECT_PRED3(near, large, kCases - envelope, 1.0 / large_one_in(op.op))
        << op.name << ": " << large << " of " << kCases - envelope;
    for (std::size_t k = 0; k < kCommonTiles.size(); ++k)
      EXPECT_GT(straddled[k], 0) << op.name << " never straddles " << kCommonTiles[k];
    std::printf("%s: %d envelope, %d large of %d others, straddles", std::string(op.name).c_str(),
                envelope, large, kCases - envelope);
    for (int n : straddled) std::printf(" %d", n);
    std::printf("\n");
  }
}

// attention.fwd's long-only axes (long queries or long keys): generation 2
// stops at 1025, so past 1024 only as that straddle; generation 3 reaches
// 2049 and passes 1024 in about one case of 20 (a sixth deployment-scale,
// two thirds of them long-only, about 0.45 of those past 1024), where a
// scratch of 1024 keys fails (tests/planted, buffered_fwd).
TEST(DeploymentScale, AttentionFwdLongAxesPass1024FromGeneration3) {
  constexpr int kCases = 1000;
  const kernels::Variant v = without_tiles(Op::attention_fwd);
  CertifyOptions o;
  o.variant = &v;
  o.seed = 5;
  GenSettings settings = base_token(o).settings();
  for (int generation : {2, 3}) {
    settings.generation = generation;
    const rc::Gen<CaseSpec> gen = gen_case_spec(Op::attention_fwd, Format::f32, settings);
    int past_1024 = 0;
    moa::extent_t longest = 0;
    for (int i = 0; i < kCases; ++i) {
      const Dims d = gen(rc::Random({o.seed, std::uint64_t(i), 0, 0}), size_for(i, kCases))
                         .value()
                         .problem.dims;
      longest = std::max({longest, d.N, d.M});
      past_1024 += std::max(d.N, d.M) > 1024;
    }
    if (generation == 2) {
      EXPECT_LE(longest, 1025);
    } else {
      EXPECT_LE(longest, 2049);
      // Half the expected 50: more than six standard deviations below it.
      EXPECT_GE(past_1024, kCases / 40);
    }
  }
}

}  // namespace
}  // namespace moacert::properties
