/* ggml loaded and run as llama.cpp's CPU backend runs it: libggml-base.so
   is linked (its directory in the adapter's rpath); the CPU backend is one
   of several builds of libggml-cpu (one per x86 feature level), of which
   llama.cpp loads the one whose ggml_backend_score is highest on this CPU
   (ggml_backend_load_best). The adapter does the same, by dlopen, so that
   the kernel certified is the one llama.cpp runs here. */
#define _GNU_SOURCE
#include "ggml_runtime.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/adapter_tensors.h"

static ggml_graph_compute_with_ctx_fn g_compute;
static char g_variant[64];

static int fail(char* err, size_t err_len, const char* message) {
  snprintf(err, err_len, "%s", message);
  return -1;
}

int ggml_runtime_open(char* err, size_t err_len) {
  if (g_compute) return 0;
  if (strcmp(ggml_version(), MOACERT_GGML_VERSION) != 0) {
    snprintf(err, err_len,
             "ggml: libggml-base.so is ggml %s, the adapter is built for ggml %s "
             "(@node-llama-cpp/linux-x64 3.22.1; bash scripts/setup-deployed.sh)",
             ggml_version(), MOACERT_GGML_VERSION);
    return -1;
  }
  Dl_info info;
  if (!dladdr((void*)ggml_version, &info) || !info.dli_fname)
    return fail(err, err_len, "ggml: cannot find the folder of libggml-base.so");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", info.dli_fname);
  char* slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  DIR* d = opendir(dir);
  if (!d) return fail(err, err_len, "ggml: cannot read the folder of libggml-base.so");
  void* best = NULL;
  int best_score = 0;
  const struct dirent* e;
  while ((e = readdir(d))) {
    const char* name = e->d_name;
    const size_t n = strlen(name);
    if (strncmp(name, "libggml-cpu-", 12) != 0 || n < 16 || strcmp(name + n - 3, ".so") != 0)
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    ggml_backend_score_fn score = (ggml_backend_score_fn)dlsym(h, "ggml_backend_score");
    const int s = score ? score() : 0;
    if (s > best_score && dlsym(h, "ggml_graph_compute_with_ctx")) {
      if (best) dlclose(best);
      best = h;
      best_score = s;
      snprintf(g_variant, sizeof g_variant, "%.*s", (int)(n - 15), name + 12);
    } else {
      dlclose(h);
    }
  }
  closedir(d);
  if (!best)
    return fail(err, err_len,
                "ggml: no libggml-cpu-*.so beside libggml-base.so supports this CPU "
                "(the package's CPU backends are missing)");
  ggml_cpu_init_fn init = (ggml_cpu_init_fn)dlsym(best, "ggml_cpu_init");
  if (init) init();
  g_compute = (ggml_graph_compute_with_ctx_fn)dlsym(best, "ggml_graph_compute_with_ctx");
  return 0;
}

const char* ggml_runtime_cpu_variant(void) {
  return g_variant;
}

/* The contexts' memory, kept from call to call and grown when a call needs
   more: llama.cpp allocates its buffers once, so a call should not pay for
   fresh pages (page faults over the tensors cost more than rmsnorm
   itself). One context at a time lives in it (each kernel frees its
   context before returning). */
static void* g_buffer;
static size_t g_buffer_size;

struct ggml_context* ggml_runtime_context(size_t tensor_bytes, int n_tensors) {
  /* the CPU backend's work buffer comes from the context too: at most a
     copy of the inputs converted (an f32 activation to f16 against f16
     weights) and a few rows per thread */
  const size_t work = tensor_bytes + (size_t)adapter_threads() * (4u << 20);
  const size_t size = tensor_bytes + (size_t)(n_tensors + 8) * ggml_tensor_overhead() +
                      ggml_graph_overhead() + work + (1u << 20);
  if (size > g_buffer_size) {
    free(g_buffer);
    g_buffer = malloc(size);
    g_buffer_size = g_buffer ? size : 0;
    if (!g_buffer) return NULL;
  }
  struct ggml_init_params p = {size, g_buffer, false};
  return ggml_init(p);
}

int ggml_runtime_compute(struct ggml_context* ctx, struct ggml_tensor* out, char* err,
                         size_t err_len) {
  struct ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, out);
  const enum ggml_status s = g_compute(ctx, graph, adapter_threads());
  if (s != GGML_STATUS_SUCCESS) {
    snprintf(err, err_len, "ggml_graph_compute_with_ctx returned %d", (int)s);
    return 1;
  }
  return 0;
}
