// The host entry points of bench/simt_kernels.cu.
#pragma once

#include <vector>

namespace simt_bench {

void gemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c, int n);
void softmax(const std::vector<float>& x, std::vector<float>& y, int rows, int len);
void barriers(int threads, int rounds);

}  // namespace simt_bench
