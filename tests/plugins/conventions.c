/* Planted kernels for the conventions of plugin ABI 4 (docs/design.md#conventions):
   one attention.fwd, in double, computing as the libraries that take their
   problem their own way do, each declared and undeclared. CTest
   (tests/plugins/CMakeLists.txt) certifies each pair: declared, it holds;
   undeclared, it fails; and a declaration moacert cannot read is refused.

     o_only, o_only_undeclared        writes o, never lse (ggml, ONNX Runtime)
     lse_garbage                      declares lse and writes 0 there
     top_left, top_left_undeclared    the causal mask aligned top-left: key j
                                      visible from row i iff j <= i (ONNX's
                                      and PyTorch's is_causal)
     f32_scale, f32_scale_undeclared  computes with scale rounded to float (a
                                      library whose parameters are floats)
     thread_order                     claims determinism (ABI 4), but sums its
                                      keys backwards when handed 2 or more
                                      "threads": caught by the determinism
                                      check; thread_order_unclaimed claims
                                      nothing and holds
     bad_output, bad_alignment, bad_params, bad_tensor, bad_format
                                      declarations moacert refuses (mixed
                                      formats, judged: mixed_formats.c) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

#define AT3(t, a, b, c) \
  (((double*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1] + (c) * (t)->strides[2]])
#define AT4(t, a, b, c, d)                                                                      \
  (((double*)(t)->data)[(a) * (t)->strides[0] + (b) * (t)->strides[1] + (c) * (t)->strides[2] + \
                        (d) * (t)->strides[3]])

/* How the kernel departs from moacert's own convention. */
struct how {
  int top_left;   /* mask j <= i rather than j <= i + (M - N) */
  int lse;        /* 1: writes lse; 0: leaves it; -1: writes 0 (garbage) */
  int f32_scale;  /* computes with (float)scale */
  int by_threads; /* with "threads" >= 2, the value sum over keys backwards */
};

static int attention(const DLTensor* const* in, DLTensor* const* out, const char* params,
                     struct how how, char* err, size_t err_len) {
  const DLTensor *q = in[0], *k = in[1], *v = in[2];
  DLTensor *o = out[0], *lse = out[1];
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  if (how.f32_scale) scale = (float)scale;
  const int causal = moacert_flag(params, "causal");
  const int backwards = how.by_threads && moacert_param(params, "threads", 1) >= 2;
  double* s = malloc(sizeof(double) * (size_t)M);
  double* acc = malloc(sizeof(double) * (size_t)D);
  if (!s || !acc) {
    free(s);
    free(acc);
    snprintf(err, err_len, "out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const int64_t g = h / (H / Hkv);
        const int64_t last = how.top_left ? i : i + (M - N); /* the last key row i sees */
        const int64_t seen = !causal ? M : last < 0 ? 0 : last + 1 > M ? M : last + 1;
        double row_max = -INFINITY, row_sum = 0;
        for (int64_t j = 0; j < seen; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += AT4(q, b, h, i, d) * AT4(k, b, g, j, d);
          s[j] = scale * dot;
          row_max = s[j] > row_max ? s[j] : row_max;
        }
        for (int64_t d = 0; d < D; ++d) acc[d] = 0;
        for (int64_t step = 0; step < seen; ++step) {
          const int64_t j = backwards ? seen - 1 - step : step;
          const double p = exp(s[j] - row_max);
          row_sum += p;
          for (int64_t d = 0; d < D; ++d) acc[d] += p * AT4(v, b, g, j, d);
        }
        for (int64_t d = 0; d < D; ++d) AT4(o, b, h, i, d) = seen ? acc[d] / row_sum : 0;
        if (how.lse == 1) AT3(lse, b, h, i) = seen ? row_max + log(row_sum) : -INFINITY;
        if (how.lse == -1) AT3(lse, b, h, i) = 0;
      }
  free(s);
  free(acc);
  return 0;
}

#define KERNEL(NAME, ...)                                                               \
  static int NAME(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
                  const char* params, char* err, size_t err_len) {                      \
    (void)n_in;                                                                         \
    (void)n_out;                                                                        \
    return attention(in, out, params, (struct how){__VA_ARGS__}, err, err_len);         \
  }
KERNEL(o_only, .lse = 0)
KERNEL(lse_garbage, .lse = -1)
KERNEL(top_left, .top_left = 1, .lse = 1)
KERNEL(f32_scale, .f32_scale = 1, .lse = 1)
KERNEL(thread_order, .by_threads = 1, .lse = 1)

#define ENTRY(NAME, RUN, ...)                                                              \
  {                                                                                        \
    .op = "attention.fwd", .name = NAME, .dtype = "f64", .accepts_strided = 1, .run = RUN, \
    __VA_ARGS__                                                                            \
  }
static const moacert_kernel kernels[] = {
    ENTRY("o_only", o_only, .outputs = "o"),
    ENTRY("o_only_undeclared", o_only, .outputs = NULL),
    ENTRY("lse_garbage", lse_garbage, .outputs = "o,lse"),
    ENTRY("top_left", top_left, .causal_alignment = "top_left"),
    ENTRY("top_left_undeclared", top_left, .causal_alignment = NULL),
    ENTRY("f32_scale", f32_scale, .params = "f32"),
    ENTRY("f32_scale_undeclared", f32_scale, .params = NULL),
    ENTRY("bad_output", o_only, .outputs = "o,lse2"),
    ENTRY("bad_alignment", top_left, .causal_alignment = "diagonal"),
    ENTRY("bad_params", f32_scale, .params = "f16"),
    ENTRY("bad_tensor", o_only, .tensor_formats = "q=f64,lens=f64"),
    ENTRY("bad_format", o_only, .tensor_formats = "q=f64,k=f8"),
    ENTRY("uniform_formats", top_left, .tensor_formats = "q=f64 k=f64 v=f64 o=f64 lse=f64",
          .causal_alignment = "top_left"),
    ENTRY("thread_order", thread_order, .deterministic = 1),
    ENTRY("thread_order_unclaimed", thread_order, .deterministic = 0),
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
