// The host entry points of tests/simt/tensor_core_kernels.cu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simt_test {

// D = A B + C by one warp's mma.m16n8k16 (bf16, or f16 inputs): A 16x16 and
// B 16x8 (B[k][n]) row-major b16 bits, C and D 16x8 row-major.
std::vector<float> run_mma(const std::vector<std::uint16_t>& a, const std::vector<std::uint16_t>& b,
                           const std::vector<float>& c, bool f16);
// The registers (lane-major) of ldmatrix .x{count}[.trans] of a 16x16 tile,
// lane l giving row l % 8 of the 8x8 block m = (l / 8) % count, block m
// being rows 8 (m % 2) .., columns 8 (m / 2) ...
std::vector<std::uint32_t> run_ldmatrix(const std::vector<std::uint16_t>& tile, int count,
                                        bool trans);
// D = A B + C (bf16) with A and B staged in shared memory and loaded with ldmatrix.
std::vector<float> run_ldmatrix_mma(const std::vector<std::uint16_t>& a,
                                    const std::vector<std::uint16_t>& b,
                                    const std::vector<float>& c);
// The cp.async pipeline over x (stages of 256 floats), copies of `bytes`
// with .ca, or 16 with .cg: per thread t, the sum over stages of the
// stage's element (4t + 5) mod 256.
std::vector<float> run_async_pipeline(const std::vector<float>& x, int bytes, bool cache_global);
// Launches the planted tensor-core hazard `name`; throws moacert::simt::Hazard.
void run_tensor_core_planted(const std::string& name);

}  // namespace simt_test
