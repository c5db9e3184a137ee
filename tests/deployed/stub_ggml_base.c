/* A stand-in for ggml's libggml-base.so, put first on LD_LIBRARY_PATH by
   CTest (tests/deployed/CMakeLists.txt) to show the ggml adapter refusing a
   library it was not built for, with one line: STUB_VERSION is the version
   it claims; beside it there is no libggml-cpu-*.so. Every function the
   adapter links is defined; none but ggml_version and ggml_commit is ever
   called, since the adapter stops at its version check or at the missing
   CPU backend. */
#include <stddef.h>
#include <stdint.h>

#include "../../adapters/ggml/ggml_decls.h"

const char* ggml_version(void) {
  return STUB_VERSION;
}
const char* ggml_commit(void) {
  return "stub";
}
struct ggml_context* ggml_init(struct ggml_init_params params) {
  (void)params;
  return NULL;
}
void ggml_free(struct ggml_context* ctx) {
  (void)ctx;
}
size_t ggml_tensor_overhead(void) {
  return 0;
}
size_t ggml_graph_overhead(void) {
  return 0;
}
struct ggml_tensor* ggml_new_tensor_1d(struct ggml_context* c, enum ggml_type t, int64_t a) {
  (void)c, (void)t, (void)a;
  return NULL;
}
struct ggml_tensor* ggml_new_tensor_2d(struct ggml_context* c, enum ggml_type t, int64_t a,
                                       int64_t b) {
  (void)c, (void)t, (void)a, (void)b;
  return NULL;
}
struct ggml_tensor* ggml_new_tensor_4d(struct ggml_context* c, enum ggml_type t, int64_t a,
                                       int64_t b, int64_t d, int64_t e) {
  (void)c, (void)t, (void)a, (void)b, (void)d, (void)e;
  return NULL;
}
void* ggml_get_data(const struct ggml_tensor* t) {
  (void)t;
  return NULL;
}
size_t ggml_nbytes(const struct ggml_tensor* t) {
  (void)t;
  return 0;
}
struct ggml_tensor* ggml_flash_attn_ext(struct ggml_context* c, struct ggml_tensor* q,
                                        struct ggml_tensor* k, struct ggml_tensor* v,
                                        struct ggml_tensor* m, float s, float b, float l) {
  (void)c, (void)q, (void)k, (void)v, (void)m, (void)s, (void)b, (void)l;
  return NULL;
}
void ggml_flash_attn_ext_set_prec(struct ggml_tensor* a, enum ggml_prec p) {
  (void)a, (void)p;
}
struct ggml_tensor* ggml_rms_norm(struct ggml_context* c, struct ggml_tensor* a, float e) {
  (void)c, (void)a, (void)e;
  return NULL;
}
struct ggml_tensor* ggml_mul(struct ggml_context* c, struct ggml_tensor* a, struct ggml_tensor* b) {
  (void)c, (void)a, (void)b;
  return NULL;
}
struct ggml_tensor* ggml_mul_mat(struct ggml_context* c, struct ggml_tensor* a,
                                 struct ggml_tensor* b) {
  (void)c, (void)a, (void)b;
  return NULL;
}
struct ggml_tensor* ggml_swiglu_split(struct ggml_context* c, struct ggml_tensor* a,
                                      struct ggml_tensor* b) {
  (void)c, (void)a, (void)b;
  return NULL;
}
struct ggml_cgraph* ggml_new_graph(struct ggml_context* c) {
  (void)c;
  return NULL;
}
void ggml_build_forward_expand(struct ggml_cgraph* g, struct ggml_tensor* t) {
  (void)g, (void)t;
}
