// attention.decode (cpu.split and its generic scalar loop nest) within the
// oracle's a priori bounds: ragged lens, GQA/MQA, strided caches, positions past
// lens[b] poisoned with NaN.
#include <gtest/gtest.h>

#include <limits>

#include "kernels/cpu/attention_decode/split_generic.hpp"
#include "kernels/registry.hpp"
#include "tests/support/harness.hpp"

namespace moacert::test {
namespace {

struct DecodeShape {
  extent_t B, H, Hkv, L, D;
  std::vector<std::int64_t> lens;
  double scale;
};

// lens cover 1 (a single key), a whole 256-position chunk, chunk + 1, and L;
// H/Hkv gives MHA, GQA and MQA; D odd (1, 3, 59).
const std::vector<DecodeShape>& cases() {
  static const std::vector<DecodeShape> c = {
      {3, 4, 2, 700, 59, {1, 256, 700}, 0},
      {2, 4, 1, 300, 1, {257, 13}, 0.9},
      {2, 4, 4, 513, 3, {512, 513}, 0},
      {1, 6, 3, 40, 64, {40}, 0},
      {2, 8, 4, 600, 128, {600, 255}, 0},
      {2, 3, 1, 100, 64, {77, 100}, 0},  // an odd group: a head without a pair
  };
  return c;
}

Problem problem_of(const DecodeShape& c, Format f) {
  return attention_problem(Op::attention_decode, f, {c.B, c.H, c.Hkv, 1, c.L, c.D, false, c.scale});
}

// Random q, k, v in layouts of `kind`, the shape's lens; k and v hold NaN
// at every position >= lens[b], which a kernel that reads them would spread
// into o and lse (the DNF, and so the oracle, never reads them).
Case make_decode_case(const DecodeShape& c, Format f, LayoutKind kind, std::uint64_t seed) {
  Case r = make_case(problem_of(c, f), seed, kind);
  for (int t = 1; t < 3; ++t) {
    for (const moa::Index& i : moa::iota(r.inputs[t].shape()))
      if (i[2] >= c.lens[static_cast<std::size_t>(i[0])]) r.inputs[t].set(i, std::nan(""));
  }
  for (extent_t b = 0; b < c.B; ++b)
    r.inputs[3].set({b}, double(c.lens[static_cast<std::size_t>(b)]));
  return r;
}

std::string what_of(const DecodeShape& c, Format f) {
  return std::string(name(f)) + " L=" + std::to_string(c.L) + " D=" + std::to_string(c.D);
}

const kernels::Variant& split() {
  return variant(Op::attention_decode, "cpu.split");
}

TEST(DecodeSplit, WithinTheOracleBoundsInF64WithPoisonedTail) {
  std::uint64_t seed = 21;
  for (const DecodeShape& c : cases()) {
    const Case base = make_decode_case(c, Format::f64, LayoutKind::row_major, seed++);
    const Reference ref = reference(base);
    for (LayoutKind kind : kInjectiveLayoutKinds) {
      EXPECT_TRUE(within_bounds(ref, run(split(), relayout(base, kind), kind),
                                what_of(c, Format::f64) + " " + name(kind)));
    }
  }
}

TEST(DecodeSplit, WithinTheOracleBoundsInF32Bf16F16) {
  std::uint64_t seed = 22;
  for (Format f : {Format::f32, Format::bf16, Format::f16}) {
    for (const DecodeShape& c : cases()) {
      const Case r = make_decode_case(c, f, LayoutKind::row_major, seed++);
      EXPECT_TRUE(within_bounds(reference(r), run(split(), r), what_of(c, f)));
    }
  }
}

TEST(DecodeSplit, DeterministicAcrossThreadCounts) {
  ASSERT_TRUE(split().deterministic);
  for (Format f : kAllFormats) {
    const Case r = make_decode_case(cases()[4], f, LayoutKind::row_major, 23);
    EXPECT_TRUE(same_storage_bits(run(split(), r, LayoutKind::row_major, 1),
                                  run(split(), r, LayoutKind::row_major, 2)))
        << name(f);
  }
}

TEST(DecodeSplit, RefusesLensOutOfRange) {
  Case r = make_decode_case({1, 2, 1, 16, 4, {16}, 0}, Format::f32, LayoutKind::row_major, 24);
  r.inputs[3].set({0}, 17);
  EXPECT_THROW(run(split(), r), std::invalid_argument);
  r.inputs[3].set({0}, 0);
  EXPECT_THROW(run(split(), r), std::invalid_argument);
}

// The scalar loop nest with chunks of 1, 7 and 256 positions (chunks past
// lens[b] are the neutral triple), instantiated with double, within the
// oracle's f64 bounds; the poisoned tail stays unread.
TEST(DecodeSplitGeneric, WithinTheOracleBoundsInF64) {
  std::uint64_t seed = 25;
  for (const DecodeShape& c : cases()) {
    const Case r = make_decode_case(c, Format::f64, LayoutKind::col_major, seed++);
    const Reference ref = reference(r);
    for (extent_t split_len : {1, 7, 256}) {
      std::vector<AnyTensor> out = nan_outputs(r.problem, LayoutKind::row_major);
      kernels::cpu::decode_split_generic<double>(
          r.inputs[0].view<double>(), r.inputs[1].view<double>(), r.inputs[2].view<double>(),
          r.inputs[3].view<std::int64_t>(), r.problem.scale(), out[0].view<double>(),
          out[1].view<double>(), split_len);
      EXPECT_TRUE(
          within_bounds(ref, out, what_of(c, Format::f64) + " split " + std::to_string(split_len)));
    }
  }
}

}  // namespace
}  // namespace moacert::test
