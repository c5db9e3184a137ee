// mlp.swiglu, cpu.tiled, within the oracle's a priori bounds of each case
// (docs/bounds.md), and bitwise the same with 1 and 2 threads.
#include <gtest/gtest.h>

#include "tests/support/harness.hpp"

namespace moacert::test {
namespace {

KernelCase mlp(extent_t T, extent_t Dm, extent_t F, LayoutKind layout) {
  Problem p{.op = Op::mlp_swiglu, .dims = {.T = T, .Dm = Dm, .F = F}};
  return {"T" + std::to_string(T) + "_Dm" + std::to_string(Dm) + "_F" + std::to_string(F), p,
          layout};
}

const KernelCase kCases[] = {
    mlp(13, 17, 29, LayoutKind::row_major),  // edges in every micro-tile direction
    mlp(7, 3, 5, LayoutKind::col_major),
    mlp(150, 40, 70, LayoutKind::permuted),  // more rows than one packed A block (144)
    mlp(9, 300, 20, LayoutKind::padded),     // two k-blocks (256): silu on the last only
};

class MlpTiled : public ::testing::TestWithParam<KernelParam> {};

TEST_P(MlpTiled, WithinTheOracleBoundsAndDeterministic) {
  expect_sound(variant(Op::mlp_swiglu, "cpu.tiled"), GetParam(), 41);
}

INSTANTIATE_TEST_SUITE_P(Cases, MlpTiled,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kCases)),
                         kernel_case_name);

}  // namespace
}  // namespace moacert::test
