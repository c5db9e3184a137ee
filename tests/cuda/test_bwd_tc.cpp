// simt.bwd_tc (kernels/cuda/bwd_tc.cu) and simt.fused_v1_tc on the host
// emulator:
// - every launch's loads, stores and atomics, tensor by tensor, equal its
//   cost function (kernels/cuda/cost.cpp, the law of traffic_law.hpp) on
//   problems with tails in N and M, causal rows that see no key, GQA and
//   MQA, at both head widths of its envelope;
// - its declared arithmetic (tensor-core accumulation, P and dS rounded to
//   bf16) is what its bound rests on: the same kernel declaring less fails
//   certify on a row built for each (docs/bounds.md#tensor-cores).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cost.hpp"
#include "kernels/cuda/launch_log.hpp"
#include "kernels/cuda/traffic_law.hpp"
#include "properties/certify.hpp"
#include "properties/properties.hpp"
#include "reference/named.hpp"

namespace moacert {
namespace {

namespace cost = kernels::cuda_cost;
using properties::CaseSpec;

const kernels::Variant& simt_variant(Op op, const std::string& onf) {
  const kernels::Variant* v = kernels::Registry::builtin().find(op, "simt." + onf);
  if (!v) throw std::logic_error("simt." + onf + " is not registered");
  return *v;
}

// A row-major bf16 case of `op` of these extents.
Case attention_case(Op op, const Dims& d, bool causal) {
  CaseSpec s;
  s.problem.op = op;
  s.problem.format = Format::bf16;
  s.problem.dims = d;
  s.problem.params.causal = causal;
  for (const moa::Shape& shape : input_shapes(s.problem)) {
    s.kinds.push_back(moa::LayoutKind::row_major);
    s.layouts.push_back(moa::Layout::row_major(shape));
  }
  s.seed = 11;
  return properties::make_case(s);
}

struct Shape {
  Dims d;
  bool causal;
};

// Tails in N (not a multiple of 16) and M (of 32), N > M with causal rows
// that see no key, N < M, GQA and MQA, one key.
std::vector<Shape> law_shapes() {
  auto dims = [](moa::extent_t H, moa::extent_t Hkv, moa::extent_t N, moa::extent_t M,
                 moa::extent_t D) {
    Dims d;
    d.B = 2, d.H = H, d.Hkv = Hkv, d.N = N, d.M = M, d.D = D;
    return d;
  };
  return {{dims(2, 2, 16, 32, 64), false},
          {dims(4, 2, 33, 45, 64), false},
          {dims(3, 1, 40, 20, 128), true},
          {dims(2, 1, 9, 71, 64), true},
          {dims(2, 2, 17, 1, 128), false}};
}

double float_atomics(const std::string& onf, const Case& c) {
  const kernels::Variant& v = simt_variant(c.problem.op, onf);
  kernels::simt::take_launch_log();
  properties::run_variant(v, c);
  double n = 0;
  for (const auto& l : kernels::simt::take_launch_log()) n += double(l.atomic_add_global);
  return n;
}

TEST(BwdTc, EveryLaunchAndTensorMovesWhatTheCostFunctionSays) {
  const std::vector<Shape> shapes = law_shapes();
  struct OnfOf {
    Op op;
    const char* onf;
  };
  for (const OnfOf o :
       {OnfOf{Op::attention_bwd, "bwd_tc"}, OnfOf{Op::attention_fwdbwd, "fused_v1_tc"},
        OnfOf{Op::attention_fwdbwd, "fused_v3_tc"}, OnfOf{Op::attention_fwdbwd, "fused_det_tc"}}) {
    const kernels::Variant& v = simt_variant(o.op, o.onf);
    for (const Shape& s : shapes) {
      const Case c = attention_case(o.op, s.d, s.causal);
      kernels::simt::take_launch_log();
      v.instrumentation->take_count_mismatch();
      properties::run_variant(v, c);
      const auto counted = kernels::simt::take_launch_log();
      std::string all;
      for (const std::string& m : cost::traffic_mismatches(o.onf, c.problem, nullptr, counted))
        all += "\n  " + m;
      EXPECT_TRUE(all.empty()) << o.onf << " N=" << s.d.N << " M=" << s.d.M << " D=" << s.d.D
                               << all;
      EXPECT_EQ(v.instrumentation->take_count_mismatch().value(), "");
      double atomics = 0;
      for (const auto& l : counted) atomics += double(l.atomic_add_global);
      EXPECT_EQ(atomics, cost::total(o.onf, c.problem).atomics);
      if (std::string(o.onf) != "fused_det_tc") {
        EXPECT_GT(atomics, 0);
      }
    }
  }
}

// The three fused ONFs open with one prologue (TcFusedPrologue,
// attention_tc_passes.cuh): a head width outside their envelope is refused
// in words naming the ONF, before any launch.
TEST(BwdTc, TheFusedOnfsRefuseAHeadWidthOutsideTheirEnvelopeBeforeAnyLaunch) {
  Dims d;
  d.B = 1, d.H = 1, d.Hkv = 1, d.N = 16, d.M = 32, d.D = 96;
  const Case c = attention_case(Op::attention_fwdbwd, d, /*causal=*/false);
  for (const std::string onf : {"fused_v1_tc", "fused_v3_tc", "fused_det_tc"}) {
    kernels::simt::take_launch_log();
    try {
      properties::run_variant(simt_variant(Op::attention_fwdbwd, onf), c);
      ADD_FAILURE() << onf << " ran at D = 96";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                onf + ": D = 96 is not in {64, 128}, the head widths it is compiled for");
    }
    EXPECT_TRUE(kernels::simt::take_launch_log().empty()) << onf << " launched before refusing";
  }
}

// fused_det_tc has no float atomics: the same bits in every block order
// (schedule seed); fused_v1_tc, whose dK and dV are sums of atomics from
// several query blocks, does not (so the check can fail): four 32-row
// blocks of eight heads, 32 atomics per (key, d) whose order moves the f32
// sums enough to change some bf16 roundings; with 8 or 12 (N = 48 or 96,
// four heads) every block order tried rounded to the same bits.
TEST(BwdTc, FusedDetTcGivesTheSameBitsInEveryBlockOrder) {
  Dims d;
  d.B = 1, d.H = 8, d.Hkv = 1, d.N = 128, d.M = 40, d.D = 64;
  const Case c = attention_case(Op::attention_fwdbwd, d, /*causal=*/false);
  for (const char* onf : {"fused_det_tc", "fused_v1_tc"}) {
    const kernels::Variant& v = simt_variant(Op::attention_fwdbwd, onf);
    const auto first = properties::run_variant(v, c);
    int distinct = 0;
    for (std::uint64_t variation : {1u, 2u, 3u, 99u}) {
      v.instrumentation->set_schedule_seed(variation);
      if (!properties::bitwise_equal(first, properties::run_variant(v, c))) ++distinct;
    }
    v.instrumentation->set_schedule_seed(0);
    std::printf("%s: %d of 4 other block orders gave other bits\n", onf, distinct);
    if (v.deterministic)
      EXPECT_EQ(distinct, 0) << onf;
    else
      EXPECT_GT(distinct, 0) << onf << ": 5 block orders gave the same bits";
  }
}

// A backward case of one query row and `keys` keys at D = 64, every input
// 0: the two cases below set the few values they need by hand.
Case one_query_row_of_zeros(moa::extent_t keys) {
  Dims d;
  d.B = 1, d.H = 1, d.Hkv = 1, d.N = 1, d.M = keys, d.D = 64;
  Case c = attention_case(Op::attention_bwd, d, false);
  for (AnyTensor& t : c.inputs)
    for (const moa::Index& i : moa::iota(t.shape())) t.set(i, 0);
  return c;
}

// One query row, four keys, v = 0 (so o = 0, dP = dS = 0: only dV = P^T dO
// moves), scores near log(1/4) so that lse is near 0 and the given lse's
// bf16 rounding costs the weights next to nothing. Key 0's score is tuned
// so that its weight lies just above 1/4 + 2^-10, the midpoint of two bf16
// values: rounded to bf16 it gains nearly 2^-8 of itself, and dV_0 =
// 3 P_0 then rounds to storage at a tie, away again. dV_0 errs by about
// 1.6 u_s |dV_0|, past the bound that leaves the rounding of P out, and
// within the one that declares it (docs/bounds.md#tensor-cores).
Case weight_at_a_bf16_midpoint() {
  Case c = one_query_row_of_zeros(4);
  const Dims& d = c.problem.dims;
  auto in = inputs_by_name(Op::attention_bwd, c.inputs);
  AnyTensor &q = in["q"], &k = in["k"], &lse = in["lse"], &dout = in["do"];
  q.set({0, 0, 0, 0}, 1);
  q.set({0, 0, 0, 1}, 1);
  for (moa::extent_t j = 0; j < d.M; ++j) k.set({0, 0, j, 0}, -11.0625);  // bf16
  dout.set({0, 0, 0, 0}, 3);
  const double scale = c.problem.scale(), midpoint = 0.25 + 0x1p-10;
  for (int step = 1; step < 400; ++step) {  // key 0's fine score, in bf16 steps of 2^-12
    k.set({0, 0, 0, 1}, step * 0x1p-12);
    double sum = 0;
    for (moa::extent_t j = 0; j < d.M; ++j)
      sum += std::exp(scale * (k.get({0, 0, j, 0}) + k.get({0, 0, j, 1})));
    lse.set({0, 0, 0}, std::log(sum));
    const double s0 = scale * (k.get({0, 0, 0, 0}) + k.get({0, 0, 0, 1}));
    const double p_true = std::exp(s0) / sum, p_given = std::exp(s0 - lse.get({0, 0, 0}));
    auto just_above = [&](double p) { return p > midpoint + 0x1p-15 && p < midpoint + 0x1p-13; };
    if (just_above(p_true) && just_above(p_given)) return c;
  }
  throw std::logic_error("no score puts key 0's weight just above the midpoint");
}

// One query row, two keys: key 0 at score 0, key 1 at -90 (k_1 = -720 on
// d = 0, scale 1/8), so P_1 = e^-90 ~ 8.9 x 2^-133, below f32's normal
// range and in bf16's subnormals (multiples of 2^-133), and lse ~ e^-90
// rounds to a bf16 subnormal that costs the weights nothing. v_0 = 0 and
// v_1 = c on d = 0, do = 1 on d = 0: dP_1 = c, D = o_0 = P_1 c (tiny), and
// dS_1 = P_1 (c - D) ~ P_1 c = -dS_0. c (a bf16) is stepped until dS_1
// lies just above 1.5 x 2^-133, the midpoint of the bf16 subnormals 2^-133
// and 2^-132: the rounding of dS to bf16 before dS^T Q and dS K then errs
// by nearly 2^-134 = eta_s / 2, a third of dS_1, where the bound that
// leaves the rounding out allows about u_s |dS_1| (the f32 dS itself is
// exact to 2^-150). q_1 = 2^20 (k_1 = 0 there, so the scores do not move)
// makes dK_1 on d = 1, 2^20 / 8 dS_1, a normal bf16, so that its storage
// rounding (eta_s / 2) cannot cover that error; dQ_0 = -90 dS_1 carries it
// too. With dS's rounding declared, sigma' gains eta_s / 2, and holds.
Case score_gradient_at_a_bf16_subnormal_midpoint() {
  Case c = one_query_row_of_zeros(2);
  auto in = inputs_by_name(Op::attention_bwd, c.inputs);
  AnyTensor &q = in["q"], &k = in["k"], &v = in["v"], &o = in["o"], &lse = in["lse"],
            &dout = in["do"];
  q.set({0, 0, 0, 0}, 1);
  q.set({0, 0, 0, 1}, 0x1p20);
  k.set({0, 0, 1, 0}, -720);  // bf16
  dout.set({0, 0, 0, 0}, 1);
  const double scale = c.problem.scale(), s1 = scale * -720, sum = 1 + std::exp(s1);
  lse.set({0, 0, 0}, std::log(sum));
  const double p_true = std::exp(s1) / sum, p_given = std::exp(s1 - lse.get({0, 0, 0}));
  const double midpoint = 1.5 * 0x1p-133;
  for (int step = 128; step < 256; ++step) {  // c in [1/8, 1/4), in bf16 steps of 2^-10
    const double value = step * 0x1p-10;
    v.set({0, 0, 1, 0}, value);
    o.set({0, 0, 0, 0}, p_true * value);
    const double d_row = o.get({0, 0, 0, 0});  // do . o, as the kernel forms it
    auto just_above = [&](double ds) { return ds > midpoint && ds < midpoint * (1 + 0x1p-6); };
    if (just_above(p_true * (value - p_true * value)) && just_above(p_given * (value - d_row)))
      return c;
  }
  throw std::logic_error("no v_1 puts dS_1 just above a bf16 subnormal midpoint");
}

properties::CertifyOptions options_for(const kernels::Variant& v, const Case& c) {
  properties::CertifyOptions o;
  o.variant = &v;
  o.format = Format::bf16;
  o.seed = 7;
  o.equivalence = false;
  o.case_files = {{"weight at a bf16 midpoint", c}};
  return o;
}

// The declaration is what the kernel's bound rests on: the same kernel
// declaring rounded accumulation, or tensor-core accumulation without the
// rounding of P to bf16, fails on the row above where the full declaration
// holds.
TEST(BwdTcArithmetic, UndeclaredRoundingOfPFailsItsBound) {
  const kernels::Variant& fixed = simt_variant(Op::attention_bwd, "bwd_tc");
  EXPECT_EQ(fixed.arithmetic.accumulation, Accumulation::tensor_core);
  EXPECT_EQ(fixed.arithmetic.rounding_of("P"), Rounding::storage);
  EXPECT_EQ(fixed.arithmetic.rounding_of("dS"), Rounding::storage);
  const Case c = weight_at_a_bf16_midpoint();
  const auto holds = properties::certify(options_for(fixed, c));
  EXPECT_TRUE(holds.holds) << holds.failure;
  for (const Arithmetic& claimed :
       {Arithmetic{}, Arithmetic{.accumulation = Accumulation::tensor_core,
                      .rounded = {{"dS", Rounding::storage}}}}) {
    kernels::Variant undeclared = fixed;
    undeclared.arithmetic = claimed;
    const auto cert = properties::certify(options_for(undeclared, c));
    EXPECT_FALSE(cert.holds);
    EXPECT_NE(cert.failure.find("error"), std::string::npos) << cert.failure;
    RecordProperty("failure", cert.failure);
  }
}

// The fused tensor-core ONFs' float atomics against bwd_tc's, counted by
// the emulator (issue #30's figure: the fused forward+backward adds dV and
// dK by atomics, the backward dQ alone). bwd_tc adds one atomic per
// (16-row query tile, 32-key tile, query row, d) of its visible pairs, so
// per 32-key tile D times the rows of its visible 16-row tiles;
// fused_v1_tc two per (32-row query block, 32-key tile, key, d), so per
// 32-row block 2 D times the keys of its visible key tiles. Where N and M
// are multiples of 32, causal or not, every tile is whole and both 16-row
// tiles of a 32-row block see exactly the key tiles the block sees (the
// causal offset M - N is a multiple of 32 too: 32 j <= 32 b + off + 15 iff
// 32 j <= 32 b + off + 31), so each visible (block, key tile) pair costs
// bwd_tc 32 D atomics and fused_v1_tc 64 D: exactly twice, whatever the
// group. With tails it is not: non-causal, fused_v1_tc adds
// 2 D ceil(N / 32) M per head and bwd_tc D ceil(M / 32) N (so twice again
// where N = M), and causal tails follow the cost functions (kernels/cuda/
// cost.cpp), which the emulator's counts equal on every launch (above).
// fused_v3_tc adds dK's alone, exactly half of fused_v1_tc's, and
// fused_det_tc none, on every shape.
TEST(BwdTc, FusedV1TcHasTwiceBwdTcsAtomicsFusedV3TcHalfAndFusedDetTcNone) {
  auto dims = [](moa::extent_t H, moa::extent_t Hkv, moa::extent_t N, moa::extent_t M,
                 moa::extent_t D) {
    Dims d;
    d.B = 2, d.H = H, d.Hkv = Hkv, d.N = N, d.M = M, d.D = D;
    return d;
  };
  const std::vector<Shape> whole_tiles = {{dims(2, 2, 64, 96, 64), false},
                                          {dims(4, 2, 96, 32, 128), true},
                                          {dims(2, 1, 64, 64, 64), true},
                                          {dims(2, 2, 32, 128, 128), true}};
  std::vector<Shape> shapes = law_shapes();
  shapes.insert(shapes.end(), whole_tiles.begin(), whole_tiles.end());
  for (const Shape& s : shapes) {
    const Case fused = attention_case(Op::attention_fwdbwd, s.d, s.causal);
    const double v1 = float_atomics("fused_v1_tc", fused);
    const double v3 = float_atomics("fused_v3_tc", fused);
    const double det = float_atomics("fused_det_tc", fused);
    const Case bwd_case = attention_case(Op::attention_bwd, s.d, s.causal);
    const double bwd = float_atomics("bwd_tc", bwd_case);
    std::printf("N=%-3d M=%-3d %-10s bwd_tc %8.0f  fused_v1_tc %8.0f (%.4fx)  fused_v3_tc %8.0f\n",
                int(s.d.N), int(s.d.M), s.causal ? "causal" : "non-causal", bwd, v1, v1 / bwd, v3);
    EXPECT_GT(v1, 0);
    EXPECT_EQ(v1, 2 * v3);
    EXPECT_EQ(det, 0);
    EXPECT_EQ(bwd, cost::total("bwd_tc", bwd_case.problem).atomics);
    EXPECT_EQ(v1, cost::total("fused_v1_tc", fused.problem).atomics);
    const double n = double(s.d.N), m = double(s.d.M);
    if (s.d.N % 32 == 0 && s.d.M % 32 == 0) {
      EXPECT_EQ(v1, 2 * bwd) << "N=" << s.d.N << " M=" << s.d.M;
    } else if (!s.causal) {
      EXPECT_EQ(v1 * std::ceil(m / 32) * n, 2 * bwd * std::ceil(n / 32) * m)
          << "N=" << s.d.N << " M=" << s.d.M;
    }
  }
}

// dS's declaration is needed too: on the row above, the same kernel
// declaring tensor-core accumulation and P's rounding but not dS's fails
// its bound on dK or dQ, and holds with the full declaration.
TEST(BwdTcArithmetic, UndeclaredRoundingOfDSFailsItsBound) {
  const kernels::Variant& fixed = simt_variant(Op::attention_bwd, "bwd_tc");
  const Case c = score_gradient_at_a_bf16_subnormal_midpoint();
  const auto holds = properties::certify(options_for(fixed, c));
  EXPECT_TRUE(holds.holds) << holds.failure;
  RecordProperty("holds_worst", std::to_string(holds.worst_ratio));
  kernels::Variant undeclared = fixed;
  undeclared.arithmetic =
      Arithmetic{.accumulation = Accumulation::tensor_core, .rounded = {{"P", Rounding::storage}}};
  const auto cert = properties::certify(options_for(undeclared, c));
  EXPECT_FALSE(cert.holds);
  EXPECT_NE(cert.failure.find("error"), std::string::npos) << cert.failure;
  std::printf("full declaration: worst error/allowed %.3f; without dS's rounding: %.3f, %s\n",
              holds.worst_ratio, cert.worst_ratio, cert.failure.c_str());
  RecordProperty("failure", cert.failure);
}

}  // namespace
}  // namespace moacert
