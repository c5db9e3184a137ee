/* ggml's CPU flash attention with an f16 KV cache accumulates the weighted
   value sum in f16 on its one-row path, even with GGML_PREC_F32.

   ggml 0.25.1 (commit 0ad4a86), CPU backend, as the npm package
   @node-llama-cpp/linux-x64 3.22.1 ships it (llama.cpp's default
   configuration: f32 Q, f16 K and V cache, f32 output, one query row per
   sequence: every decode step).

   Case: one query row, M keys, all scores equal (q = 0), V = 1
   everywhere. The exact output is o = sum_j p_j v_j = 1 for every M.
   ggml_flash_attn_ext returns o = 1 up to M = 2048 and 2048 / M beyond:
   the f16 running sum of the values stops at 2048 (2048 + 1 rounds back to
   2048 in f16), while the softmax denominator, kept in f32, keeps growing.
   At M = 4096, o = 0.5. The same rounding, spread over ordinary rows of
   near-equal scores and same-sign values, is what moacert certify reports
   against the f16 cache (docs/deployed-kernels.md).

   Build, against the package's libraries (no headers ship with it: the
   declarations below match ggml.h of 0.25.1):
     cc -O2 repro_ggml_f16_value_sum.c -o repro -L$DIR -l:libggml-base.so \
        -Wl,-rpath,$DIR -ldl
   where DIR is .../@node-llama-cpp/linux-x64/bins/linux-x64. Run: ./repro
   (CMake builds it as build/examples/deployed/repro_ggml_f16_value_sum).
   No moacert code is involved. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ggml.h (0.25.1), the part used */
struct ggml_context;
struct ggml_tensor;
struct ggml_cgraph;
enum ggml_type { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1 };
enum ggml_prec { GGML_PREC_DEFAULT = 0, GGML_PREC_F32 = 10 };
struct ggml_init_params {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};
const char* ggml_version(void);
const char* ggml_commit(void);
struct ggml_context* ggml_init(struct ggml_init_params params);
void ggml_free(struct ggml_context* ctx);
struct ggml_tensor* ggml_new_tensor_4d(struct ggml_context* ctx, enum ggml_type type, int64_t ne0,
                                       int64_t ne1, int64_t ne2, int64_t ne3);
void* ggml_get_data(const struct ggml_tensor* tensor);
struct ggml_tensor* ggml_flash_attn_ext(struct ggml_context* ctx, struct ggml_tensor* q,
                                        struct ggml_tensor* k, struct ggml_tensor* v,
                                        struct ggml_tensor* mask, float scale, float max_bias,
                                        float logit_softcap);
void ggml_flash_attn_ext_set_prec(struct ggml_tensor* a, enum ggml_prec prec);
struct ggml_cgraph* ggml_new_graph(struct ggml_context* ctx);
void ggml_build_forward_expand(struct ggml_cgraph* cgraph, struct ggml_tensor* tensor);
float ggml_fp16_to_fp32(uint16_t x);
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

int main(void) {
  char variant[256] = "";
  compute_fn compute = load_cpu_backend(variant, sizeof variant);
  if (!compute) {
    fprintf(stderr, "no CPU backend found beside libggml-base.so\n");
    return 2;
  }
  printf("ggml %s (%s), CPU backend %s, 1 thread\n", ggml_version(), ggml_commit(), variant);
  printf("one query row, D = 64, q = 0 (all scores equal), K = 0 and V = 1 in the f16 cache\n");
  printf("%8s  %12s  %6s\n", "M", "computed o", "exact");
  const int64_t D = 64;
  const int64_t sizes[] = {1024, 2048, 2049, 3000, 4096, 8192, 16384};
  int wrong = 0;
  for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; ++c) {
    const int64_t M = sizes[c];
    struct ggml_init_params p = {(size_t)(M * D * 4 + (64 << 20)), NULL, false};
    struct ggml_context* ctx = ggml_init(p);
    struct ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, 1, 1, 1);
    struct ggml_tensor* k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, M, 1, 1);
    struct ggml_tensor* v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, D, M, 1, 1);
    memset(ggml_get_data(q), 0, sizeof(float) * (size_t)D);
    memset(ggml_get_data(k), 0, sizeof(uint16_t) * (size_t)(D * M));
    uint16_t* vd = (uint16_t*)ggml_get_data(v);
    for (int64_t i = 0; i < D * M; ++i) vd[i] = ggml_fp32_to_fp16(1.0f);
    struct ggml_tensor* o = ggml_flash_attn_ext(ctx, q, k, v, NULL, 0.125f, 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(o, GGML_PREC_F32);
    struct ggml_cgraph* g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, o);
    compute(ctx, g, 1);
    const float computed = ((const float*)ggml_get_data(o))[0];
    printf("%8lld  %12.6f  %6.1f\n", (long long)M, (double)computed, 1.0);
    wrong += computed != 1.0f;
    ggml_free(ctx);
  }
  printf(wrong ? "WRONG: the f16 value sum stops growing past 2048 keys\n" : "all exact\n");
  return wrong ? 1 : 0;
}
