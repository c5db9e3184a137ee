// moacert-simt-c++ puts this directory on the include path: on the host,
// <cuda_fp16.h> is moacert's emulator.
#pragma once
#include "moacert/simt.h"
