/* A downstream project's kernel: attention.fwd in f32, one query row at a
   time, accumulated in double, honouring any strides (the plugin ABI:
   docs/plugins.md). o = softmax(scale q k^T, causal mask) v, and its lse.

   Built with MYKERNEL_PLANTED_MASK_BUG, a causal row sees one key too few
   (the off-by-one of a mask written as j < i instead of j <= i), which
   certification catches. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

/* Element (a, b, c[, d]) of a strided f32 tensor; strides are in elements. */
static float* at3(const DLTensor* t, int64_t a, int64_t b, int64_t c) {
  return (float*)t->data + a * t->strides[0] + b * t->strides[1] + c * t->strides[2];
}
static float* at4(const DLTensor* t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return (float*)t->data + a * t->strides[0] + b * t->strides[1] + c * t->strides[2] +
         d * t->strides[3];
}

/* Keys j < visible_keys(i) are visible to query row i: all M, or under the
   causal mask (queries aligned to the last keys) those up to i + M - N. */
static int64_t visible_keys(int64_t i, int64_t N, int64_t M, int causal) {
#ifdef MYKERNEL_PLANTED_MASK_BUG
  const int64_t visible = causal ? i + (M - N) : M;
#else
  const int64_t visible = causal ? i + (M - N) + 1 : M;
#endif
  return visible < 0 ? 0 : visible > M ? M : visible;
}

static int attention_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len) {
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2]; /* (B,H,N,D), (B,Hkv,M,D), (B,Hkv,M,D) */
  DLTensor *o = out[0], *lse = out[1];               /* (B,H,N,D), (B,H,N) */
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const double scale = moacert_param(params, "scale", 1 / sqrt((double)D));
  const int causal = moacert_flag(params, "causal");
  double* s = malloc(sizeof(double) * (size_t)(M > 0 ? M : 1));   /* (M) */
  double* acc = malloc(sizeof(double) * (size_t)(D > 0 ? D : 1)); /* (D) */
  if (!s || !acc) {
    free(s);
    free(acc);
    snprintf(err, err_len, "attention.fwd: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv); /* the key/value head of query head h */
      for (int64_t i = 0; i < N; ++i) {
        const int64_t m = visible_keys(i, N, M, causal);
        if (m == 0) { /* a row that sees no key: o = 0, lse = -inf */
          for (int64_t d = 0; d < D; ++d) *at4(o, b, h, i, d) = 0;
          *at3(lse, b, h, i) = -INFINITY;
          continue;
        }
        double row_max = -INFINITY;
        for (int64_t j = 0; j < m; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += (double)*at4(q, b, h, i, d) * *at4(k, b, g, j, d);
          s[j] = scale * dot;
          if (s[j] > row_max) row_max = s[j];
        }
        double row_sum = 0;
        for (int64_t d = 0; d < D; ++d) acc[d] = 0;
        for (int64_t j = 0; j < m; ++j) {
          const double p = exp(s[j] - row_max);
          row_sum += p;
          for (int64_t d = 0; d < D; ++d) acc[d] += p * *at4(v, b, g, j, d);
        }
        for (int64_t d = 0; d < D; ++d) *at4(o, b, h, i, d) = (float)(acc[d] / row_sum);
        *at3(lse, b, h, i) = (float)(row_max + log(row_sum));
      }
    }
  free(s);
  free(acc);
  return 0;
}

static const moacert_kernel kernels[] = {
    {"attention.fwd", "attention", "f32", 1, attention_f32},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
