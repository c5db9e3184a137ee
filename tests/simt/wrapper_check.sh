#!/bin/sh
# wrapper_check.sh WRAPPER MOACERT SOURCE DIR: `moacert-simt-c++ -shared
# -fPIC SOURCE -o LIB` is the whole command for a plugin that certifies;
# and what the host emulator cannot run (inline PTX, tensor cores,
# cooperative groups) is refused at compile time with a message.
set -u
wrapper=$1 moacert=$2 source=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

"$wrapper" -shared -fPIC "$source" -o "$dir/libattention.so" || fail "the wrapper did not build $source"
"$moacert" certify attention.fwd --plugin "$dir/libattention.so#attention_cuda" --dtype f32 \
  --cases 5 --seed 3 --out "$dir/cert" || fail "the wrapper's plugin does not certify"

refused() {  # refused NAME MESSAGE-REGEX: the source on stdin must not compile
  cat > "$dir/$1.cu"
  if "$wrapper" -shared -fPIC "$dir/$1.cu" -o "$dir/$1.so" > "$dir/$1.log" 2>&1; then
    fail "$1 compiled"
  fi
  grep -Eq "$2" "$dir/$1.log" || { cat "$dir/$1.log"; fail "$1: no message matching '$2'"; }
  echo "ok: $1 refused"
}
refused inline_ptx 'poisoned "asm"' <<'CU'
#include "moacert/simt.h"
__global__ void k(int* x) { asm("mov.u32 %0, %%laneid;" : "=r"(*x)); }
CU
refused wmma 'tensor-core intrinsics \(wmma/mma\) cannot run on the host emulator' <<'CU'
#include "moacert/simt.h"
__global__ void k() {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, float, nvcuda::wmma::row_major> f;
  (void)f;
}
CU
refused mma_header 'cannot run on the host emulator' <<'CU'
#include <mma.h>
CU
refused cooperative_groups 'cannot run on the host emulator' <<'CU'
#include <cooperative_groups.h>
CU
# A runtime call the emulator lacks: one line naming it, at build time.
refused missing_runtime_call 'cudaMallocManaged.{1,3} was not declared' <<'CU'
#include <cuda_runtime.h>
void f(void** p) { cudaMallocManaged(p, 4); }
CU
echo "ok: the wrapper builds a certifying plugin and refuses what it cannot emulate"
