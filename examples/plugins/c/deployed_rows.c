/* rmsnorm and the SwiGLU MLP in f32 as deployed CPU kernels compute them,
   each declaring its arithmetic (plugin ABI 3, docs/design.md#arithmetic),
   beside the same kernel declaring nothing:

   ss_f16          rmsnorm whose sum of squares is accumulated in f16;
                   declares "sum.ss=f16".
   rsqrt_approx    rmsnorm whose reciprocal root is a hardware estimate of
                   relative error 2^-12 (rsqrtps without a Newton step);
                   declares "sqrt=4096ulp".
   h_f16           the MLP with its activation h = silu(x w1) (x w3) rounded
                   to f16 before the down product (ggml's f16-weight MLP);
                   declares "round.h=f16".

   div_approx      rmsnorm dividing by an estimate of relative error 2^-12;
                   declares "div=4096ulp".
   r_bf16          rmsnorm with its reciprocal root rounded to bf16;
                   declares "round.r=bf16".
   silu_approx     the MLP with a sigmoid estimate of relative error
                   2^-12; declares "silu=4096ulp".
   gate_bf16       the MLP with x w1 rounded to bf16 before silu; declares
                   "round.gate=bf16".
   down_bf16       the MLP with its down product accumulated in bf16;
                   declares "sum.down=bf16".
   ss_rounded      rmsnorm whose sum of squares, accumulated in f32, is
                   rounded to bf16 before the mean; "round.ss=bf16".
   norm_ftz        rmsnorm reading subnormal inputs as 0 and writing
                   subnormal outputs as 0 (FTZ and DAZ); "ftz=both".
   up_bf16         the MLP with x w3 rounded to bf16; "round.up=bf16".
   gate_sum_bf16   the MLP with x w1 accumulated in bf16; "sum.gate=bf16".
   up_sum_f16      the MLP with x w3 accumulated in f16; "sum.up=f16".

   NAME_undeclared: the same kernel, declaring nothing. Row-major tensors
   (accepts_strided 0). CTest certifies each (tests/plugins/CMakeLists.txt). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <moacert/plugin.h>
#include <moacert/plugin_params.h>

/* x rounded to bf16 (nearest even) and back */
static float bf16_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* x, or 0 where it is subnormal (a CPU's FTZ and DAZ) */
static float flushed(float x) {
  return fabsf(x) < 0x1p-126f ? 0.0f : x;
}

typedef enum { SS_F16, RSQRT_APPROX, DIV_APPROX, R_BF16, SS_ROUNDED, NORM_FTZ } norm_arithmetic;

static int rmsnorm(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                   const char* params, char* err, size_t err_len, norm_arithmetic a) {
  if (n_in != 2 || n_out != 1) {
    snprintf(err, err_len, "rmsnorm: expected 2 inputs and 1 output");
    return 1;
  }
  const float *x = (const float*)in[0]->data, *w = (const float*)in[1]->data;
  float* y = (float*)out[0]->data;
  const int64_t T = in[0]->shape[0], D = in[0]->shape[1];
  const float eps = (float)moacert_param(params, "eps", 1e-6);
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x + t * D;
#define X(d) (a == NORM_FTZ ? flushed(xt[d]) : xt[d])
    float ss = 0;
    for (int64_t d = 0; d < D; ++d)
      ss = a == SS_F16 ? (float)(_Float16)(ss + (float)(_Float16)(X(d) * X(d))) : ss + X(d) * X(d);
    if (a == SS_ROUNDED) ss = bf16_of(ss);
    const float ms = ss / (float)D + eps;
    /* the estimate: the correctly rounded reciprocal root, off by 2^-12 */
    float r = a == RSQRT_APPROX ? (1 / sqrtf(ms)) * (1 - 0x1p-12f) : 1 / sqrtf(ms);
    if (a == R_BF16) r = bf16_of(r);
    for (int64_t d = 0; d < D; ++d) { /* a division estimate of relative error 2^-12 (rcpps) */
      const float yd =
          a == DIV_APPROX ? X(d) / (sqrtf(ms) * (1 + 0x1p-12f)) * w[d] : X(d) * r * w[d];
      y[t * D + d] = a == NORM_FTZ ? flushed(yd) : yd;
    }
#undef X
  }
  return 0;
}

static int ss_f16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                  const char* params, char* err, size_t err_len) {
  return rmsnorm(in, n_in, out, n_out, params, err, err_len, SS_F16);
}
static int rsqrt_approx(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                        const char* params, char* err, size_t err_len) {
  return rmsnorm(in, n_in, out, n_out, params, err, err_len, RSQRT_APPROX);
}
static int div_approx(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return rmsnorm(in, n_in, out, n_out, params, err, err_len, DIV_APPROX);
}
static int r_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                  const char* params, char* err, size_t err_len) {
  return rmsnorm(in, n_in, out, n_out, params, err, err_len, R_BF16);
}

typedef enum {
  H_F16,
  SILU_APPROX,
  GATE_BF16,
  DOWN_BF16,
  UP_BF16,
  GATE_SUM_BF16,
  UP_SUM_F16
} mlp_arithmetic;

/* mlp.swiglu: y = (silu(x w1) * (x w3)) w2, as `a` says. */
static int mlp(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
               const char* params, char* err, size_t err_len, mlp_arithmetic a) {
  (void)params;
  if (n_in != 4 || n_out != 1) {
    snprintf(err, err_len, "mlp.swiglu: expected 4 inputs and 1 output");
    return 1;
  }
  const float *x = (const float*)in[0]->data, *w1 = (const float*)in[1]->data,
              *w3 = (const float*)in[2]->data, *w2 = (const float*)in[3]->data;
  float* y = (float*)out[0]->data;
  const int64_t T = in[0]->shape[0], Dm = in[0]->shape[1], F = in[1]->shape[1];
  float* h = malloc(sizeof(float) * (size_t)(F > 0 ? F : 1));
  if (!h) {
    snprintf(err, err_len, "mlp.swiglu: out of memory");
    return 1;
  }
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t f = 0; f < F; ++f) {
      float gate = 0, up = 0;
      for (int64_t d = 0; d < Dm; ++d) {
        const float g = x[t * Dm + d] * w1[d * F + f], u = x[t * Dm + d] * w3[d * F + f];
        gate = a == GATE_SUM_BF16 ? bf16_of(gate + bf16_of(g)) : gate + g;
        up = a == UP_SUM_F16 ? (float)(_Float16)(up + (float)(_Float16)u) : up + u;
      }
      if (a == GATE_BF16) gate = bf16_of(gate);
      if (a == UP_BF16) up = bf16_of(up);
      /* a sigmoid estimate of relative error 2^-12 */
      const float silu =
          a == SILU_APPROX ? gate / (1 + expf(-gate)) * (1 + 0x1p-12f) : gate / (1 + expf(-gate));
      h[f] = a == H_F16 ? (float)(_Float16)(silu * up) /* the activation, stored in f16 */
                        : silu * up;
    }
    for (int64_t d = 0; d < Dm; ++d) {
      float sum = 0;
      for (int64_t f = 0; f < F; ++f)
        sum = a == DOWN_BF16 ? bf16_of(sum + bf16_of(h[f] * w2[f * Dm + d]))
                             : sum + h[f] * w2[f * Dm + d];
      y[t * Dm + d] = sum;
    }
  }
  free(h);
  return 0;
}

static int h_f16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                 const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, H_F16);
}
static int silu_approx(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                       const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, SILU_APPROX);
}
static int gate_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                     const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, GATE_BF16);
}
static int down_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                     const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, DOWN_BF16);
}

static int ss_rounded(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return rmsnorm(in, n_in, out, n_out, params, err, err_len, SS_ROUNDED);
}
static int norm_ftz(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                    const char* params, char* err, size_t err_len) {
  return rmsnorm(in, n_in, out, n_out, params, err, err_len, NORM_FTZ);
}
static int up_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                   const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, UP_BF16);
}
static int gate_sum_bf16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, GATE_SUM_BF16);
}
static int up_sum_f16(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  return mlp(in, n_in, out, n_out, params, err, err_len, UP_SUM_F16);
}

/* A sum accumulated in f16 or bf16 is bounded only while the extent n of
   its axis keeps (n + 3) u < 1/2, n <= 1020 in f16, 124 in bf16
   (docs/bounds.md#declared-arithmetic): past it the declaration says
   nothing and the standard model judges. Each such kernel declares the
   envelope inside which its declaration bounds it: D for the sum of
   squares, a GEMM's contraction (Dm for gate and up, F for down). */
static const moacert_axis f16_squares_axes[] = {{"D", 1, 1020, NULL, 0, 0}};
static const moacert_envelope f16_squares_envelope = {f16_squares_axes, 1, 0};
static const moacert_axis bf16_down_axes[] = {{"F", 1, 124, NULL, 0, 0}};
static const moacert_envelope bf16_down_envelope = {bf16_down_axes, 1, 0};
static const moacert_axis bf16_gate_axes[] = {{"Dm", 1, 124, NULL, 0, 0}};
static const moacert_envelope bf16_gate_envelope = {bf16_gate_axes, 1, 0};
static const moacert_axis f16_up_axes[] = {{"Dm", 1, 1020, NULL, 0, 0}};
static const moacert_envelope f16_up_envelope = {f16_up_axes, 1, 0};

static const moacert_kernel kernels[] = {
    {"rmsnorm", "ss_f16", "f32", 0, ss_f16, &f16_squares_envelope, "cpu", "sum.ss=f16"},
    {"rmsnorm", "ss_f16_undeclared", "f32", 0, ss_f16, &f16_squares_envelope, "cpu", NULL},
    {"rmsnorm", "rsqrt_approx", "f32", 0, rsqrt_approx, NULL, "cpu", "sqrt=4096ulp"},
    {"rmsnorm", "rsqrt_approx_undeclared", "f32", 0, rsqrt_approx, NULL, "cpu", NULL},
    {"mlp.swiglu", "h_f16", "f32", 0, h_f16, NULL, "cpu", "round.h=f16"},
    {"mlp.swiglu", "h_f16_undeclared", "f32", 0, h_f16, NULL, "cpu", NULL},
    {"rmsnorm", "div_approx", "f32", 0, div_approx, NULL, "cpu", "div=4096ulp"},
    {"rmsnorm", "div_approx_undeclared", "f32", 0, div_approx, NULL, "cpu", NULL},
    {"rmsnorm", "r_bf16", "f32", 0, r_bf16, NULL, "cpu", "round.r=bf16"},
    {"rmsnorm", "r_bf16_undeclared", "f32", 0, r_bf16, NULL, "cpu", NULL},
    {"mlp.swiglu", "silu_approx", "f32", 0, silu_approx, NULL, "cpu", "silu=4096ulp"},
    {"mlp.swiglu", "silu_approx_undeclared", "f32", 0, silu_approx, NULL, "cpu", NULL},
    {"mlp.swiglu", "gate_bf16", "f32", 0, gate_bf16, NULL, "cpu", "round.gate=bf16"},
    {"mlp.swiglu", "gate_bf16_undeclared", "f32", 0, gate_bf16, NULL, "cpu", NULL},
    {"mlp.swiglu", "down_bf16", "f32", 0, down_bf16, &bf16_down_envelope, "cpu", "sum.down=bf16"},
    {"mlp.swiglu", "down_bf16_undeclared", "f32", 0, down_bf16, &bf16_down_envelope, "cpu", NULL},
    {"rmsnorm", "ss_rounded", "f32", 0, ss_rounded, NULL, "cpu", "round.ss=bf16"},
    {"rmsnorm", "ss_rounded_undeclared", "f32", 0, ss_rounded, NULL, "cpu", NULL},
    {"rmsnorm", "norm_ftz", "f32", 0, norm_ftz, NULL, "cpu", "ftz=both"},
    {"rmsnorm", "norm_ftz_undeclared", "f32", 0, norm_ftz, NULL, "cpu", NULL},
    {"mlp.swiglu", "up_bf16", "f32", 0, up_bf16, NULL, "cpu", "round.up=bf16"},
    {"mlp.swiglu", "up_bf16_undeclared", "f32", 0, up_bf16, NULL, "cpu", NULL},
    {"mlp.swiglu", "gate_sum_bf16", "f32", 0, gate_sum_bf16, &bf16_gate_envelope, "cpu",
     "sum.gate=bf16"},
    {"mlp.swiglu", "gate_sum_bf16_undeclared", "f32", 0, gate_sum_bf16, &bf16_gate_envelope, "cpu",
     NULL},
    {"mlp.swiglu", "up_sum_f16", "f32", 0, up_sum_f16, &f16_up_envelope, "cpu", "sum.up=f16"},
    {"mlp.swiglu", "up_sum_f16_undeclared", "f32", 0, up_sum_f16, &f16_up_envelope, "cpu", NULL},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
