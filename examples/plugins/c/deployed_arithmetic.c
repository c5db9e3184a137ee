/* attention.fwd as deployed kernels compute it, each declaring its
   arithmetic (plugin ABI 3, docs/design.md#arithmetic), beside the same
   kernel declaring nothing:

   fa2            FlashAttention-2's arithmetic (and cuDNN's and Triton's
                  fused attention): scores, running max and sum and the O
                  accumulator in f32, the softmax weights P rounded to the
                  storage format (bf16 or f16) before P V; declares
                  "round.P=storage". fa2_undeclared: the same, declaring
                  nothing, which certify fails.
   f16_value_sum  llama.cpp's CPU flash attention for an f16 KV cache: the
                  weighted value sum accumulated in f16 (rescales too);
                  declares "sum.PV=f16" inside the envelope where that
                  bounds it (M <= 1020). f16_value_sum_undeclared: the
                  same, declaring nothing, on every M;
                  f16_value_sum_past_reach: declaring it on every M,
                  which fails past M = 1020 (the standard model judges).
   tf32           f32 attention whose products take TF32 operands (q, k,
                  and P, v rounded to 11 bits), as cuBLAS under
                  allow_tf32; declares "sum.QK=tf32, sum.PV=tf32".
                  tf32_undeclared: declaring nothing.
   exp_2ulp       f32, an exp 2 ulps above the correctly rounded one;
                  declares "exp=2ulp" (the standard model's).
   exp_coarse     f32, an exp of relative error 2^-12 (a short polynomial);
                  declares "exp=2ulp", which it is not: fails.
                  exp_coarse_4096: declares "exp=4096ulp", which it is,
                  within M <= 1022, the declaration's reach;
                  exp_coarse_4096_past_reach: on every M, failing past it.
   ftz            f32, subnormal inputs read as 0 and subnormal outputs
                  written as 0 (a CPU's FTZ and DAZ); declares "ftz=both".
                  ftz_undeclared: declaring nothing.
   scores_bf16    f32, the scores rounded to bf16; "round.S=bf16".
   row_sum_bf16   f32, the running sum l rounded to bf16; "round.l=bf16",
                  within M <= 126, its reach; row_sum_bf16_past_reach:
                  on every M, failing past it.
   log_coarse     f32, a log of relative error 2^-12; "log=4096ulp".
   qk_f16         f32, q·k accumulated in f16; "sum.QK=f16".
   pv_bf16        f32, the value sum accumulated in bf16; "sum.PV=bf16".
   qk_bf16        f32, q·k accumulated in bf16; "sum.QK=bf16".
   pv_tf32        f32, only P·V's operands rounded to TF32; "sum.PV=tf32".
   ftz_inputs     f32, subnormal inputs read as 0 (DAZ); "ftz=inputs".
   ftz_outputs    f32, subnormal outputs written as 0 (FTZ);
                  "ftz=outputs".
   lse_bf16       f32, lse kept in bf16 (a kernel whose statistics are
                  stored narrow); "round.lse=bf16".
                  Each NAME_undeclared: the same, declaring nothing.

   An online softmax over one key at a time, row by row; causal masks are
   bottom-right aligned (moacert's). CTest certifies each
   (tests/plugins/CMakeLists.txt). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

/* bf16 and f16 storage: bf16 is the top half of a binary32 (rounded to
   nearest even), f16 is the compiler's _Float16. */
static float from_bf16(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

typedef enum { STORAGE_F32, STORAGE_BF16, STORAGE_F16 } storage;

static float load(const DLTensor* t, int64_t offset, storage s) {
  if (s == STORAGE_F32) return ((const float*)t->data)[offset];
  if (s == STORAGE_BF16) return from_bf16(((const uint16_t*)t->data)[offset]);
  return (float)((const _Float16*)t->data)[offset];
}
static void store(DLTensor* t, int64_t offset, float x, storage s) {
  if (s == STORAGE_F32)
    ((float*)t->data)[offset] = x;
  else if (s == STORAGE_BF16)
    ((uint16_t*)t->data)[offset] = to_bf16(x);
  else
    ((_Float16*)t->data)[offset] = (_Float16)x;
}
/* x rounded to the storage format and back. */
static float in_storage(float x, storage s) {
  if (s == STORAGE_F32) return x;
  return s == STORAGE_BF16 ? from_bf16(to_bf16(x)) : (float)(_Float16)x;
}
/* x rounded to TF32: 11 significant bits (10 stored), to nearest even. */
static float to_tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u) return x; /* inf, NaN */
  u += 0xfffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  memcpy(&x, &u, sizeof x);
  return x;
}
/* x, or 0 where it is subnormal (a CPU's flush-to-zero and
   denormals-are-zero). */
static float flushed(float x) {
  return fabsf(x) < 0x1p-126f ? 0.0f : x;
}

static int64_t at4(const DLTensor* t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}
static int64_t at3(const DLTensor* t, int64_t a, int64_t b, int64_t c) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2];
}

typedef enum {
  ARITH_FA2,
  ARITH_F16_VALUE_SUM,
  ARITH_TF32,
  ARITH_EXP_2ULP,
  ARITH_EXP_COARSE,
  ARITH_FTZ,
  ARITH_SCORES_BF16,
  ARITH_ROW_SUM_BF16,
  ARITH_LOG_COARSE,
  ARITH_QK_F16,
  ARITH_PV_BF16,
  ARITH_QK_BF16,
  ARITH_PV_TF32,
  ARITH_FTZ_INPUTS,
  ARITH_FTZ_OUTPUTS,
  ARITH_LSE_BF16
} arithmetic;

static int flushes_inputs(arithmetic a) {
  return a == ARITH_FTZ || a == ARITH_FTZ_INPUTS;
}
static int flushes_outputs(arithmetic a) {
  return a == ARITH_FTZ || a == ARITH_FTZ_OUTPUTS;
}
static int pv_in_tf32(arithmetic a) {
  return a == ARITH_TF32 || a == ARITH_PV_TF32;
}
/* An input as the kernel reads it: flushed, or rounded to TF32 for the
   product it enters (`tf32`). */
static float read_input(const DLTensor* t, int64_t offset, storage s, arithmetic a, int tf32) {
  const float x = load(t, offset, s);
  return flushes_inputs(a) ? flushed(x) : tf32 ? to_tf32(x) : x;
}

/* The exp each kernel uses. */
static float kernel_exp(float x, arithmetic a) {
  const float e = expf(x);
  if (a == ARITH_EXP_2ULP) return nextafterf(nextafterf(e, INFINITY), INFINITY);
  if (a == ARITH_EXP_COARSE) return e * (1 + 0x1p-12f);
  return e;
}

static int attention(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                     const char* params, char* err, size_t err_len, arithmetic a) {
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const DLTensor *q = in[0], *k = in[1], *v = in[2];
  DLTensor *o = out[0], *lse = out[1];
  const storage s = q->dtype.code == kDLBfloat ? STORAGE_BF16
                    : q->dtype.bits == 16      ? STORAGE_F16
                                               : STORAGE_F32;
#define READ_QK(t, offset) read_input(t, offset, s, a, a == ARITH_TF32)
#define READ_V(t, offset) read_input(t, offset, s, a, pv_in_tf32(a))
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)D));
  const int causal = moacert_flag(params, "causal");
  float* acc = malloc(sizeof(float) * (size_t)(D > 0 ? D : 1));
  if (!acc) {
    snprintf(err, err_len, "attention.fwd: out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      for (int64_t i = 0; i < N; ++i) {
        const int64_t visible = causal ? i + (M - N) + 1 : M; /* keys j < visible */
        const int64_t n = visible < 0 ? 0 : visible > M ? M : visible;
        if (n == 0) { /* a row that sees no key */
          for (int64_t d = 0; d < D; ++d) store(o, at4(o, b, h, i, d), 0, s);
          store(lse, at3(lse, b, h, i), -INFINITY, s);
          continue;
        }
        float m = -INFINITY, l = 0;
        for (int64_t d = 0; d < D; ++d) acc[d] = 0;
        for (int64_t j = 0; j < n; ++j) {
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) {
            const float product = READ_QK(q, at4(q, b, h, i, d)) * READ_QK(k, at4(k, b, g, j, d));
            dot = a == ARITH_QK_F16    ? (float)(_Float16)(dot + (float)(_Float16)product)
                  : a == ARITH_QK_BF16 ? from_bf16(to_bf16(dot + from_bf16(to_bf16(product))))
                                       : dot + product;
          }
          const float score =
              a == ARITH_SCORES_BF16 ? from_bf16(to_bf16(scale * dot)) : scale * dot;
          const float m_new = score > m ? score : m;
          const float alpha = kernel_exp(m - m_new, a); /* 0 for the first key */
          const float p = kernel_exp(score - m_new, a);
          l = l * alpha + p;
          if (a == ARITH_ROW_SUM_BF16) l = from_bf16(to_bf16(l));
          if (pv_in_tf32(a)) {
            const float p_tf32 = to_tf32(p);
            for (int64_t d = 0; d < D; ++d)
              acc[d] = acc[d] * alpha + p_tf32 * READ_V(v, at4(v, b, g, j, d));
          } else if (a == ARITH_PV_BF16) { /* every operation of the value sum in bf16 */
            for (int64_t d = 0; d < D; ++d) {
              const float rescaled = from_bf16(to_bf16(acc[d] * alpha));
              const float term = from_bf16(to_bf16(p * READ_V(v, at4(v, b, g, j, d))));
              acc[d] = from_bf16(to_bf16(rescaled + term));
            }
          } else if (a != ARITH_F16_VALUE_SUM) {
            const float weight = a == ARITH_FA2 ? in_storage(p, s) : p; /* the mma's A operand */
            for (int64_t d = 0; d < D; ++d)
              acc[d] = acc[d] * alpha + weight * READ_V(v, at4(v, b, g, j, d));
          } else { /* every operation of the value sum rounded to f16 */
            for (int64_t d = 0; d < D; ++d) {
              const _Float16 rescaled = (_Float16)(acc[d] * alpha);
              const _Float16 term = (_Float16)(p * load(v, at4(v, b, g, j, d), s));
              acc[d] = (float)(_Float16)((float)rescaled + (float)term);
            }
          }
          m = m_new;
        }
        for (int64_t d = 0; d < D; ++d) {
          const float y = acc[d] / l;
          store(o, at4(o, b, h, i, d), flushes_outputs(a) ? flushed(y) : y, s);
        }
        /* a short log: relative error 2^-12 */
        const float log_l = a == ARITH_LOG_COARSE ? logf(l) * (1 + 0x1p-12f) : logf(l);
        const float row_lse = m + log_l;
        store(lse, at3(lse, b, h, i), a == ARITH_LSE_BF16 ? from_bf16(to_bf16(row_lse)) : row_lse,
              s);
      }
    }
  free(acc);
  return 0;
#undef READ_QK
#undef READ_V
}

static int fa2(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
               const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_FA2);
}
static int f16_value_sum(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_F16_VALUE_SUM);
}
static int tf32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_TF32);
}
static int exp_2ulp(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                    const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_EXP_2ULP);
}
static int exp_coarse(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_EXP_COARSE);
}
static int ftz(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
               const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_FTZ);
}
static int scores_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                       const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_SCORES_BF16);
}
static int row_sum_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                        const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_ROW_SUM_BF16);
}
static int log_coarse(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_LOG_COARSE);
}
static int qk_f16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                  const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_QK_F16);
}
static int pv_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                   const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_PV_BF16);
}

static int qk_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                   const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_QK_BF16);
}
static int pv_tf32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                   const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_PV_TF32);
}
static int ftz_inputs(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_FTZ_INPUTS);
}
static int ftz_outputs(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                       const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_FTZ_OUTPUTS);
}
static int lse_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                    const char* params, char* err, size_t err_len) {
  return attention(in, n_in, out, n_out, params, err, err_len, ARITH_LSE_BF16);
}

/* A sum accumulated in f16 or bf16 is bounded only while the extent n of
   its axis keeps (n + 3) u < 1/2, n <= 1020 in f16, 124 in bf16
   (docs/bounds.md#declared-arithmetic): past it the declaration says
   nothing and the standard model judges. Each such kernel declares the
   envelope inside which its declaration bounds it: keys M for the value
   sum, D for the scores. */
static const moacert_axis f16_value_sum_axes[] = {{"M", 1, 1020, NULL, 0, 0}};
static const moacert_envelope f16_value_sum_envelope = {f16_value_sum_axes, 1, 0};
static const moacert_axis bf16_value_sum_axes[] = {{"M", 1, 124, NULL, 0, 0}};
static const moacert_envelope bf16_value_sum_envelope = {bf16_value_sum_axes, 1, 0};
static const moacert_axis f16_scores_axes[] = {{"D", 1, 1020, NULL, 0, 0}};
static const moacert_envelope f16_scores_envelope = {f16_scores_axes, 1, 0};
static const moacert_axis bf16_scores_axes[] = {{"D", 1, 124, NULL, 0, 0}};
static const moacert_envelope bf16_scores_envelope = {bf16_scores_axes, 1, 0};
/* So is a declaration that compounds once per key of the online softmax:
   the running sum l rounded to bf16 while (M + 1) 2^-8 < 1/2, M <= 126;
   an exp of 4096 ulps while (M + 1) 2^-11 < 1/2, M <= 1022. */
static const moacert_axis bf16_row_sum_axes[] = {{"M", 1, 126, NULL, 0, 0}};
static const moacert_envelope bf16_row_sum_envelope = {bf16_row_sum_axes, 1, 0};
static const moacert_axis exp_4096_axes[] = {{"M", 1, 1022, NULL, 0, 0}};
static const moacert_envelope exp_4096_envelope = {exp_4096_axes, 1, 0};

static const moacert_kernel kernels[] = {
    {"attention.fwd", "fa2", "bf16", 1, fa2, NULL, "cpu", "round.P=storage"},
    {"attention.fwd", "fa2", "f16", 1, fa2, NULL, "cpu", "round.P=storage"},
    {"attention.fwd", "fa2_undeclared", "bf16", 1, fa2, NULL, "cpu", NULL},
    {"attention.fwd", "fa2_undeclared", "f16", 1, fa2, NULL, "cpu", NULL},
    {"attention.fwd", "f16_value_sum", "f16", 1, f16_value_sum, &f16_value_sum_envelope, "cpu",
     "sum.PV=f16"},
    {"attention.fwd", "f16_value_sum_undeclared", "f16", 1, f16_value_sum, NULL, "cpu", NULL},
    {"attention.fwd", "f16_value_sum_past_reach", "f16", 1, f16_value_sum, NULL, "cpu",
     "sum.PV=f16"},
    {"attention.fwd", "tf32", "f32", 1, tf32, NULL, "cpu", "sum.QK=tf32, sum.PV=tf32"},
    {"attention.fwd", "tf32_undeclared", "f32", 1, tf32, NULL, "cpu", NULL},
    {"attention.fwd", "exp_2ulp", "f32", 1, exp_2ulp, NULL, "cpu", "exp=2ulp"},
    {"attention.fwd", "exp_coarse", "f32", 1, exp_coarse, NULL, "cpu", "exp=2ulp"},
    {"attention.fwd", "exp_coarse_4096", "f32", 1, exp_coarse, &exp_4096_envelope, "cpu",
     "exp=4096ulp"},
    {"attention.fwd", "exp_coarse_4096_past_reach", "f32", 1, exp_coarse, NULL, "cpu",
     "exp=4096ulp"},
    {"attention.fwd", "ftz", "f32", 1, ftz, NULL, "cpu", "ftz=both"},
    {"attention.fwd", "ftz_undeclared", "f32", 1, ftz, NULL, "cpu", NULL},
    {"attention.fwd", "scores_bf16", "f32", 1, scores_bf16, NULL, "cpu", "round.S=bf16"},
    {"attention.fwd", "scores_bf16_undeclared", "f32", 1, scores_bf16, NULL, "cpu", NULL},
    {"attention.fwd", "row_sum_bf16", "f32", 1, row_sum_bf16, &bf16_row_sum_envelope, "cpu",
     "round.l=bf16"},
    {"attention.fwd", "row_sum_bf16_undeclared", "f32", 1, row_sum_bf16, &bf16_row_sum_envelope,
     "cpu", NULL},
    {"attention.fwd", "row_sum_bf16_past_reach", "f32", 1, row_sum_bf16, NULL, "cpu",
     "round.l=bf16"},
    {"attention.fwd", "log_coarse", "f32", 1, log_coarse, NULL, "cpu", "log=4096ulp"},
    {"attention.fwd", "log_coarse_undeclared", "f32", 1, log_coarse, NULL, "cpu", NULL},
    {"attention.fwd", "qk_f16", "f32", 1, qk_f16, &f16_scores_envelope, "cpu", "sum.QK=f16"},
    {"attention.fwd", "qk_f16_undeclared", "f32", 1, qk_f16, &f16_scores_envelope, "cpu", NULL},
    {"attention.fwd", "pv_bf16", "f32", 1, pv_bf16, &bf16_value_sum_envelope, "cpu", "sum.PV=bf16"},
    {"attention.fwd", "pv_bf16_undeclared", "f32", 1, pv_bf16, &bf16_value_sum_envelope, "cpu",
     NULL},
    {"attention.fwd", "qk_bf16", "f32", 1, qk_bf16, &bf16_scores_envelope, "cpu", "sum.QK=bf16"},
    {"attention.fwd", "qk_bf16_undeclared", "f32", 1, qk_bf16, &bf16_scores_envelope, "cpu", NULL},
    {"attention.fwd", "pv_tf32", "f32", 1, pv_tf32, NULL, "cpu", "sum.PV=tf32"},
    {"attention.fwd", "pv_tf32_undeclared", "f32", 1, pv_tf32, NULL, "cpu", NULL},
    {"attention.fwd", "ftz_inputs", "f32", 1, ftz_inputs, NULL, "cpu", "ftz=inputs"},
    {"attention.fwd", "ftz_inputs_undeclared", "f32", 1, ftz_inputs, NULL, "cpu", NULL},
    {"attention.fwd", "ftz_outputs", "f32", 1, ftz_outputs, NULL, "cpu", "ftz=outputs"},
    {"attention.fwd", "ftz_outputs_undeclared", "f32", 1, ftz_outputs, NULL, "cpu", NULL},
    {"attention.fwd", "lse_bf16", "f32", 1, lse_bf16, NULL, "cpu", "round.lse=bf16"},
    {"attention.fwd", "lse_bf16_undeclared", "f32", 1, lse_bf16, NULL, "cpu", NULL},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
