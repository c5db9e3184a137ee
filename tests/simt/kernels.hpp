// The host entry points of tests/simt/kernels.cu.
#pragma once

#include <string>
#include <vector>

namespace simt_test {

std::vector<float> run_block_sum(const std::vector<float>& x, int threads);
std::vector<float> run_gemm(const std::vector<float>& a, const std::vector<float>& b, int n);
std::vector<float> run_softmax(const std::vector<float>& x, int rows, int len);
std::vector<unsigned> run_histogram(const std::vector<int>& values);
// Launches the planted hazard or bad launch `name`; throws moacert::simt::Hazard.
void run_planted(const std::string& name);
// The planted device-memory faults' correct twins (read_one in bounds, aligned
// float4 loads global and shared, enough dynamic shared memory), their results:
// {1, 1, 4, 32}.
std::vector<float> run_strict_twins();

}  // namespace simt_test
