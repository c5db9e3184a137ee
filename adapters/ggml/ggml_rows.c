/* rmsnorm and mlp.swiglu as llama.cpp builds them (llama-graph.cpp's
   build_norm and build_ffn): ggml_rms_norm times the weight w by ggml_mul,
   and the SwiGLU MLP as ggml_mul_mat of the gate and up weights, their
   ggml_swiglu_split, and ggml_mul_mat of the down weight. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <moacert/plugin_params.h>

#include "../common/adapter_tensors.h"
#include "ggml_kernels.h"
#include "ggml_runtime.h"

int ggml_rmsnorm_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                     const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 2 || n_out != 1) {
    snprintf(err, err_len, "ggml rmsnorm: expected 2 inputs and 1 output");
    return 1;
  }
  if (ggml_runtime_open(err, err_len) != 0) return 1;
  const int64_t T = in[0]->shape[0], D = in[0]->shape[1];
  /* ggml_rms_norm takes eps as a float; the kernel declares params "f32",
     so the eps handed over is one */
  const float eps = (float)moacert_param(params, "eps", 1e-6);
  struct ggml_context* ctx = ggml_runtime_context((size_t)(T * D * 4 * 3 + D * 4), 4);
  if (!ctx) {
    snprintf(err, err_len, "ggml: out of memory");
    return 1;
  }
  struct ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, D, T);
  struct ggml_tensor* w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, D);
  adapter_read_f32(in[0], (float*)ggml_get_data(x));
  adapter_read_f32(in[1], (float*)ggml_get_data(w));
  struct ggml_tensor* y = ggml_mul(ctx, ggml_rms_norm(ctx, x, eps), w);
  const int rc = ggml_runtime_compute(ctx, y, err, err_len);
  if (rc == 0) adapter_write_f32(out[0], (const float*)ggml_get_data(y));
  ggml_free(ctx);
  return rc;
}

/* w (rows, cols) row-major, transposed into ggml's [rows, cols] (cols rows
   of `rows` elements): the layout ggml_mul_mat contracts over ne0, as a
   GGUF file stores a linear layer's weight */
static void transposed(const DLTensor* w, struct ggml_tensor* t, int f16) {
  const int64_t rows = w->shape[0], cols = w->shape[1];
  float* tmp = (float*)malloc(sizeof(float) * (size_t)(rows * cols));
  adapter_read_f32(w, tmp);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float value = tmp[r * cols + c];
      if (f16)
        ((uint16_t*)ggml_get_data(t))[c * rows + r] = adapter_float_to_half(value);
      else
        ((float*)ggml_get_data(t))[c * rows + r] = value;
    }
  free(tmp);
}

static int mlp(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, char* err,
               size_t err_len, int weights_f16) {
  if (n_in != 4 || n_out != 1) {
    snprintf(err, err_len, "ggml mlp.swiglu: expected 4 inputs and 1 output");
    return 1;
  }
  if (ggml_runtime_open(err, err_len) != 0) return 1;
  const int64_t T = in[0]->shape[0], Dm = in[0]->shape[1], F = in[1]->shape[1];
  const enum ggml_type wt = weights_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  const size_t ws = weights_f16 ? 2 : 4;
  const size_t bytes =
      (size_t)(T * Dm) * 4 * 2 + (size_t)(3 * Dm * F) * ws + (size_t)(T * F) * 4 * 3;
  struct ggml_context* ctx = ggml_runtime_context(bytes, 8);
  if (!ctx) {
    snprintf(err, err_len, "ggml: out of memory");
    return 1;
  }
  struct ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, Dm, T);
  struct ggml_tensor* w1 = ggml_new_tensor_2d(ctx, wt, Dm, F);
  struct ggml_tensor* w3 = ggml_new_tensor_2d(ctx, wt, Dm, F);
  struct ggml_tensor* w2 = ggml_new_tensor_2d(ctx, wt, F, Dm);
  adapter_read_f32(in[0], (float*)ggml_get_data(x));
  transposed(in[1], w1, weights_f16);
  transposed(in[2], w3, weights_f16);
  transposed(in[3], w2, weights_f16);
  struct ggml_tensor* gate = ggml_mul_mat(ctx, w1, x); /* [F, T] */
  struct ggml_tensor* up = ggml_mul_mat(ctx, w3, x);   /* [F, T] */
  struct ggml_tensor* h = ggml_swiglu_split(ctx, gate, up);
  struct ggml_tensor* y = ggml_mul_mat(ctx, w2, h); /* [Dm, T] = (T, Dm) row-major */
  const int rc = ggml_runtime_compute(ctx, y, err, err_len);
  if (rc == 0) adapter_write_f32(out[0], (const float*)ggml_get_data(y));
  ggml_free(ctx);
  return rc;
}

int ggml_mlp_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                 const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  return mlp(in, n_in, out, n_out, err, err_len, 0);
}

int ggml_mlp_f16_weights(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  return mlp(in, n_in, out, n_out, err, err_len, 1);
}
