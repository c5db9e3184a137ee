// moacert-simt-c++ puts this directory on the include path: on the host,
// <mma.h> is refused with a message rather than "no such file".
#error "moacert simt: <mma.h> (tensor cores / cooperative groups) cannot run on the host emulator; use moacert/simt.h's __syncthreads, *_sync warp functions and atomics"
