// attention.fwd kernels (cpu.naive, cpu.flash, and the generic scalar loop
// nest of cpu.flash) within the oracle's a priori bounds of each case.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/attention_fwd/flash_generic.hpp"
#include "kernels/registry.hpp"
#include "tests/support/harness.hpp"

namespace moacert::test {
namespace {

// Shapes that reach every named branch: N not a multiple of the 64-row tile
// (tail tile), N != M with causal both ways (N > M: rows with no visible key),
// GQA and MQA, D odd (1, 3, 59). Heads are few: the oracle's f64 answer
// costs about a microsecond per multiply-add, and the tiles live in N, M, D.
const AttnShape kCases[] = {
    {1, 1, 1, 1, 1, 1, false, 0},      {2, 4, 2, 70, 45, 3, false, 0.7},
    {1, 2, 1, 33, 130, 59, true, 0},   {1, 2, 2, 150, 67, 8, true, 0},
    {2, 3, 3, 65, 65, 1, true, 2.0},   {1, 1, 1, 129, 130, 64, false, 0},
    {1, 2, 1, 97, 31, 16, true, 0.25}, {1, 1, 1, 64, 70, 128, true, 0},
};

Problem problem_of(const AttnShape& c, Format f) {
  return attention_problem(Op::attention_fwd, f, c);
}

std::string what_of(const std::string& variant, const Problem& p) {
  const Dims& d = p.dims;
  return variant + " " + std::string(name(p.format)) + " N=" + std::to_string(d.N) +
         " M=" + std::to_string(d.M) + " D=" + std::to_string(d.D);
}

class FwdVariant : public ::testing::TestWithParam<const char*> {};

// f64, every case, the inputs in every layout kind and the outputs cycling
// through them, each run within the oracle's a priori bounds of the case.
TEST_P(FwdVariant, WithinTheOracleBoundsInF64OverShapesAndLayouts) {
  const kernels::Variant& v = variant(Op::attention_fwd, GetParam());
  int n = 0;
  for (const AttnShape& s : kCases) {
    const Case base = make_case(problem_of(s, Format::f64), 11 + std::uint64_t(n));
    const Reference ref = reference(base);
    for (LayoutKind kind : kInjectiveLayoutKinds) {
      const LayoutKind out_kind = kInjectiveLayoutKinds[(n++) % 5];
      const auto out = run(v, relayout(base, kind), out_kind);
      EXPECT_TRUE(within_bounds(
          ref, out,
          what_of(GetParam(), base.problem) + " in " + name(kind) + " out " + name(out_kind)));
    }
  }
}

// The storage formats: inputs rounded to the format, accumulation in f32
// (f32 itself for f32), outputs rounded once.
TEST_P(FwdVariant, WithinTheOracleBoundsInF32Bf16F16) {
  const kernels::Variant& v = variant(Op::attention_fwd, GetParam());
  std::uint64_t seed = 12;
  for (Format f : {Format::f32, Format::bf16, Format::f16}) {
    for (const AttnShape& s : {kCases[1], kCases[2], kCases[3], kCases[5]}) {
      const Case c = make_case(problem_of(s, f), seed++);
      EXPECT_TRUE(within_bounds(reference(c), run(v, c, LayoutKind::permuted),
                                what_of(GetParam(), c.problem)));
    }
  }
}

// Causal with N > M: the first N - M rows see no key and give exactly O = 0
// and LSE = -inf; the others do not.
TEST_P(FwdVariant, RowsWithNoVisibleKeyGiveZeroAndMinusInf) {
  const kernels::Variant& v = variant(Op::attention_fwd, GetParam());
  const AttnShape s{1, 2, 1, 100, 10, 5, true, 0};
  const Case c = make_case(problem_of(s, Format::f32), 13);
  const auto out = run(v, c);
  for (extent_t h = 0; h < s.H; ++h) {
    for (extent_t i = 0; i < s.N; ++i) {
      const double lse = out[1].get({0, h, i});
      if (i < s.N - s.M) {
        EXPECT_EQ(lse, -std::numeric_limits<double>::infinity()) << "row " << i;
        for (extent_t d = 0; d < s.D; ++d) EXPECT_EQ(out[0].get({0, h, i, d}), 0.0);
      } else {
        EXPECT_TRUE(std::isfinite(lse)) << "row " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, FwdVariant, ::testing::Values("cpu.naive", "cpu.flash"),
                         [](const auto& param_info) { return param_name(param_info.param); });

// The LibTorch baseline, when this build has it, in f64 over every case and
// layout (its bf16 rounds S and P to bf16: the a priori rule of f32
// accumulation is not its contract there).
TEST(TorchFwd, WithinTheOracleBoundsInF64) {
  const kernels::Variant* v = kernels::Registry::builtin().find(Op::attention_fwd, "torch");
  if (!kernels::backends().torch) {
    EXPECT_EQ(v, nullptr);
    GTEST_SKIP() << "built without LibTorch";
  }
  ASSERT_NE(v, nullptr);
  int n = 0;
  for (const AttnShape& s : kCases) {
    const LayoutKind kind = kInjectiveLayoutKinds[(n++) % 5];
    const Case c = make_case(problem_of(s, Format::f64), 16 + std::uint64_t(n), kind);
    EXPECT_TRUE(within_bounds(reference(c), run(*v, c, LayoutKind::row_major, 2),
                              what_of("torch", c.problem) + " " + name(kind)));
  }
}

// cpu.flash's result does not depend on the thread count: bitwise equal with
// 1 and 2 threads, in every format.
TEST(FlashFwd, DeterministicAcrossThreadCounts) {
  const kernels::Variant& v = variant(Op::attention_fwd, "cpu.flash");
  ASSERT_TRUE(v.deterministic);
  for (Format f : kAllFormats) {
    const Case c = make_case(problem_of({2, 4, 2, 200, 190, 24, true, 0}, f), 14);
    EXPECT_TRUE(
        same_storage_bits(run(v, c, LayoutKind::row_major, 1), run(v, c, LayoutKind::row_major, 2)))
        << name(f);
  }
}

// The scalar loop nest (what the property engine instantiates with MPFR),
// instantiated with double, within the oracle's f64 bounds for tilings that
// divide nothing, tiles of one, and cpu.flash's own 64 x 64.
TEST(FlashFwdGeneric, WithinTheOracleBoundsInF64) {
  const std::pair<extent_t, extent_t> tilings[] = {{1, 1}, {3, 5}, {16, 16}, {64, 64}};
  std::uint64_t seed = 15;
  for (const AttnShape& s : kCases) {
    const Case c = make_case(problem_of(s, Format::f64), seed++, LayoutKind::permuted);
    const Reference ref = reference(c);
    for (auto [bm, bn] : tilings) {
      std::vector<AnyTensor> out = nan_outputs(c.problem, LayoutKind::row_major);
      kernels::cpu::flash_fwd_generic<double>(
          c.inputs[0].view<double>(), c.inputs[1].view<double>(), c.inputs[2].view<double>(),
          c.problem.scale(), c.problem.causal(), out[0].view<double>(), out[1].view<double>(), bm,
          bn);
      EXPECT_TRUE(within_bounds(ref, out,
                                what_of("generic", c.problem) + " tiles " + std::to_string(bm) +
                                    "x" + std::to_string(bn)));
    }
  }
}

// The registry entries are honest about what they accept and promise.
TEST(FwdRegistry, EntriesAndCosts) {
  for (const char* name : {"cpu.naive", "cpu.flash"}) {
    const kernels::Variant& v = variant(Op::attention_fwd, name);
    EXPECT_TRUE(v.accepts_strided);
    EXPECT_TRUE(v.deterministic);
    for (Format f : kAllFormats) EXPECT_TRUE(v.supports(f));
    Problem p = problem_of({1, 8, 8, 2048, 2048, 64, false, 0}, Format::f32);
    const kernels::Cost cost = v.cost(p);
    EXPECT_GE(cost.flops, 4.0 * 8 * 2048 * 2048 * 64);
    EXPECT_GT(cost.bytes_read, 0);
  }
  // cpu.flash's scratch is O(M·D) per thread (the packed K^T and V of one kv
  // head) plus O(BLOCK·D) tiles: it does not grow with N, and grows with M
  // no faster than linearly.
  const kernels::Variant& flash = variant(Op::attention_fwd, "cpu.flash");
  auto peak = [&](extent_t n, extent_t m) {
    return flash.cost(problem_of({1, 8, 8, n, m, 64, false, 0}, Format::f32)).peak_extra_bytes;
  };
  EXPECT_EQ(peak(256, 4096), peak(16384, 4096));
  EXPECT_LE(peak(256, 16384) - peak(256, 256),
            (16384.0 - 256.0) / (4096.0 - 256.0) * (peak(256, 4096) - peak(256, 256)) * 1.01);
}

}  // namespace
}  // namespace moacert::test
