// A variant's tiles in the registry are the tiles its kernel runs on this
// machine (issue #14, item 4). For every registered variant with tiles:
//   1. its entry equals the union over its formats of the kernel's own
//      report (`<onf>_tiles(Format)` in the kernel's header, the definition
//      the kernel body reads), and the reports that depend on the SIMD width
//      match the lanes of the target Highway's dynamic dispatch runs, asked
//      here the way the kernels ask it;
//   2. the kernel holds, under the a priori rule against the oracle, on
//      problems whose extents straddle each tile t it reports: t - 1 (a tail
//      tile only), t (one whole tile) and t + 1 (a whole tile and a tail of
//      one key or row).
// A variant that registers tiles with no report in kReports fails 1.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/kernels/test_registry_tiles.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::testing::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

std::size_t LanesF32() {
  return hn::Lanes(hn::ScalableTag<float>());
}
std::size_t LanesF64() {
  return hn::Lanes(hn::ScalableTag<double>());
}

}  // namespace moacert::kernels::testing::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/cpu/attention_bwd/flash_bwd.hpp"
#include "kernels/cpu/attention_decode/split.hpp"
#include "kernels/cpu/attention_fwd/flash.hpp"
#include "kernels/cpu/attention_fwdbwd/fused.hpp"
#include "kernels/cpu/common/tiles.hpp"
#include "kernels/cuda/tiles.hpp"
#include "kernels/registry.hpp"
#include "oracle/bounds.hpp"
#include "oracle/oracle.hpp"
#include "properties/case_gen.hpp"
#include "properties/check.hpp"
#include "properties/properties.hpp"

namespace moacert::kernels::testing {

HWY_EXPORT(LanesF32);
HWY_EXPORT(LanesF64);

namespace {

using moa::extent_t;

// The lanes of a format's compute type (f64 for f64, else f32) on the
// dispatched target.
extent_t dispatched_lanes(Format f) {
  return extent_t(f == Format::f64 ? HWY_DYNAMIC_DISPATCH(LanesF64)()
                                   : HWY_DYNAMIC_DISPATCH(LanesF32)());
}

struct Report {
  Op op;
  const char* variant;
  cpu::TilesFn tiles;
};
// The CUDA ONFs' tiles do not depend on the format (kernels/cuda/tiles.hpp).
template <const char* kOnf>
std::vector<extent_t> cuda_tiles_of(Format) {
  std::vector<extent_t> t;
  for (long long x : cuda_tiles::tiles_of(kOnf)) t.push_back(extent_t(x));
  return t;
}
constexpr char kFlash[] = "flash", kFusedV1[] = "fused_v1", kFusedV3[] = "fused_v3",
               kFusedDet[] = "fused_det", kBwdAtomic[] = "bwd_atomic", kBwdFa2[] = "bwd_fa2",
               kDecode[] = "decode", kRmsnorm[] = "rmsnorm", kSwiglu[] = "swiglu",
               kFlashTc[] = "flash_tc", kBwdTc[] = "bwd_tc", kFusedV1Tc[] = "fused_v1_tc",
               kFusedV3Tc[] = "fused_v3_tc", kFusedDetTc[] = "fused_det_tc";

// simt.<onf> names cuda.<onf> too: one source, two backends.
const Report kReports[] = {
    {Op::attention_fwd, "cpu.flash", cpu::flash_tiles},
    {Op::attention_decode, "cpu.split", cpu::split_tiles},
    {Op::attention_bwd, "cpu.flash_bwd", cpu::flash_bwd_tiles},
    {Op::attention_fwdbwd, "cpu.fused", cpu::fused_tiles},
    {Op::attention_fwd, "simt.flash", cuda_tiles_of<kFlash>},
    {Op::attention_fwd, "simt.flash_tc", cuda_tiles_of<kFlashTc>},
    {Op::attention_fwdbwd, "simt.fused_v1", cuda_tiles_of<kFusedV1>},
    {Op::attention_fwdbwd, "simt.fused_v3", cuda_tiles_of<kFusedV3>},
    {Op::attention_fwdbwd, "simt.fused_det", cuda_tiles_of<kFusedDet>},
    {Op::attention_bwd, "simt.bwd_atomic", cuda_tiles_of<kBwdAtomic>},
    {Op::attention_bwd, "simt.bwd_fa2", cuda_tiles_of<kBwdFa2>},
    {Op::attention_bwd, "simt.bwd_tc", cuda_tiles_of<kBwdTc>},
    {Op::attention_fwdbwd, "simt.fused_v1_tc", cuda_tiles_of<kFusedV1Tc>},
    {Op::attention_fwdbwd, "simt.fused_v3_tc", cuda_tiles_of<kFusedV3Tc>},
    {Op::attention_fwdbwd, "simt.fused_det_tc", cuda_tiles_of<kFusedDetTc>},
    {Op::attention_decode, "simt.decode", cuda_tiles_of<kDecode>},
    {Op::rmsnorm, "simt.rmsnorm", cuda_tiles_of<kRmsnorm>},
    {Op::mlp_swiglu, "simt.swiglu", cuda_tiles_of<kSwiglu>},
};

void PrintTo(const Report& r, std::ostream* os) {
  *os << info(r.op).name << " " << r.variant;
}

const Report* report_of(const Variant& v) {
  for (const Report& r : kReports) {
    const std::string_view name = r.variant;
    const bool cuda_twin =
        name.starts_with("simt.") && v.name == "cuda." + std::string(name.substr(5));
    if (r.op == v.op && (v.name == name || cuda_twin)) return &r;
  }
  return nullptr;
}

std::string str(const std::vector<extent_t>& t) {
  std::string s = "{";
  for (std::size_t k = 0; k < t.size(); ++k) s += (k ? ", " : "") + std::to_string(t[k]);
  return s + "}";
}

std::vector<const Variant*> tiled_variants() {
  std::vector<const Variant*> out;
  for (const Variant& v : Registry::builtin().all())
    if (!v.tiles.empty()) out.push_back(&v);
  return out;
}

TEST(RegistryTiles, EveryTiledVariantHasAReport) {
  for (const Variant* v : tiled_variants()) {
    EXPECT_NE(report_of(*v), nullptr)
        << info(v->op).name << " " << v->name << " registers tiles " << str(v->tiles)
        << " but this test has no report of its kernel's tiles: add it to kReports";
  }
  for (const Report& r : kReports) {
    const Variant* v = Registry::builtin().find(r.op, r.variant);
    ASSERT_NE(v, nullptr) << r.variant << " of " << info(r.op).name << " is not registered";
    EXPECT_FALSE(v->tiles.empty()) << r.variant << " runs tiles but registers none";
  }
}

TEST(RegistryTiles, AreTheTilesTheKernelRunsOnThisMachine) {
  for (const Variant* v : tiled_variants()) {
    const Report* r = report_of(*v);
    if (!r) continue;  // EveryTiledVariantHasAReport fails
    const std::vector<extent_t> want = cpu::tiles_of_formats(v->formats, r->tiles);
    EXPECT_EQ(v->tiles, want) << info(v->op).name << " " << v->name << ": the registry says "
                              << str(v->tiles) << ", its kernel runs " << str(want);
  }
}

// The reports that depend on the SIMD width follow the dispatched target.
TEST(RegistryTiles, FollowTheDispatchedLanes) {
  for (Format f : {Format::f64, Format::f32}) {
    const extent_t lanes = dispatched_lanes(f);
    EXPECT_EQ(cpu::flash_lanes(f), std::size_t(lanes)) << name(f);
    const cpu::FlashBwdTiles t = cpu::flash_bwd_tiling(f, /*D=*/3);
    EXPECT_EQ(t.lanes, lanes) << name(f);
    EXPECT_EQ(t.block_n, cpu::FlashBwdTiles::chunks * lanes) << name(f);
    EXPECT_EQ(t.d_padded, lanes * ((3 + lanes - 1) / lanes)) << name(f);
    const std::vector<extent_t> reported = cpu::flash_bwd_tiles(f);
    EXPECT_NE(std::find(reported.begin(), reported.end(), t.block_n), reported.end()) << name(f);
  }
}

// A case of `op` in `f`, row-major, uniform values, the given extents.
properties::CaseSpec spec_of(const Variant& v, Format f, extent_t N, extent_t M, bool causal) {
  const Op op = v.op;
  properties::CaseSpec s;
  s.problem.op = op;
  s.problem.format = f;
  Dims& d = s.problem.dims;
  d.B = 1;
  d.H = 2;
  d.Hkv = 1;  // GQA: two query heads share the kv head
  d.N = op == Op::attention_decode ? 1 : N;
  d.M = M;
  d.D = 3;  // not a whole vector: padded rows
  // unless the variant's envelope excludes it (simt.flash_tc: D in {64,
  // 128}): its smallest head width
  for (const auto& [axis, allowed] : v.envelope.axes)
    if (axis == "D" && is_attention(op) && !allowed.admits(d.D)) d.D = allowed.smallest(1).at(0);
  // The row ops straddle their tile along the row: rmsnorm's threads stride
  // D, the SwiGLU GEMMs tile T, Dm and F alike.
  if (op == Op::rmsnorm) d.T = N, d.D = M;
  if (op == Op::mlp_swiglu) d.T = N, d.Dm = M, d.F = M;
  s.problem.params.causal = causal && op != Op::attention_decode;
  if (op == Op::attention_decode) s.lens = {M};
  for (const moa::Shape& shape : input_shapes(s.problem)) {
    s.kinds.push_back(moa::LayoutKind::row_major);
    s.layouts.push_back(moa::Layout::row_major(shape));
  }
  s.values = properties::Values::uniform;
  s.seed = std::uint64_t(N * 1000 + M);
  return s;
}

// The largest extent run as an e x e causal square.
constexpr extent_t kSquareMax = 65;

class Straddle : public ::testing::TestWithParam<Report> {};

TEST_P(Straddle, KernelHoldsOnExtentsStraddlingItsTiles) {
  const Report& r = GetParam();
  const Variant* v = Registry::builtin().find(r.op, r.variant);
  ASSERT_NE(v, nullptr) << r.variant << " of " << info(r.op).name << " is not registered";
  const properties::Rule rule;  // a priori
  for (Format f : v->formats) {
    for (extent_t t : r.tiles(f)) {
      for (extent_t e : {t - 1, t, t + 1}) {
        if (e < 1) continue;
        // keys straddle (M = e), rows straddle (N = e, fewer keys than
        // rows: causal rows with no key), and both, causal (where e x e is
        // small enough for the oracle to be quick)
        struct Shape {
          extent_t N, M;
          bool causal;
        };
        for (const Shape& s : {Shape{3, e, false}, Shape{e, 5, true}, Shape{e, e, true}}) {
          if (v->op == Op::attention_decode && s.N != 3) continue;  // one query row
          if (s.N == s.M && e > kSquareMax) continue;
          const properties::CaseSpec spec = spec_of(*v, f, s.N, s.M, s.causal);
          const Case c = properties::make_case(spec);
          const oracle::Answer exact = oracle::evaluate(c);
          // for the arithmetic it declares (simt.flash_tc: tensor cores)
          const std::vector<std::vector<double>> bounds =
              oracle::apriori_bounds(c, {.arithmetic = v->arithmetic});
          const std::vector<AnyTensor> outputs = properties::run_variant(*v, c);
          const properties::Verdict verdict = properties::judge(c, exact, outputs, rule, &bounds);
          EXPECT_TRUE(verdict.holds) << v->name << " " << name(f) << " tile " << t << ": "
                                     << properties::describe(spec) << ": " << verdict.why;
        }
      }
    }
  }
}

std::string test_name(const ::testing::TestParamInfo<Report>& p) {
  std::string n = std::string(info(p.param.op).name) + "_" + p.param.variant;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}
INSTANTIATE_TEST_SUITE_P(TiledKernels, Straddle, ::testing::ValuesIn(kReports), test_name);

}  // namespace
}  // namespace moacert::kernels::testing
#endif  // HWY_ONCE
