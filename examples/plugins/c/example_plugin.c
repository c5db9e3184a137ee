/* An example moacert plugin in C: rmsnorm and attention.fwd in f32 and
   f64, straightforward loops that honour any strides (docs/plugins.md).

   Build (any C compiler; the header is include/moacert/plugin.h, DLPack's
   from libdlpack-dev):

     cc -O2 -fPIC -shared -I/path/to/moacert/include example_plugin.c \
        -o libmoacert_example.so -lm

   Certify (a library with several kernel names needs #NAME):

     moacert certify rmsnorm --plugin ./libmoacert_example.so#rmsnorm --dtype f32
     moacert certify attention.fwd --plugin ./libmoacert_example.so#attention --dtype f64

   CTest builds it and certifies both kernels in both formats
   (examples/plugins/CMakeLists.txt). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

/* Element (i, j, ...) of a strided tensor: strides are in elements. */
#define AT2(T, t, i, j) (((T*)(t)->data)[(i) * (t)->strides[0] + (j) * (t)->strides[1]])
#define AT1(T, t, i) (((T*)(t)->data)[(i) * (t)->strides[0]])
#define AT3(T, t, a, b, c) \
  (((T*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1] + (c) * (t)->strides[2]])
#define AT4(T, t, a, b, c, d)                                                              \
  (((T*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1] + (c) * (t)->strides[2] + \
                   (d) * (t)->strides[3]])

/* rmsnorm: y = x / sqrt(mean(x^2) + eps) * w, accumulated in double. */
#define RMSNORM(T)                                                                             \
  static int rmsnorm_##T(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
                         const char* params, char* err, size_t err_len) {                      \
    if (n_in != 2 || n_out != 1) {                                                             \
      snprintf(err, err_len, "rmsnorm: expected 2 inputs and 1 output");                       \
      return 1;                                                                                \
    }                                                                                          \
    const DLTensor *x = in[0], *w = in[1];                                                     \
    DLTensor* y = out[0];                                                                      \
    const int64_t T_ = x->shape[0], D = x->shape[1];                                           \
    const double eps = moacert_param(params, "eps", 1e-6);                                     \
    for (int64_t t = 0; t < T_; ++t) {                                                         \
      double ss = 0;                                                                           \
      for (int64_t d = 0; d < D; ++d) {                                                        \
        const double v = AT2(T, x, t, d);                                                      \
        ss += v * v;                                                                           \
      }                                                                                        \
      const double r = 1 / sqrt(ss / (double)D + eps);                                         \
      for (int64_t d = 0; d < D; ++d)                                                          \
        AT2(T, y, t, d) = (T)((double)AT2(T, x, t, d) * r * (double)AT1(T, w, d));             \
    }                                                                                          \
    return 0;                                                                                  \
  }

/* attention.fwd: o = softmax(scale q k^T, causal mask) v and its lse, one
   query row at a time, in double. A row that sees no key: o = 0, lse = -inf. */
#define ATTENTION(T)                                                                             \
  static int attention_##T(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
                           const char* params, char* err, size_t err_len) {                      \
    if (n_in != 3 || n_out != 2) {                                                               \
      snprintf(err, err_len, "attention.fwd: expected 3 inputs and 2 outputs");                  \
      return 1;                                                                                  \
    }                                                                                            \
    const DLTensor *q = in[0], *k = in[1], *v = in[2];                                           \
    DLTensor *o = out[0], *lse = out[1];                                                         \
    const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];            \
    const int64_t Hkv = k->shape[1], M = k->shape[2];                                            \
    const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));                    \
    const int causal = moacert_flag(params, "causal");                                           \
    double* s = malloc(sizeof(double) * (size_t)(M > 0 ? M : 1));                                \
    double* acc = malloc(sizeof(double) * (size_t)(D > 0 ? D : 1));                              \
    if (!s || !acc) {                                                                            \
      free(s);                                                                                   \
      free(acc);                                                                                 \
      snprintf(err, err_len, "attention.fwd: out of memory");                                    \
      return 1;                                                                                  \
    }                                                                                            \
    for (int64_t b = 0; b < B; ++b)                                                              \
      for (int64_t h = 0; h < H; ++h) {                                                          \
        const int64_t g = h / (H / Hkv);                                                         \
        for (int64_t i = 0; i < N; ++i) {                                                        \
          const int64_t visible = causal ? i + (M - N) + 1 : M; /* keys j < visible */           \
          const int64_t m = visible < 0 ? 0 : visible > M ? M : visible;                         \
          if (m == 0) { /* a row that sees no key */                                             \
            for (int64_t d = 0; d < D; ++d) AT4(T, o, b, h, i, d) = 0;                           \
            AT3(T, lse, b, h, i) = (T)(-INFINITY);                                               \
            continue;                                                                            \
          }                                                                                      \
          double row_max = -INFINITY;                                                            \
          for (int64_t j = 0; j < m; ++j) {                                                      \
            double dot = 0;                                                                      \
            for (int64_t d = 0; d < D; ++d)                                                      \
              dot += (double)AT4(T, q, b, h, i, d) * (double)AT4(T, k, b, g, j, d);              \
            s[j] = scale * dot;                                                                  \
            if (s[j] > row_max) row_max = s[j];                                                  \
          }                                                                                      \
          double row_sum = 0;                                                                    \
          for (int64_t d = 0; d < D; ++d) acc[d] = 0;                                            \
          for (int64_t j = 0; j < m; ++j) {                                                      \
            const double p = exp(s[j] - row_max);                                                \
            row_sum += p;                                                                        \
            for (int64_t d = 0; d < D; ++d) acc[d] += p * (double)AT4(T, v, b, g, j, d);         \
          }                                                                                      \
          for (int64_t d = 0; d < D; ++d) AT4(T, o, b, h, i, d) = (T)(acc[d] / row_sum);         \
          AT3(T, lse, b, h, i) = (T)(row_max + log(row_sum));                                    \
        }                                                                                        \
      }                                                                                          \
    free(s);                                                                                     \
    free(acc);                                                                                   \
    return 0;                                                                                    \
  }

RMSNORM(float)
RMSNORM(double)
ATTENTION(float)
ATTENTION(double)

static const moacert_kernel kernels[] = {
    {"rmsnorm", "rmsnorm", "f32", 1, rmsnorm_float},
    {"rmsnorm", "rmsnorm", "f64", 1, rmsnorm_double},
    {"attention.fwd", "attention", "f32", 1, attention_float},
    {"attention.fwd", "attention", "f64", 1, attention_double},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
