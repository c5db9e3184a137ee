// The thread-count rule of every CPU kernel: RunOptions::threads when it is
// positive, else the OpenMP default. Cost functions ask it with 0 for the
// scratch of a default run.
#pragma once

#include <omp.h>

namespace moacert::kernels::cpu {

// @post result >= 1
inline int thread_count(int requested) {
  return requested > 0 ? requested : omp_get_max_threads();
}

}  // namespace moacert::kernels::cpu
