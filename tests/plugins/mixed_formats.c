/* Planted kernels for per-tensor formats (docs/design.md#per-tensor-formats):
   each declares its tensors' formats (ABI 4's tensor_formats) as the
   deployed kernels mix them, and computes in f32 as they do. CTest
   (tests/plugins/CMakeLists.txt) certifies each: the faithful ones hold,
   each planted twin fails.

     decode, fwd          attention (decode: llama.cpp's f32 query against an
                          f16 KV cache; fwd: the same for many queries),
                          "q=f32,k=f16,v=f16,o=f32": lse, not named, is in
                          the dtype f16; scores, softmax and the value sum in
                          f32 from the f16 cache, o written in f32
     decode_q_f16         rounds q to f16 before the dot products (what ggml
                          does against an f16 K): fails
     decode_o_f16         writes o rounded to f16 while declaring o=f32: fails
     mlp                  mlp.swiglu with f16 weights w1, w3, w2 and f32 x
                          and y, every product summed in f32
     mlp_h_f16            rounds h = silu(gate) up to f16 before w2: fails

   Each kernel checks the element type of every tensor it is handed (its
   own declared format), and refuses the call otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

typedef _Float16 half;

/* Element (a, b, c, d) of a rank-4 tensor (rank 3: d = 0 ignored), as T. */
static int64_t offset(const DLTensor* t, int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t o = a * t->strides[0] + b * t->strides[1] + c * t->strides[2];
  if (t->ndim > 3) o += d * t->strides[3];
  return o;
}
#define F32(t, a, b, c, d) (((float*)(t)->data)[offset(t, a, b, c, d)])
#define F16(t, a, b, c, d) (((half*)(t)->data)[offset(t, a, b, c, d)])
#define M32(t, r, c) (((float*)(t)->data)[(r) * (t)->strides[0] + (c) * (t)->strides[1]])
#define M16(t, r, c) (((half*)(t)->data)[(r) * (t)->strides[0] + (c) * (t)->strides[1]])

/* Whether tensor `t` holds floats of `bits` bits, else the error said. */
static int holds(const DLTensor* t, int bits, const char* name, char* err, size_t err_len) {
  if (t->dtype.code == kDLFloat && t->dtype.bits == bits) return 1;
  snprintf(err, err_len, "%s handed as code %d, %d bits; declared f%d", name, t->dtype.code,
           t->dtype.bits, bits);
  return 0;
}

/* How a twin departs from the faithful kernel. */
struct how {
  int q_f16; /* q rounded to f16 before the dot products */
  int o_f16; /* o rounded to f16 before it is written in f32 */
};

/* attention.fwd (lens NULL, the causal mask bottom-right) and
   attention.decode (one query, keys below lens[b]): q f32, k and v f16, o
   f32, lse f16; scale read as a float (params f32). */
static int attention(const DLTensor* const* in, DLTensor* const* out, const char* params,
                     const DLTensor* lens, struct how how, char* err, size_t err_len) {
  const DLTensor *q = in[0], *k = in[1], *v = in[2];
  DLTensor *o = out[0], *lse = out[1];
  if (!holds(q, 32, "q", err, err_len) || !holds(k, 16, "k", err, err_len) ||
      !holds(v, 16, "v", err, err_len) || !holds(o, 32, "o", err, err_len) ||
      !holds(lse, 16, "lse", err, err_len))
    return 1;
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)D));
  const int causal = !lens && moacert_flag(params, "causal");
  float* s = malloc(sizeof(float) * (size_t)M);
  float* acc = malloc(sizeof(float) * (size_t)D);
  float* qr = malloc(sizeof(float) * (size_t)D);
  if (!s || !acc || !qr) {
    free(s);
    free(acc);
    free(qr);
    snprintf(err, err_len, "out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < N; ++i) {
        const int64_t g = h / (H / Hkv);
        int64_t seen = M;
        if (lens) seen = ((const int64_t*)lens->data)[b * lens->strides[0]];
        if (causal) {
          const int64_t last = i + (M - N); /* the last key row i sees */
          seen = last < 0 ? 0 : last + 1 > M ? M : last + 1;
        }
        for (int64_t d = 0; d < D; ++d) {
          const float x = F32(q, b, h, i, d);
          qr[d] = how.q_f16 ? (float)(half)x : x;
        }
        float row_max = -INFINITY, row_sum = 0;
        for (int64_t j = 0; j < seen; ++j) {
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * (float)F16(k, b, g, j, d);
          s[j] = scale * dot;
          row_max = s[j] > row_max ? s[j] : row_max;
        }
        for (int64_t d = 0; d < D; ++d) acc[d] = 0;
        for (int64_t j = 0; j < seen; ++j) {
          const float p = expf(s[j] - row_max);
          row_sum += p;
          for (int64_t d = 0; d < D; ++d) acc[d] += p * (float)F16(v, b, g, j, d);
        }
        for (int64_t d = 0; d < D; ++d) {
          const float y = seen ? acc[d] / row_sum : 0;
          F32(o, b, h, i, d) = how.o_f16 ? (float)(half)y : y;
        }
        F16(lse, b, h, i, 0) = (half)(seen ? row_max + logf(row_sum) : -INFINITY);
      }
  free(s);
  free(acc);
  free(qr);
  return 0;
}

/* mlp.swiglu: y = (silu(x w1) * (x w3)) w2, x and y f32, the weights f16,
   each product summed in f32; h rounded to f16 where `h_f16`. */
static int mlp(const DLTensor* const* in, DLTensor* const* out, int h_f16, char* err,
               size_t err_len) {
  const DLTensor *x = in[0], *w1 = in[1], *w3 = in[2], *w2 = in[3];
  DLTensor* y = out[0];
  if (!holds(x, 32, "x", err, err_len) || !holds(w1, 16, "w1", err, err_len) ||
      !holds(w3, 16, "w3", err, err_len) || !holds(w2, 16, "w2", err, err_len) ||
      !holds(y, 32, "y", err, err_len))
    return 1;
  const int64_t T = x->shape[0], Dm = x->shape[1], F = w1->shape[1];
  float* h = malloc(sizeof(float) * (size_t)F);
  if (!h) {
    snprintf(err, err_len, "out of memory");
    return 1;
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t f = 0; f < F; ++f) {
      float gate = 0, up = 0;
      for (int64_t d = 0; d < Dm; ++d) {
        gate += M32(x, t, d) * (float)M16(w1, d, f);
        up += M32(x, t, d) * (float)M16(w3, d, f);
      }
      const float hf = gate / (1 + expf(-gate)) * up;
      h[f] = h_f16 ? (float)(half)hf : hf;
    }
    for (int64_t d = 0; d < Dm; ++d) {
      float sum = 0;
      for (int64_t f = 0; f < F; ++f) sum += h[f] * (float)M16(w2, f, d);
      M32(y, t, d) = sum;
    }
  }
  free(h);
  return 0;
}

#define ATTENTION(NAME, LENS, ...)                                                      \
  static int NAME(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
                  const char* params, char* err, size_t err_len) {                      \
    (void)n_in;                                                                         \
    (void)n_out;                                                                        \
    return attention(in, out, params, LENS, (struct how){__VA_ARGS__}, err, err_len);   \
  }
ATTENTION(fwd, NULL, .q_f16 = 0)
ATTENTION(decode, in[3], .q_f16 = 0)
ATTENTION(decode_q_f16, in[3], .q_f16 = 1)
ATTENTION(decode_o_f16, in[3], .o_f16 = 1)

#define MLP(NAME, H_F16)                                                                \
  static int NAME(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
                  const char* params, char* err, size_t err_len) {                      \
    (void)n_in;                                                                         \
    (void)n_out;                                                                        \
    (void)params;                                                                       \
    return mlp(in, out, H_F16, err, err_len);                                           \
  }
MLP(mlp_f32, 0)
MLP(mlp_h_f16, 1)

/* The attention entries' dtype is the cache's, f16; the MLP's the
   activations', f32. */
#define ATTENTION_ENTRY(OP, NAME, RUN)                                                         \
  {                                                                                            \
    .op = OP, .name = NAME, .dtype = "f16", .accepts_strided = 1, .run = RUN, .params = "f32", \
    .tensor_formats = "q=f32,k=f16,v=f16,o=f32"                                                \
  }
#define MLP_ENTRY(NAME, RUN)                                                            \
  {                                                                                     \
    .op = "mlp.swiglu", .name = NAME, .dtype = "f32", .accepts_strided = 1, .run = RUN, \
    .tensor_formats = "x=f32,w1=f16,w3=f16,w2=f16,y=f32"                                \
  }
static const moacert_kernel kernels[] = {
    ATTENTION_ENTRY("attention.decode", "decode", decode),
    ATTENTION_ENTRY("attention.decode", "decode_q_f16", decode_q_f16),
    /* the same, declaring the rounding it takes (round.q=f16): holds */
    {.op = "attention.decode",
     .name = "decode_q_f16_declared",
     .dtype = "f16",
     .accepts_strided = 1,
     .run = decode_q_f16,
     .arithmetic = "round.q=f16",
     .params = "f32",
     .tensor_formats = "q=f32,k=f16,v=f16,o=f32"},
    ATTENTION_ENTRY("attention.decode", "decode_o_f16", decode_o_f16),
    ATTENTION_ENTRY("attention.fwd", "fwd", fwd),
    MLP_ENTRY("mlp", mlp_f32),
    MLP_ENTRY("mlp_h_f16", mlp_h_f16),
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
