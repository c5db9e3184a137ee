// block, cpu.composed, within the oracle's a priori bounds of each case
// (docs/bounds.md#block), and bitwise the same with 1 and 2 threads.
#include <gtest/gtest.h>

#include "tests/support/harness.hpp"

namespace moacert::test {
namespace {

KernelCase block(extent_t B, extent_t N, extent_t Dm, extent_t H, extent_t Hkv, extent_t D,
                 extent_t F, LayoutKind layout) {
  Problem p{.op = Op::block,
            .dims = {.B = B, .H = H, .Hkv = Hkv, .N = N, .M = N, .D = D, .Dm = Dm, .F = F},
            .params = {.eps = 1e-6}};
  return {"B" + std::to_string(B) + "_N" + std::to_string(N) + "_Dm" + std::to_string(Dm) + "_H" +
              std::to_string(H) + "_Hkv" + std::to_string(Hkv),
          p, layout};
}

const KernelCase kCases[] = {
    block(2, 9, 16, 4, 2, 4, 24, LayoutKind::row_major),  // GQA
    block(1, 70, 12, 2, 1, 6, 10, LayoutKind::permuted),  // MQA, N past one query block (64)
    block(1, 5, 8, 2, 2, 4, 7, LayoutKind::padded),
    block(2, 3, 6, 3, 1, 2, 5, LayoutKind::col_major),
};

class BlockComposed : public ::testing::TestWithParam<KernelParam> {};

TEST_P(BlockComposed, WithinTheOracleBoundsAndDeterministic) {
  expect_sound(variant(Op::block, "cpu.composed"), GetParam(), 51);
}

INSTANTIATE_TEST_SUITE_P(Cases, BlockComposed,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kCases)),
                         kernel_case_name);

}  // namespace
}  // namespace moacert::test
