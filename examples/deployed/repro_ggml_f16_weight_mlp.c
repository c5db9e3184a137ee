/* ggml's CPU mul_mat with f16 weights rounds the f32 activation it is
   handed to f16 before the dot products: in a SwiGLU MLP with f16 weights
   (llama.cpp's build_ffn on an F16 GGUF), the activation
   h = silu(x W1) * (x W3), computed in f32, reaches the down projection
   h W2 with 11 significant bits.

   ggml 0.25.1 (commit 0ad4a86), CPU backend, as the npm package
   @node-llama-cpp/linux-x64 3.22.1 ships it.

   Case: one token, Dm = 4, F = 2; x = e_0, so that the gate and up
   arguments are W1's and W3's row 0: gates 8 and 8.0078125, ups 1 and 1,
   so h = (silu(8), silu(8.0078125)) = (7.9973..., 8.0051...); W2's column
   0 is (1, -1), so y_0 = h_0 - h_1 = -0.00783 (the difference of two close
   activations, which a down projection computes whenever its terms
   cancel). Every weight is an f16 value, so the same weights in f32 and in
   f16 hold the same numbers. With f32 weights ggml returns y_0 to f32
   accuracy; with f16 weights h_0 and h_1 are rounded to f16 (steps of
   2^-8 below 8 and 2^-7 above), and y_0 comes out -0.01171875, half as
   large again as the exact value. moacert certify measured the same
   rounding on random inputs (the kernel holds when it declares
   round.h=f16, and fails the standard model; docs/deployed-kernels.md).

   The exact value: the inputs are small dyadic numbers, so x W1 and x W3
   are exact; silu(g) = g / (1 + exp(-g)) is evaluated in long double
   (64-bit significand; glibc's expl is within a few ulps), so the printed
   exact y_0 is correct to about 1e-18 relative, far below the 0.5 shown.

   Build, against the package's libraries (no headers ship with it: the
   declarations below match ggml.h of 0.25.1):
     cc -O2 repro_ggml_f16_weight_mlp.c -o repro -L$DIR -l:libggml-base.so \
        -Wl,-rpath,$DIR -ldl -lm
   where DIR is .../@node-llama-cpp/linux-x64/bins/linux-x64. Run: ./repro
   (CMake builds it as build/examples/deployed/repro_ggml_f16_weight_mlp).
   No moacert code is involved. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ggml.h (0.25.1), the part used */
struct ggml_context;
struct ggml_tensor;
struct ggml_cgraph;
enum ggml_type { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1 };
struct ggml_init_params {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};
const char* ggml_version(void);
const char* ggml_commit(void);
struct ggml_context* ggml_init(struct ggml_init_params params);
void ggml_free(struct ggml_context* ctx);
struct ggml_tensor* ggml_new_tensor_2d(struct ggml_context* ctx, enum ggml_type type, int64_t ne0,
                                       int64_t ne1);
void* ggml_get_data(const struct ggml_tensor* tensor);
struct ggml_tensor* ggml_mul_mat(struct ggml_context* ctx, struct ggml_tensor* a,
                                 struct ggml_tensor* b);
struct ggml_tensor* ggml_swiglu_split(struct ggml_context* ctx, struct ggml_tensor* a,
                                      struct ggml_tensor* b);
struct ggml_cgraph* ggml_new_graph(struct ggml_context* ctx);
void ggml_build_forward_expand(struct ggml_cgraph* cgraph, struct ggml_tensor* tensor);
uint16_t ggml_fp32_to_fp16(float x);

/* ggml-cpu.h: from the CPU backend llama.cpp loads, the libggml-cpu-*.so
   beside libggml-base.so with the highest ggml_backend_score */
typedef int (*compute_fn)(struct ggml_context*, struct ggml_cgraph*, int);
static compute_fn load_cpu_backend(char* variant, size_t len) {
  Dl_info info;
  if (!dladdr((void*)ggml_version, &info)) return NULL;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", info.dli_fname);
  char* slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  DIR* d = opendir(dir);
  if (!d) return NULL;
  void* best = NULL;
  int best_score = 0;
  const struct dirent* e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "libggml-cpu-", 12) != 0) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
    const int s = score ? score() : 0;
    if (s > best_score) {
      if (best) dlclose(best);
      best = h;
      best_score = s;
      snprintf(variant, len, "%s", e->d_name);
    } else {
      dlclose(h);
    }
  }
  closedir(d);
  if (!best) return NULL;
  void (*init)(void) = (void (*)(void))dlsym(best, "ggml_cpu_init");
  if (init) init();
  return (compute_fn)dlsym(best, "ggml_graph_compute_with_ctx");
}

enum { DM = 4, F = 2 };
static const float kGate[F] = {8.0f, 8.0078125f}, kUp[F] = {1.0f, 1.0f}, kDown[F] = {1.0f, -1.0f};

/* a weight of ggml's [K, rows] layout (row r's K elements contiguous) */
static void set(struct ggml_tensor* t, enum ggml_type type, int64_t K, int64_t k, int64_t r,
                float value) {
  if (type == GGML_TYPE_F16)
    ((uint16_t*)ggml_get_data(t))[r * K + k] = ggml_fp32_to_fp16(value);
  else
    ((float*)ggml_get_data(t))[r * K + k] = value;
}

/* y_0 of the MLP with its weights stored as `type` */
static float mlp_y0(compute_fn compute, enum ggml_type type) {
  struct ggml_init_params p = {64 << 20, NULL, false};
  struct ggml_context* ctx = ggml_init(p);
  struct ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, DM, 1);
  struct ggml_tensor* w1 = ggml_new_tensor_2d(ctx, type, DM, F); /* gate: F rows of Dm */
  struct ggml_tensor* w3 = ggml_new_tensor_2d(ctx, type, DM, F); /* up */
  struct ggml_tensor* w2 = ggml_new_tensor_2d(ctx, type, F, DM); /* down: Dm rows of F */
  for (int64_t k = 0; k < DM; ++k) {
    ((float*)ggml_get_data(x))[k] = k == 0 ? 1.0f : 0.0f;
    for (int64_t f = 0; f < F; ++f) {
      set(w1, type, DM, k, f, k == 0 ? kGate[f] : 0.0f);
      set(w3, type, DM, k, f, k == 0 ? kUp[f] : 0.0f);
      set(w2, type, F, f, k, k == 0 ? kDown[f] : 0.0f);
    }
  }
  struct ggml_tensor* h =
      ggml_swiglu_split(ctx, ggml_mul_mat(ctx, w1, x), ggml_mul_mat(ctx, w3, x));
  struct ggml_tensor* y = ggml_mul_mat(ctx, w2, h);
  struct ggml_cgraph* g = ggml_new_graph(ctx);
  ggml_build_forward_expand(g, y);
  compute(ctx, g, 1);
  const float y0 = ((const float*)ggml_get_data(y))[0];
  ggml_free(ctx);
  return y0;
}

static long double silu(long double z) {
  return z / (1 + expl(-z));
}

int main(void) {
  char variant[256] = "";
  compute_fn compute = load_cpu_backend(variant, sizeof variant);
  if (!compute) {
    fprintf(stderr, "no CPU backend found beside libggml-base.so\n");
    return 2;
  }
  long double h[F], exact = 0;
  for (int f = 0; f < F; ++f) {
    h[f] = silu(kGate[f]) * kUp[f];
    exact += h[f] * kDown[f];
  }
  printf("ggml %s (%s), CPU backend %s, 1 thread\n", ggml_version(), ggml_commit(), variant);
  printf("SwiGLU MLP y = (silu(x W1) * (x W3)) W2, one token, Dm = %d, F = %d, x = e_0\n", DM, F);
  printf("gates 8, 8.0078125; ups 1, 1: h = (%.9Lf, %.9Lf); W2 column 0 = (1, -1)\n", h[0], h[1]);
  printf("%-8s  %14s  %14s  %9s\n", "weights", "computed y_0", "exact y_0", "rel. err");
  const float y32 = mlp_y0(compute, GGML_TYPE_F32), y16 = mlp_y0(compute, GGML_TYPE_F16);
  const double err32 = (double)fabsl((y32 - exact) / exact);
  const double err16 = (double)fabsl((y16 - exact) / exact);
  printf("%-8s  %14.9f  %14.9Lf  %9.2g\n", "f32", (double)y32, exact, err32);
  printf("%-8s  %14.9f  %14.9Lf  %9.2g\n", "f16", (double)y16, exact, err16);
  /* f32 weights: the f32 rounding of h alone (about 1e-6 of h, 1e-3 of
     y_0); f16 weights: h rounded to f16 */
  const int wrong = err16 > 0.1 && err32 < 0.01;
  printf(wrong ? "WRONG: with f16 weights the activation h is rounded to f16 before the down "
                 "projection\n"
               : "as exact as f32 allows\n");
  return wrong ? 1 : 0;
}
