/* The few declarations of ggml's C API the adapter uses. The npm package
   @node-llama-cpp/linux-x64 3.22.1 ships ggml's libraries (libggml-base.so,
   libggml-cpu-<cpu>.so) without headers; these match ggml 0.25.1 (commit
   0ad4a86, what ggml_version() and ggml_commit() of that package return),
   checked against ggml's public headers (ggml/include/ggml.h,
   ggml-cpu.h) of that release: the enums' values, ggml_init_params' layout
   and each function's signature. The adapter checks ggml_version() when it
   loads and refuses any other version (an ABI it has not been checked
   against). ggml_tensor stays opaque: its data is reached through
   ggml_get_data, never through the struct's layout. */
#ifndef MOACERT_GGML_DECLS_H
#define MOACERT_GGML_DECLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOACERT_GGML_VERSION "0.25.1"

struct ggml_context;
struct ggml_tensor;
struct ggml_cgraph;

enum ggml_type { GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1 };
enum ggml_prec { GGML_PREC_DEFAULT = 0, GGML_PREC_F32 = 10 };
enum ggml_status { GGML_STATUS_SUCCESS = 0 };

struct ggml_init_params {
  size_t mem_size;  /* bytes */
  void* mem_buffer; /* NULL: ggml allocates it */
  bool no_alloc;
};

/* libggml-base.so */
const char* ggml_version(void);
const char* ggml_commit(void);
struct ggml_context* ggml_init(struct ggml_init_params params);
void ggml_free(struct ggml_context* ctx);
size_t ggml_tensor_overhead(void);
size_t ggml_graph_overhead(void);
struct ggml_tensor* ggml_new_tensor_1d(struct ggml_context* ctx, enum ggml_type type, int64_t ne0);
struct ggml_tensor* ggml_new_tensor_2d(struct ggml_context* ctx, enum ggml_type type, int64_t ne0,
                                       int64_t ne1);
struct ggml_tensor* ggml_new_tensor_4d(struct ggml_context* ctx, enum ggml_type type, int64_t ne0,
                                       int64_t ne1, int64_t ne2, int64_t ne3);
void* ggml_get_data(const struct ggml_tensor* tensor);
size_t ggml_nbytes(const struct ggml_tensor* tensor);
/* q [D, N, H, B], k and v [D, M, Hkv, B], mask [M, N, 1 or H, 1 or B] f16
   (0 or -inf) or NULL; the result is [D, H, N, B] */
struct ggml_tensor* ggml_flash_attn_ext(struct ggml_context* ctx, struct ggml_tensor* q,
                                        struct ggml_tensor* k, struct ggml_tensor* v,
                                        struct ggml_tensor* mask, float scale, float max_bias,
                                        float logit_softcap);
void ggml_flash_attn_ext_set_prec(struct ggml_tensor* a, enum ggml_prec prec);
struct ggml_tensor* ggml_rms_norm(struct ggml_context* ctx, struct ggml_tensor* a, float eps);
struct ggml_tensor* ggml_mul(struct ggml_context* ctx, struct ggml_tensor* a,
                             struct ggml_tensor* b);
/* a [K, M], b [K, N] -> [M, N]: rows of a against rows of b */
struct ggml_tensor* ggml_mul_mat(struct ggml_context* ctx, struct ggml_tensor* a,
                                 struct ggml_tensor* b);
/* silu(a) * b */
struct ggml_tensor* ggml_swiglu_split(struct ggml_context* ctx, struct ggml_tensor* a,
                                      struct ggml_tensor* b);
struct ggml_cgraph* ggml_new_graph(struct ggml_context* ctx);
void ggml_build_forward_expand(struct ggml_cgraph* cgraph, struct ggml_tensor* tensor);

/* libggml-cpu-<cpu>.so, loaded by name (ggml_runtime.c): every variant
   exports the same three */
typedef int (*ggml_backend_score_fn)(void);
typedef void (*ggml_cpu_init_fn)(void);
typedef enum ggml_status (*ggml_graph_compute_with_ctx_fn)(struct ggml_context* ctx,
                                                           struct ggml_cgraph* cgraph,
                                                           int n_threads);

#ifdef __cplusplus
}
#endif

#endif
