// rmsnorm, cpu.fused, within the oracle's a priori bounds of each case
// (docs/bounds.md#rmsnorm), and bitwise the same with 1 and 2 threads.
#include <gtest/gtest.h>

#include "tests/support/harness.hpp"

namespace moacert::test {
namespace {

KernelCase rms(extent_t T, extent_t D, double eps, LayoutKind layout) {
  Problem p{.op = Op::rmsnorm, .dims = {.D = D, .T = T}, .params = {.eps = eps}};
  return {"T" + std::to_string(T) + "_D" + std::to_string(D), p, layout};
}

const KernelCase kCases[] = {
    rms(13, 37, 1e-6, LayoutKind::row_major),  // D not a multiple of any vector
    rms(8, 64, 1e-5, LayoutKind::col_major),
    rms(5, 1, 0.5, LayoutKind::permuted),  // one column: y = x / sqrt(x² + eps) w
    rms(70, 130, 0.0, LayoutKind::padded),
};

class RmsnormFused : public ::testing::TestWithParam<KernelParam> {};

TEST_P(RmsnormFused, WithinTheOracleBoundsAndDeterministic) {
  expect_sound(variant(Op::rmsnorm, "cpu.fused"), GetParam(), 31);
}

INSTANTIATE_TEST_SUITE_P(Cases, RmsnormFused,
                         ::testing::Combine(::testing::Values(Format::f64, Format::f32),
                                            ::testing::ValuesIn(kCases)),
                         kernel_case_name);

}  // namespace
}  // namespace moacert::test
