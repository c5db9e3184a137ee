// The host entry points of bench/simt_kernels.cu.
#pragma once

#include <vector>

namespace simt_bench {

void barriers(int threads, int rounds);

}  // namespace simt_bench
