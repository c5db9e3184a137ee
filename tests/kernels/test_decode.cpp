// attention.decode (cpu.split and its generic scalar loop nest) against the
// DNF in double: ragged lens, GQA/MQA, strided caches, positions past
// lens[b] poisoned with NaN.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "kernels/cpu/attention_decode/split_generic.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/attention.hpp"
#include "tests/kernels/attention_test_util.hpp"

namespace moacert::testing_attn {
namespace {

struct Case {
  extent_t B, H, Hkv, L, D;
  std::vector<std::int64_t> lens;
  double scale;
};

// lens cover 1 (a single key), a whole 256-position chunk, chunk + 1, and L;
// H/Hkv gives MHA, GQA and MQA; D odd (1, 3, 59).
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {3, 8, 2, 700, 59, {1, 256, 700}, 0},
      {2, 4, 1, 300, 1, {257, 13}, 0.9},
      {2, 4, 4, 513, 3, {512, 513}, 0},
      {1, 6, 3, 40, 64, {40}, 0},
      {2, 32, 8, 600, 128, {600, 255}, 0},
      {2, 3, 1, 100, 64, {77, 100}, 0},  // an odd group: a head without a pair
  };
  return c;
}

Problem problem_of(const Case& c, Format f) {
  Problem p;
  p.op = Op::attention_decode;
  p.format = f;
  p.dims.B = c.B;
  p.dims.H = c.H;
  p.dims.Hkv = c.Hkv;
  p.dims.N = 1;
  p.dims.M = c.L;
  p.dims.D = c.D;
  p.params.scale = c.scale;
  return p;
}

struct Tensors {
  std::vector<AnyTensor> in, out;
};

// Random q, k, v; k and v hold NaN at every position >= lens[b], which a
// kernel that reads them would spread into o and lse.
Tensors make_run(const Problem& p, const Case& c, Kind kind, std::mt19937& rng) {
  Tensors r;
  const auto shapes = input_shapes(p);
  for (int t = 0; t < 3; ++t) {
    r.in.emplace_back(dtype_of(p.format), make_layout(shapes[t], kind));
    fill_uniform(r.in.back(), rng);
  }
  for (int t = 1; t < 3; ++t) {
    for (const moa::Index& i : moa::iota(shapes[t]))
      if (i[2] >= c.lens[static_cast<std::size_t>(i[0])]) r.in[t].set(i, std::nan(""));
  }
  r.in.emplace_back(DType::i64, Layout::row_major(shapes[3]));
  for (extent_t b = 0; b < c.B; ++b)
    r.in.back().set({b}, double(c.lens[static_cast<std::size_t>(b)]));
  for (const Shape& s : output_shapes(p))
    r.out.emplace_back(dtype_of(p.format), make_layout(s, kind));
  return r;
}

void run_variant(const kernels::Variant& v, const Problem& p, Tensors& r, int threads = 0) {
  std::vector<TensorRef> in, out;
  for (const AnyTensor& t : r.in) in.push_back(t.ref());
  for (AnyTensor& t : r.out) out.push_back(t.ref());
  v.run(p, in, out, kernels::RunOptions{threads});
}

moa::Tensor<std::int64_t> lens_of(const Case& c) {
  moa::Tensor<std::int64_t> lens(Shape{c.B});
  for (extent_t b = 0; b < c.B; ++b) lens.view()(b) = c.lens[static_cast<std::size_t>(b)];
  return lens;
}

std::pair<moa::Tensor<double>, moa::Tensor<double>> dnf_answer(const Problem& p, const Case& c,
                                                               const Tensors& r) {
  const auto q = to_double(r.in[0]), k = to_double(r.in[1]), v = to_double(r.in[2]);
  const auto lens = lens_of(c);
  const auto shapes = output_shapes(p);
  moa::Tensor<double> o(shapes[0]), lse(shapes[1]);
  dnf::attention_decode<double>(q.view(), k.view(), v.view(), lens.view(), p.scale(), o.view(),
                                lse.view());
  return {std::move(o), std::move(lse)};
}

const kernels::Variant& split() {
  const kernels::Variant* v = kernels::Registry::builtin().find(Op::attention_decode, "cpu.split");
  if (!v) throw std::runtime_error("no variant cpu.split");
  return *v;
}

TEST(DecodeSplit, MatchesDnfInF64WithPoisonedTail) {
  std::mt19937 rng(21);
  for (const Case& c : cases()) {
    for (Kind kind : kAllKinds) {
      const Problem p = problem_of(c, Format::f64);
      Tensors r = make_run(p, c, kind, rng);
      run_variant(split(), p, r);
      const auto [o, lse] = dnf_answer(p, c, r);
      const Tol tol = tolerance(Format::f64, c.D, c.L, p.scale());
      const std::string what =
          "L=" + std::to_string(c.L) + " D=" + std::to_string(c.D) + " " + kind_name(kind);
      expect_close(r.out[0], o, tol.o, what + " o");
      expect_close(r.out[1], lse, tol.lse, what + " lse");
    }
  }
}

TEST(DecodeSplit, MatchesDnfInF32Bf16F16) {
  std::mt19937 rng(22);
  for (Format f : {Format::f32, Format::bf16, Format::f16}) {
    for (const Case& c : cases()) {
      const Problem p = problem_of(c, f);
      Tensors r = make_run(p, c, Kind::row_major, rng);
      run_variant(split(), p, r);
      const auto [o, lse] = dnf_answer(p, c, r);
      const Tol tol = tolerance(f, c.D, c.L, p.scale());
      const std::string what = std::string(name(f)) + " L=" + std::to_string(c.L);
      expect_close(r.out[0], o, tol.o, what + " o");
      expect_close(r.out[1], lse, tol.lse, what + " lse");
    }
  }
}

TEST(DecodeSplit, DeterministicAcrossThreadCounts) {
  ASSERT_TRUE(split().deterministic);
  for (Format f : kAllFormats) {
    std::mt19937 rng(23);
    const Case& c = cases()[4];
    const Problem p = problem_of(c, f);
    Tensors one = make_run(p, c, Kind::row_major, rng);
    Tensors two = one;
    run_variant(split(), p, one, 1);
    run_variant(split(), p, two, 2);
    EXPECT_TRUE(bitwise_equal(one.out[0], two.out[0])) << name(f);
    EXPECT_TRUE(bitwise_equal(one.out[1], two.out[1])) << name(f);
  }
}

TEST(DecodeSplit, RefusesLensOutOfRange) {
  std::mt19937 rng(24);
  Case c{1, 2, 1, 16, 4, {17}, 0};
  const Problem p = problem_of(c, Format::f32);
  c.lens = {16};
  Tensors r = make_run(p, c, Kind::row_major, rng);
  r.in[3].set({0}, 17);
  EXPECT_THROW(run_variant(split(), p, r), std::invalid_argument);
  r.in[3].set({0}, 0);
  EXPECT_THROW(run_variant(split(), p, r), std::invalid_argument);
}

// The scalar loop nest with chunks of 1, 7 and 256 positions (chunks past
// lens[b] are the neutral triple) agrees with the DNF; the poisoned tail
// stays unread.
TEST(DecodeSplitGeneric, MatchesDnfInDouble) {
  std::mt19937 rng(25);
  for (const Case& c : cases()) {
    for (extent_t split_len : {1, 7, 256}) {
      const Problem p = problem_of(c, Format::f64);
      Tensors r = make_run(p, c, Kind::col_major, rng);
      const auto q = to_double(r.in[0]), k = to_double(r.in[1]), v = to_double(r.in[2]);
      const auto lens = lens_of(c);
      moa::Tensor<double> o(output_shapes(p)[0]), lse(output_shapes(p)[1]);
      kernels::cpu::decode_split_generic<double>(q.view(), k.view(), v.view(), lens.view(),
                                                 p.scale(), o.view(), lse.view(), split_len);
      const auto [o_want, lse_want] = dnf_answer(p, c, r);
      const Tol tol = tolerance(Format::f64, c.D, c.L, p.scale());
      for (const moa::Index& i : moa::iota(o.shape()))
        ASSERT_NEAR(o.view()(i), o_want.view()(i), tol.o) << "split " << split_len;
      for (const moa::Index& i : moa::iota(lse.shape()))
        ASSERT_NEAR(lse.view()(i), lse_want.view()(i), tol.lse) << "split " << split_len;
    }
  }
}

}  // namespace
}  // namespace moacert::testing_attn
