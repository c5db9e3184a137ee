// Launches the planted stack overflow (tests/simt/kernels.cu, stack_hog):
// the process dies of SIGSEGV, after the emulator's handler printed which
// kernel, block and thread overflowed (checked by stack_overflow_check.sh).
#define MOACERT_SIMT_UNINSTRUMENTED 1
#include "moacert/simt.h"
#include "tests/simt/kernels.hpp"

int main() {
  simt_test::run_planted("stack_overflow");
  return 0;  // not reached
}
