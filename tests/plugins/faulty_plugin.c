/* Planted faulty plugins: one correct rmsnorm (f32, row-major), and, by
   compile definition, each way a kernel under test can go wrong. CTest
   (tests/plugins/CMakeLists.txt) checks that moacert reports each as the
   issue states and never crashes or leaves a worker behind.

     FAULT_NONE       correct
     FAULT_SEGV       dereferences a null pointer
     FAULT_HANG       never returns
     FAULT_OOB        writes 4 bytes past its output y
     FAULT_BEFORE     writes 4 bytes before its output y
     FAULT_FAR        writes 4 bytes 200 bytes past the end of y (past the canary slack)
     FAULT_INPUT      writes into its input x (mapped read-only)
     FAULT_WRONG      forgets the normalisation: y = x * w
     FAULT_NAN        writes NaN into y[0] (finite where the input is)
     FAULT_INF        writes +inf into y[0]
     FAULT_ERROR      returns an error with a message
     FAULT_ABORT      calls abort()
     FAULT_ABI        declares ABI version 5 (this moacert speaks 1 to 4)
     FAULT_NOTABLE    returns no table, saying why through moacert_plugin_error
     FAULT_V1         correct, an ABI 1 table (moacert_kernel_v1: no envelope, no device)
     FAULT_V2         correct, an ABI 2 table (moacert_kernel_v2: no arithmetic)
     FAULT_V3         correct, an ABI 3 table (moacert_kernel_v3: no conventions)
     FAULT_ARITHNAME  declares arithmetic "round.P=bf16" (rmsnorm has no P)
     FAULT_ARITHULPS  declares arithmetic "sqrt=-1ulp"
     FAULT_ARITHMODE  declares arithmetic "sum.ss=f8"
     FAULT_REFUSES    envelope D in 1..64; refuses (MOACERT_UNSUPPORTED) an odd D inside it
     FAULT_ENVMINMAX  envelope D with min 9 above max 8
     FAULT_ENVAXIS    envelope of an axis N, which rmsnorm does not have
     FAULT_ENVEMPTY   envelope D in 10..20, a multiple of 32: admits no extent
     FAULT_ENVDEVICE  device "tpu"
     FAULT_NORUNTIME  device "cuda", in a library that links no CUDA runtime
     FAULT_NOSYMBOL   exports no moacert_plugin_kernels
     FAULT_SEVERAL    two kernel names (needs #NAME)
     FAULT_BADOP      an unknown op
     FAULT_BADDTYPE   an unknown dtype
     FAULT_CTOR       crashes in its constructor, while loading
     FAULT_FORK       correct, but leaves a child process running
     FAULT_LATE       wrong (as FAULT_WRONG) on a few shapes alone, (31 T + D) % 17 == 3:
                      first reached by a random case past the first few
                      (tests/mpi: a counterexample on rank 1)
     FAULT_STALE_W    keeps w in a cache from call to call, refreshed only when a call
                      is wider than every call before: right alone, wrong after a
                      wider (or as wide) call with other weights (docs/design.md#certify,
                      a failure that depends on earlier calls)
     FAULT_CACHED_W   correct: the same cache, refreshed on every call
     FAULT_FIXED_ROWS writes the first 1024 rows of y only, as a kernel whose grid is
                      fixed at 1024 rows (a deployed prefill has up to 131072): right
                      below 1025 rows (docs/design.md#deployment-envelope) */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <moacert/plugin.h>

static int rmsnorm(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                   const char* params, char* err, size_t err_len) {
  (void)n_in;
  (void)n_out;
  const DLTensor *x = in[0], *w = in[1];
  const float *xd = (const float*)x->data, *wd = (const float*)w->data;
  float* yd = (float*)out[0]->data;
  const int64_t T = x->shape[0], D = x->shape[1];
  const char* at = strstr(params, "\"eps\":");
  const double eps = at ? strtod(at + 6, NULL) : 1e-6;
  (void)eps;
  (void)err;
  (void)err_len;
#if defined(FAULT_SEGV)
  *(volatile int*)(uintptr_t)8 = 1;
#elif defined(FAULT_HANG)
  for (;;) pause();
#elif defined(FAULT_ERROR)
  snprintf(err, err_len, "planted error: this kernel refuses every case");
  return 3;
#elif defined(FAULT_ABORT)
  abort();
#elif defined(FAULT_REFUSES)
  if (D % 2 == 1) {
    snprintf(err, err_len, "planted refusal: odd D = %lld", (long long)D);
    return MOACERT_UNSUPPORTED;
  }
#elif defined(FAULT_FORK)
  if (fork() == 0)
    for (;;) pause(); /* a child that would outlive everyone */
#elif defined(FAULT_INPUT)
  ((float*)(uintptr_t)xd)[0] = 0;
#endif
#if defined(FAULT_STALE_W) || defined(FAULT_CACHED_W)
  static float* cached_w = NULL; /* (cached_D), the widest call's */
  static int64_t cached_D = 0;
  if (D > cached_D) {
    float* grown = (float*)realloc(cached_w, (size_t)D * sizeof(float));
    if (!grown) {
      snprintf(err, err_len, "cannot grow the weight cache to %lld floats", (long long)D);
      return 1;
    }
    cached_w = grown;
    cached_D = D;
    memcpy(cached_w, wd, (size_t)D * sizeof(float));
  }
#if defined(FAULT_CACHED_W)
  else {
    memcpy(cached_w, wd, (size_t)D * sizeof(float));
  }
#endif
  wd = cached_w; /* FAULT_STALE_W, planted: another call's weights after a wider one */
#endif
#if defined(FAULT_FIXED_ROWS)
  const int64_t rows = T < 1024 ? T : 1024; /* planted: rows past 1024 never written */
#else
  const int64_t rows = T;
#endif
  for (int64_t t = 0; t < rows; ++t) {
    double ss = 0;
    for (int64_t d = 0; d < D; ++d) ss += (double)xd[t * D + d] * xd[t * D + d];
#if defined(FAULT_WRONG)
    const double r = 1;
#elif defined(FAULT_LATE)
    const double r = (31 * T + D) % 17 == 3 ? 1 : 1 / sqrt(ss / (double)D + eps);
#else
    const double r = 1 / sqrt(ss / (double)D + eps);
#endif
    for (int64_t d = 0; d < D; ++d) yd[t * D + d] = (float)(xd[t * D + d] * r * wd[d]);
  }
#if defined(FAULT_NAN)
  yd[0] = NAN;
#elif defined(FAULT_INF)
  yd[0] = INFINITY;
#endif
#if defined(FAULT_OOB)
  memset(yd + T * D, 0, 4); /* 4 bytes past y */
#elif defined(FAULT_FAR)
  memset((char*)(yd + T * D) + 200, 0, 4); /* bytes 201..204 past y */
#elif defined(FAULT_BEFORE)
  memset((char*)yd - 4, 0, 4); /* 4 bytes before y */
#endif
  return 0;
}

#if defined(FAULT_CTOR)
__attribute__((constructor)) static void crash_on_load(void) {
  raise(SIGSEGV);
}
#endif

#if defined(FAULT_V1)
static const moacert_kernel_v1 kernels[] = {{"rmsnorm", "planted", "f32", 0, rmsnorm}};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = 1;
  return (const moacert_kernel*)kernels;
}
#elif defined(FAULT_V2)
static const moacert_kernel_v2 kernels[] = {{"rmsnorm", "planted", "f32", 0, rmsnorm, NULL, "cpu"},
                                            {"rmsnorm", "planted", "f64", 0, rmsnorm, NULL, "cpu"}};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  /* two entries: the second, read at ABI 3's stride, would be garbage */
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = 2;
  return (const moacert_kernel*)kernels;
}
#elif defined(FAULT_V3)
static const moacert_kernel_v3 kernels[] = {
    {"rmsnorm", "planted", "f32", 0, rmsnorm, NULL, "cpu", "standard"},
    {"rmsnorm", "planted", "f64", 0, rmsnorm, NULL, "cpu", NULL}};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  /* two entries: the second, read at ABI 4's stride, would be garbage */
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = 3;
  return (const moacert_kernel*)kernels;
}
#elif !defined(FAULT_NOSYMBOL)
#if defined(FAULT_REFUSES)
static const moacert_axis axes[] = {{"D", 1, 64, NULL, 0, 0}};
#elif defined(FAULT_ENVMINMAX)
static const moacert_axis axes[] = {{"D", 9, 8, NULL, 0, 0}};
#elif defined(FAULT_ENVAXIS)
static const moacert_axis axes[] = {{"N", 1, 64, NULL, 0, 0}};
#elif defined(FAULT_ENVEMPTY)
static const moacert_axis axes[] = {{"D", 10, 20, NULL, 0, 32}};
#else
static const moacert_axis axes[] = {{"D", 0, 0, NULL, 0, 0}}; /* D free: any problem */
#endif
static const moacert_envelope envelope = {axes, 1, 0};
#if defined(FAULT_ARITHNAME)
#define ARITHMETIC "round.P=bf16"
#elif defined(FAULT_ARITHULPS)
#define ARITHMETIC "sqrt=-1ulp"
#elif defined(FAULT_ARITHMODE)
#define ARITHMETIC "sum.ss=f8"
#else
#define ARITHMETIC NULL
#endif
#if defined(FAULT_ENVDEVICE)
#define DEVICE "tpu"
#elif defined(FAULT_NORUNTIME)
#define DEVICE "cuda"
#else
#define DEVICE "cpu"
#endif
static const moacert_kernel kernels[] = {
#if defined(FAULT_BADOP)
    {"rmsnormm", "planted", "f32", 0, rmsnorm, &envelope, DEVICE},
#elif defined(FAULT_BADDTYPE)
    {"rmsnorm", "planted", "f8", 0, rmsnorm, &envelope, DEVICE},
#else
    {"rmsnorm", "planted", "f32", 0, rmsnorm, &envelope, DEVICE, ARITHMETIC},
#endif
#if defined(FAULT_SEVERAL)
    {"rmsnorm", "other", "f32", 0, rmsnorm, NULL, NULL},
#endif
};

#if defined(FAULT_NOTABLE)
const char* moacert_plugin_error(void) {
  return "libplanted.so: version 0.1 found, 0.2 required";
}
#endif

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
#if defined(FAULT_NOTABLE)
  *count = -1;
  *abi_version = MOACERT_PLUGIN_ABI;
  return NULL;
#endif
#if defined(FAULT_ABI)
  *abi_version = 5;
#else
  *abi_version = MOACERT_PLUGIN_ABI;
#endif
  return kernels;
}
#else
/* The kernel is there, but not the table moacert looks for. */
void* not_a_moacert_plugin(void) {
  return (void*)rmsnorm;
}
#endif
