// attention.fwd kernels (cpu.naive, cpu.flash, and the generic scalar loop
// nest of cpu.flash) against the DNF in double.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "kernels/cpu/attention_fwd/flash_generic.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/attention.hpp"
#include "tests/kernels/attention_test_util.hpp"

namespace moacert::testing_attn {
namespace {

struct Case {
  extent_t B, H, Hkv, N, M, D;
  bool causal;
  double scale;  // 0: 1/sqrt(D)
};

// Shapes that reach every named branch: N not a multiple of the 64-row tile
// (tail tile), N != M with causal both ways (N > M: rows with no visible key),
// GQA and MQA, D odd (1, 3, 59).
const Case kCases[] = {
    {1, 1, 1, 1, 1, 1, false, 0},      {2, 4, 2, 70, 45, 3, false, 0.7},
    {1, 4, 1, 33, 130, 59, true, 0},   {1, 2, 2, 150, 67, 8, true, 0},
    {2, 3, 3, 65, 65, 1, true, 2.0},   {1, 8, 2, 129, 200, 64, false, 0},
    {1, 2, 1, 97, 31, 16, true, 0.25}, {1, 1, 1, 64, 128, 128, true, 0},
};

Problem problem_of(const Case& c, Format f) {
  Problem p;
  p.op = Op::attention_fwd;
  p.format = f;
  p.dims.B = c.B;
  p.dims.H = c.H;
  p.dims.Hkv = c.Hkv;
  p.dims.N = c.N;
  p.dims.M = c.M;
  p.dims.D = c.D;
  p.params.causal = c.causal;
  p.params.scale = c.scale;
  return p;
}

struct Tensors {
  std::vector<AnyTensor> in, out;
};

// Random inputs of problem p, each tensor in the layout of its kind.
Tensors make_run(const Problem& p, Kind in_kind, Kind out_kind, std::mt19937& rng) {
  Tensors r;
  for (const Shape& s : input_shapes(p)) {
    r.in.emplace_back(dtype_of(p.format), make_layout(s, in_kind));
    fill_uniform(r.in.back(), rng);
  }
  for (const Shape& s : output_shapes(p))
    r.out.emplace_back(dtype_of(p.format), make_layout(s, out_kind));
  return r;
}

void run_variant(const kernels::Variant& v, const Problem& p, Tensors& r, int threads = 0) {
  std::vector<TensorRef> in, out;
  for (const AnyTensor& t : r.in) in.push_back(t.ref());
  for (AnyTensor& t : r.out) out.push_back(t.ref());
  v.run(p, in, out, kernels::RunOptions{threads});
}

// The DNF in double on exactly the kernel's inputs.
std::pair<moa::Tensor<double>, moa::Tensor<double>> dnf_answer(const Problem& p, const Tensors& r) {
  const auto q = to_double(r.in[0]), k = to_double(r.in[1]), v = to_double(r.in[2]);
  const auto shapes = output_shapes(p);
  moa::Tensor<double> o(shapes[0]), lse(shapes[1]);
  dnf::attention_fwd<double>(q.view(), k.view(), v.view(), p.scale(), p.causal(), o.view(),
                             lse.view());
  return {std::move(o), std::move(lse)};
}

const kernels::Variant& variant(const char* name) {
  const kernels::Variant* v = kernels::Registry::builtin().find(Op::attention_fwd, name);
  if (!v) throw std::runtime_error(std::string("no variant ") + name);
  return *v;
}

class FwdVariant : public ::testing::TestWithParam<const char*> {};

// f64, every case, the layouts of the inputs and outputs cycling through
// row-major, column-major, permuted BNHD, padded and tiled.
TEST_P(FwdVariant, MatchesDnfInF64OverShapesAndLayouts) {
  const kernels::Variant& v = variant(GetParam());
  std::mt19937 rng(11);
  int n = 0;
  for (const Case& c : kCases) {
    for (Kind kind : kAllKinds) {
      const Problem p = problem_of(c, Format::f64);
      const Kind out_kind = kAllKinds[(n++) % 5];
      Tensors r = make_run(p, kind, out_kind, rng);
      run_variant(v, p, r);
      const auto [o, lse] = dnf_answer(p, r);
      const Tol tol = tolerance(Format::f64, c.D, c.M, p.scale());
      const std::string what = std::string(GetParam()) + " N=" + std::to_string(c.N) +
                               " M=" + std::to_string(c.M) + " D=" + std::to_string(c.D) + " in " +
                               kind_name(kind) + " out " + kind_name(out_kind);
      expect_close(r.out[0], o, tol.o, what + " o");
      expect_close(r.out[1], lse, tol.lse, what + " lse");
    }
  }
}

// The storage formats: inputs rounded to the format, accumulation in f32
// (f32 itself for f32), outputs rounded once.
TEST_P(FwdVariant, MatchesDnfInF32Bf16F16) {
  const kernels::Variant& v = variant(GetParam());
  std::mt19937 rng(12);
  for (Format f : {Format::f32, Format::bf16, Format::f16}) {
    for (const Case& c : {kCases[1], kCases[2], kCases[3], kCases[5]}) {
      const Problem p = problem_of(c, f);
      Tensors r = make_run(p, Kind::row_major, Kind::permuted, rng);
      run_variant(v, p, r);
      const auto [o, lse] = dnf_answer(p, r);
      const Tol tol = tolerance(f, c.D, c.M, p.scale());
      const std::string what = std::string(GetParam()) + " " + std::string(name(f)) +
                               " N=" + std::to_string(c.N) + " M=" + std::to_string(c.M);
      expect_close(r.out[0], o, tol.o, what + " o");
      expect_close(r.out[1], lse, tol.lse, what + " lse");
    }
  }
}

// Causal with N > M: the first N - M rows see no key and give exactly O = 0
// and LSE = -inf; the others do not.
TEST_P(FwdVariant, RowsWithNoVisibleKeyGiveZeroAndMinusInf) {
  const kernels::Variant& v = variant(GetParam());
  std::mt19937 rng(13);
  const Case c{1, 2, 1, 100, 10, 5, true, 0};
  const Problem p = problem_of(c, Format::f32);
  Tensors r = make_run(p, Kind::row_major, Kind::row_major, rng);
  run_variant(v, p, r);
  for (extent_t h = 0; h < c.H; ++h) {
    for (extent_t i = 0; i < c.N; ++i) {
      const double lse = r.out[1].get({0, h, i});
      if (i < c.N - c.M) {
        EXPECT_EQ(lse, -std::numeric_limits<double>::infinity()) << "row " << i;
        for (extent_t d = 0; d < c.D; ++d) EXPECT_EQ(r.out[0].get({0, h, i, d}), 0.0);
      } else {
        EXPECT_TRUE(std::isfinite(lse)) << "row " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, FwdVariant, ::testing::Values("cpu.naive", "cpu.flash"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (char& ch : s)
                             if (ch == '.') ch = '_';
                           return s;
                         });

// The LibTorch baseline, when this build has it, in f64 over every case and
// layout (its bf16 rounds S and P to bf16, so it is not held to the f32-
// accumulation tolerances).
TEST(TorchFwd, MatchesDnfInF64) {
  const kernels::Variant* v = kernels::Registry::builtin().find(Op::attention_fwd, "torch");
  if (!kernels::backends().torch) {
    EXPECT_EQ(v, nullptr);
    GTEST_SKIP() << "built without LibTorch";
  }
  ASSERT_NE(v, nullptr);
  std::mt19937 rng(16);
  int n = 0;
  for (const Case& c : kCases) {
    const Problem p = problem_of(c, Format::f64);
    const Kind kind = kAllKinds[(n++) % 5];
    Tensors r = make_run(p, kind, Kind::row_major, rng);
    run_variant(*v, p, r, 2);
    const auto [o, lse] = dnf_answer(p, r);
    const Tol tol = tolerance(Format::f64, c.D, c.M, p.scale());
    expect_close(r.out[0], o, tol.o, std::string("torch o ") + kind_name(kind));
    expect_close(r.out[1], lse, tol.lse, std::string("torch lse ") + kind_name(kind));
  }
}

// cpu.flash's result does not depend on the thread count: bitwise equal with
// 1 and 2 threads, in every format.
TEST(FlashFwd, DeterministicAcrossThreadCounts) {
  const kernels::Variant& v = variant("cpu.flash");
  ASSERT_TRUE(v.deterministic);
  for (Format f : kAllFormats) {
    std::mt19937 rng(14);
    const Case c{2, 4, 2, 200, 190, 24, true, 0};
    const Problem p = problem_of(c, f);
    Tensors one = make_run(p, Kind::row_major, Kind::row_major, rng);
    Tensors two = one;
    run_variant(v, p, one, 1);
    run_variant(v, p, two, 2);
    EXPECT_TRUE(bitwise_equal(one.out[0], two.out[0])) << name(f);
    EXPECT_TRUE(bitwise_equal(one.out[1], two.out[1])) << name(f);
  }
}

// The scalar loop nest (what the property engine instantiates with MPFR)
// agrees with the DNF in double for tilings that divide nothing, tiles of
// one, and cpu.flash's own 64 x 64.
TEST(FlashFwdGeneric, MatchesDnfInDouble) {
  std::mt19937 rng(15);
  const std::pair<extent_t, extent_t> tilings[] = {{1, 1}, {3, 5}, {16, 16}, {64, 64}};
  for (const Case& c : kCases) {
    for (auto [bm, bn] : tilings) {
      const Problem p = problem_of(c, Format::f64);
      Tensors r = make_run(p, Kind::permuted, Kind::row_major, rng);
      const auto q = to_double(r.in[0]), k = to_double(r.in[1]), vv = to_double(r.in[2]);
      moa::Tensor<double> o(output_shapes(p)[0]), lse(output_shapes(p)[1]);
      kernels::cpu::flash_fwd_generic<double>(q.view(), k.view(), vv.view(), p.scale(), p.causal(),
                                              o.view(), lse.view(), bm, bn);
      const auto [o_want, lse_want] = dnf_answer(p, r);
      const Tol tol = tolerance(Format::f64, c.D, c.M, p.scale());
      for (const moa::Index& i : moa::iota(o.shape())) {
        ASSERT_NEAR(o.view()(i), o_want.view()(i), tol.o) << "tiles " << bm << "x" << bn;
      }
      for (const moa::Index& i : moa::iota(lse.shape())) {
        const double g = lse.view()(i), w = lse_want.view()(i);
        if (std::isinf(w)) {
          ASSERT_EQ(g, w);
        } else {
          ASSERT_NEAR(g, w, tol.lse) << "tiles " << bm << "x" << bn;
        }
      }
    }
  }
}

// The registry entries are honest about what they accept and promise.
TEST(FwdRegistry, EntriesAndCosts) {
  for (const char* name : {"cpu.naive", "cpu.flash"}) {
    const kernels::Variant& v = variant(name);
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
  const kernels::Variant& flash = variant("cpu.flash");
  auto peak = [&](extent_t n, extent_t m) {
    return flash.cost(problem_of({1, 8, 8, n, m, 64, false, 0}, Format::f32)).peak_extra_bytes;
  };
  EXPECT_EQ(peak(256, 4096), peak(16384, 4096));
  EXPECT_LE(peak(256, 16384) - peak(256, 256),
            (16384.0 - 256.0) / (4096.0 - 256.0) * (peak(256, 4096) - peak(256, 256)) * 1.01);
}

}  // namespace
}  // namespace moacert::testing_attn
