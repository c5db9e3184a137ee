/* Each ONNX Runtime kernel as the graph a user's model holds: ONNX's
   Attention (opset 23) for attention.fwd and attention.decode,
   RMSNormalization (opset 23) and ORT's SimplifiedLayerNormalization for
   rmsnorm, and the SwiGLU MLP as MatMul, Sigmoid, Mul and MatMul. The model
   is written with the call's shapes and parameters (onnx_model.c) and run
   by ort_session.c; everything is f32, as the kernels are declared. No
   attention operator here returns a log-sum-exp, and the adapter computes
   none: the attention kernels declare outputs "o" (ort_kernels.c), and the
   lse moacert hands over is left as it came. Scale and epsilon are float
   attributes: the kernels declare params "f32", so the values handed over
   are floats, and the (float) casts below are exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <moacert/plugin_params.h>

#include "../common/adapter_tensors.h"
#include "onnx_model.h"
#include "ort_decls.h"
#include "ort_kernels.h"
#include "ort_session.h"

static float* f32_copy(const DLTensor* t) {
  float* p = (float*)malloc(sizeof(float) * (size_t)(adapter_numel(t) > 0 ? adapter_numel(t) : 1));
  if (p) adapter_read_f32(t, p);
  return p;
}

/* the keys row i of N sees among M: all, or moacert's bottom-right causal
   mask (MultiHeadAttention's bias below) */
static int64_t visible_to(int causal, int64_t i, int64_t N, int64_t M) {
  if (!causal) return M;
  const int64_t last = i + (M - N);
  return last < 0 ? 0 : (last + 1 < M ? last + 1 : M);
}

/* ONNX's Attention (opset 23). attention.fwd's causal mask is the
   operator's own is_causal attribute, which ONNX defines top-left aligned
   (query i sees keys j <= i, whatever M - N) and ORT computes so: the
   kernel declares causal_alignment "top_left" (ort_kernels.c). Decode's
   lengths are a (B, 1, 1, L) boolean mask, broadcast to (B, H, 1, L). */
static int attention(const DLTensor* q, const DLTensor* k, const DLTensor* v, const int64_t* lens,
                     int causal, float scale, DLTensor* o, char* err, size_t err_len) {
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const int64_t qs[4] = {B, H, N, D}, ks[4] = {B, Hkv, M, D};
  const int need_mask = lens != NULL;
  const int64_t mask_shape[4] = {B, 1, 1, M};
  const int mask_rank = 4;
  onnx_graph g = {{0}};
  onnx_graph_input(&g, "Q", ONNX_FLOAT, qs, 4);
  onnx_graph_input(&g, "K", ONNX_FLOAT, ks, 4);
  onnx_graph_input(&g, "V", ONNX_FLOAT, ks, 4);
  if (need_mask) onnx_graph_input(&g, "mask", ONNX_BOOL, mask_shape, mask_rank);
  onnx_graph_output(&g, "Y", ONNX_FLOAT, qs, 4);
  const char* inputs[] = {"Q", "K", "V", "mask"};
  const char* outputs[] = {"Y"};
  const onnx_attribute attributes[] = {{"scale", 1, 0, scale}, {"is_causal", 0, 1, 0}};
  onnx_graph_node(&g, "Attention", "", inputs, need_mask ? 4 : 3, outputs, 1, attributes,
                  causal ? 2 : 1);
  onnx_bytes model = onnx_model(&g, 23);

  /* every kernel here is f32: ORT reads moacert's tensors in place (it
     never writes an input), and writes its output into moacert's; only a
     decode cache with positions past lens is copied, to zero them */
  int partial = 0;
  for (int64_t b = 0; lens && b < B; ++b) partial |= lens[b] < M;
  float* qd = (float*)q->data;
  float* kd = partial ? f32_copy(k) : (float*)k->data;
  float* vd = partial ? f32_copy(v) : (float*)v->data;
  uint8_t* mask = (uint8_t*)malloc((size_t)(need_mask ? B * M : 1));
  int rc = 1;
  if (!kd || !vd || !mask) {
    snprintf(err, err_len, "out of memory");
    goto done;
  }
  if (lens) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < M; ++j) mask[b * M + j] = j < lens[b];
    /* past lens a cache is never read (the op's contract): zeroed, so that
       whatever the caller left there cannot reach a product */
    for (int64_t b = 0; partial && b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h) {
        const int64_t from = ((b * Hkv + h) * M + lens[b]) * D, count = (M - lens[b]) * D;
        memset(kd + from, 0, sizeof(float) * (size_t)count);
        memset(vd + from, 0, sizeof(float) * (size_t)count);
      }
  }
  const ort_tensor in[] = {{"Q", ONNX_FLOAT, qs, 4, qd},
                           {"K", ONNX_FLOAT, ks, 4, kd},
                           {"V", ONNX_FLOAT, ks, 4, vd},
                           {"mask", ONNX_BOOL, mask_shape, mask_rank, mask}};
  const ort_tensor result[] = {{"Y", ONNX_FLOAT, qs, 4, o->data}};
  rc = ort_run(&model, in, need_mask ? 4 : 3, result, 1, err, err_len);
done:
  if (partial) {
    free(kd);
    free(vd);
  }
  free(mask);
  onnx_bytes_free(&model);
  return rc;
}

/* (B, H, N, D) <-> (B, N, H * D): the 3-D layout of com.microsoft's
   attention operators */
static void to_bshd(const float* src, float* dst, int64_t B, int64_t H, int64_t N, int64_t D) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t n = 0; n < N; ++n)
        memcpy(dst + ((b * N + n) * H + h) * D, src + ((b * H + h) * N + n) * D,
               sizeof(float) * (size_t)D);
}

static void from_bshd(const float* src, float* dst, int64_t B, int64_t H, int64_t N, int64_t D) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t n = 0; n < N; ++n)
        memcpy(dst + ((b * H + h) * N + n) * D, src + ((b * N + n) * H + h) * D,
               sizeof(float) * (size_t)D);
}

/* com.microsoft's MultiHeadAttention: query, key and value (B, S, H * D),
   num_heads and scale attributes, and for a causal problem an additive
   attention_bias (1, 1, N, M) of 0 and -inf in moacert's bottom-right
   alignment, as a caller masking a KV cache or padding hands it one (the
   bias is where the operator's NaN for a row that sees no key shows,
   docs/deployed-kernels.md). It has no grouped heads: the kernel's
   envelope refuses them. */
static int multi_head_attention(const DLTensor* q, const DLTensor* k, const DLTensor* v, int causal,
                                float scale, DLTensor* o, char* err, size_t err_len) {
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t M = k->shape[2];
  const int64_t qs[3] = {B, N, H * D}, ks[3] = {B, M, H * D}, bias_shape[4] = {1, 1, N, M};
  onnx_graph g = {{0}};
  onnx_graph_input(&g, "query", ONNX_FLOAT, qs, 3);
  onnx_graph_input(&g, "key", ONNX_FLOAT, ks, 3);
  onnx_graph_input(&g, "value", ONNX_FLOAT, ks, 3);
  if (causal) onnx_graph_input(&g, "attention_bias", ONNX_FLOAT, bias_shape, 4);
  onnx_graph_output(&g, "output", ONNX_FLOAT, qs, 3);
  /* inputs: query, key, value, bias, key_padding_mask, attention_bias */
  const char* inputs[] = {"query", "key", "value", "", "", "attention_bias"};
  const char* outputs[] = {"output"};
  const onnx_attribute attributes[] = {{"num_heads", 0, H, 0}, {"scale", 1, 0, scale}};
  onnx_graph_node(&g, "MultiHeadAttention", "com.microsoft", inputs, causal ? 6 : 3, outputs, 1,
                  attributes, 2);
  onnx_bytes model = onnx_model(&g, 23);
  const size_t qn = (size_t)(B * H * N * D), kn = (size_t)(B * H * M * D);
  float* qd = f32_copy(q);
  float* kd = f32_copy(k);
  float* vd = f32_copy(v);
  float* qt = (float*)malloc(sizeof(float) * qn);
  float* kt = (float*)malloc(sizeof(float) * kn);
  float* vt = (float*)malloc(sizeof(float) * kn);
  float* bias = (float*)malloc(sizeof(float) * (size_t)(N * M > 0 ? N * M : 1));
  float* y = (float*)malloc(sizeof(float) * qn);
  int rc = 1;
  if (!qd || !kd || !vd || !qt || !kt || !vt || !bias || !y) {
    snprintf(err, err_len, "out of memory");
    goto done;
  }
  to_bshd(qd, qt, B, H, N, D);
  to_bshd(kd, kt, B, H, M, D);
  to_bshd(vd, vt, B, H, M, D);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j)
      bias[i * M + j] = j < visible_to(causal, i, N, M) ? 0 : -INFINITY;
  const ort_tensor in[] = {{"query", ONNX_FLOAT, qs, 3, qt},
                           {"key", ONNX_FLOAT, ks, 3, kt},
                           {"value", ONNX_FLOAT, ks, 3, vt},
                           {"attention_bias", ONNX_FLOAT, bias_shape, 4, bias}};
  const ort_tensor result[] = {{"output", ONNX_FLOAT, qs, 3, y}};
  rc = ort_run(&model, in, causal ? 4 : 3, result, 1, err, err_len);
  if (rc) goto done;
  from_bshd(y, qd, B, H, N, D);
  adapter_write_f32(o, qd);
done:
  free(qd);
  free(kd);
  free(vd);
  free(qt);
  free(kt);
  free(vt);
  free(bias);
  free(y);
  onnx_bytes_free(&model);
  return rc;
}

int ort_multi_head_attention(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                             const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "onnxruntime attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return multi_head_attention(in[0], in[1], in[2], moacert_flag(params, "causal"), scale, out[0],
                              err, err_len);
}

/* com.microsoft's GroupQueryAttention over a batch of B sequences: N
   query positions (B, N, H * D) with their own keys and values
   (B, N, Hkv * D), after a past of `past` positions (B, Hkv, past, D;
   no past inputs where it is 0), its present (B, Hkv, present, D), and
   seqlens_k and total_sequence_length; no rotary. */
static onnx_bytes group_query_attention_model(int64_t B, int64_t N, int64_t H, int64_t Hkv,
                                              int64_t D, int64_t past, int64_t present,
                                              float scale) {
  const int64_t qs[3] = {B, N, H * D}, ks[3] = {B, N, Hkv * D}, past_shape[4] = {B, Hkv, past, D};
  const int64_t present_shape[4] = {B, Hkv, present, D}, bs[1] = {B}, scalar_shape[1] = {1};
  onnx_graph g = {{0}};
  onnx_graph_input(&g, "query", ONNX_FLOAT, qs, 3);
  onnx_graph_input(&g, "key", ONNX_FLOAT, ks, 3);
  onnx_graph_input(&g, "value", ONNX_FLOAT, ks, 3);
  if (past > 0) {
    onnx_graph_input(&g, "past_key", ONNX_FLOAT, past_shape, 4);
    onnx_graph_input(&g, "past_value", ONNX_FLOAT, past_shape, 4);
  }
  onnx_graph_input(&g, "seqlens_k", ONNX_INT32, bs, 1);
  onnx_graph_input(&g, "total_sequence_length", ONNX_INT32, scalar_shape, 0);
  onnx_graph_output(&g, "output", ONNX_FLOAT, qs, 3);
  onnx_graph_output(&g, "present_key", ONNX_FLOAT, present_shape, 4);
  onnx_graph_output(&g, "present_value", ONNX_FLOAT, present_shape, 4);
  const char* inputs[] = {"query",
                          "key",
                          "value",
                          past > 0 ? "past_key" : "",
                          past > 0 ? "past_value" : "",
                          "seqlens_k",
                          "total_sequence_length"};
  const char* outputs[] = {"output", "present_key", "present_value"};
  const onnx_attribute attributes[] = {
      {"num_heads", 0, H, 0}, {"kv_num_heads", 0, Hkv, 0}, {"scale", 1, 0, scale}};
  onnx_graph_node(&g, "GroupQueryAttention", "com.microsoft", inputs, 7, outputs, 3, attributes, 3);
  return onnx_model(&g, 23);
}

/* com.microsoft's GroupQueryAttention as a decode step with a past KV
   cache, as onnxruntime-genai runs it: the query and the step's own key and
   value (B, 1, H * D) and (B, 1, Hkv * D), the past cache (B, Hkv, L, D) of
   which row b holds lens[b] - 1 positions, seqlens_k = lens - 1 (its total
   length less one) and total_sequence_length = max(lens); no rotary. The
   step's key and value are moacert's at position lens[b] - 1. */
static int group_query_attention_decode(const DLTensor* q, const DLTensor* k, const DLTensor* v,
                                        const int64_t* lens, float scale, DLTensor* o, char* err,
                                        size_t err_len) {
  const int64_t B = q->shape[0], H = q->shape[1], D = q->shape[3];
  const int64_t Hkv = k->shape[1], L = k->shape[2];
  int64_t longest = 1;
  for (int64_t b = 0; b < B; ++b) longest = lens[b] > longest ? lens[b] : longest;
  const int64_t qs[3] = {B, 1, H * D}, ks[3] = {B, 1, Hkv * D}, past[4] = {B, Hkv, L, D};
  const int64_t present[4] = {B, Hkv, L, D}, bs[1] = {B}, scalar_shape[1] = {1};
  onnx_bytes model = group_query_attention_model(B, 1, H, Hkv, D, L, L, scale);
  const size_t cache = (size_t)(B * Hkv * L * D);
  float* kd = f32_copy(k);
  float* vd = f32_copy(v);
  float* step_k = (float*)malloc(sizeof(float) * (size_t)(B * Hkv * D));
  float* step_v = (float*)malloc(sizeof(float) * (size_t)(B * Hkv * D));
  float* present_k = (float*)malloc(sizeof(float) * cache);
  float* present_v = (float*)malloc(sizeof(float) * cache);
  int32_t* seqlens = (int32_t*)malloc(sizeof(int32_t) * (size_t)B);
  int32_t total = (int32_t)longest;
  int rc = 1;
  if (!kd || !vd || !step_k || !step_v || !present_k || !present_v || !seqlens) {
    snprintf(err, err_len, "out of memory");
    goto done;
  }
  for (int64_t b = 0; b < B; ++b) {
    seqlens[b] = (int32_t)(lens[b] - 1);
    for (int64_t h = 0; h < Hkv; ++h) {
      const int64_t row = ((b * Hkv + h) * L + lens[b] - 1) * D;
      memcpy(step_k + (b * Hkv + h) * D, kd + row, sizeof(float) * (size_t)D);
      memcpy(step_v + (b * Hkv + h) * D, vd + row, sizeof(float) * (size_t)D);
      /* the past holds lens[b] - 1 positions; the rest is never read */
      memset(kd + row, 0, sizeof(float) * (size_t)((L - lens[b] + 1) * D));
      memset(vd + row, 0, sizeof(float) * (size_t)((L - lens[b] + 1) * D));
    }
  }
  const ort_tensor in[] = {{"query", ONNX_FLOAT, qs, 3, q->data},
                           {"key", ONNX_FLOAT, ks, 3, step_k},
                           {"value", ONNX_FLOAT, ks, 3, step_v},
                           {"past_key", ONNX_FLOAT, past, 4, kd},
                           {"past_value", ONNX_FLOAT, past, 4, vd},
                           {"seqlens_k", ONNX_INT32, bs, 1, seqlens},
                           {"total_sequence_length", ONNX_INT32, scalar_shape, 0, &total}};
  const ort_tensor result[] = {{"output", ONNX_FLOAT, qs, 3, o->data},
                               {"present_key", ONNX_FLOAT, present, 4, present_k},
                               {"present_value", ONNX_FLOAT, present, 4, present_v}};
  rc = ort_run(&model, in, 7, result, 3, err, err_len);
done:
  free(kd);
  free(vd);
  free(step_k);
  free(step_v);
  free(present_k);
  free(present_v);
  free(seqlens);
  onnx_bytes_free(&model);
  return rc;
}

/* com.microsoft's GroupQueryAttention as attention.fwd: a prompt, or a
   chunk of one, of N query positions after a past of M - N, as
   onnxruntime-genai runs chunked prefill. The operator is causal alone,
   and its mask is the KV cache's: the query at position M - N + i sees the
   keys at positions <= M - N + i, moacert's bottom-right alignment. Query
   (B, N, H * D), the chunk's own key and value (B, N, Hkv * D) (moacert's
   last N key positions), past_key and past_value (B, Hkv, M - N, D) (the
   first M - N, absent when M = N), seqlens_k = M - 1 (the total length less
   one) and total_sequence_length = M; no rotary. N > M (rows that see no
   key) cannot be put to it, nor several sequences with a past: the
   kernel's envelope keeps B = 1 and N <= 64 <= M (ort_kernels.c). */
static int group_query_attention_fwd(const DLTensor* q, const DLTensor* k, const DLTensor* v,
                                     float scale, DLTensor* o, char* err, size_t err_len) {
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2], P = M - N;
  if (P < 0) {
    snprintf(err, err_len,
             "GroupQueryAttention takes no more queries than keys (N = %lld > M = %lld)",
             (long long)N, (long long)M);
    return MOACERT_UNSUPPORTED;
  }
  const int64_t qs[3] = {B, N, H * D}, ks[3] = {B, N, Hkv * D}, past[4] = {B, Hkv, P, D};
  const int64_t present[4] = {B, Hkv, M, D}, bs[1] = {B}, scalar_shape[1] = {1};
  onnx_bytes model = group_query_attention_model(B, N, H, Hkv, D, P, M, scale);
  const size_t qn = (size_t)(B * H * N * D), chunk = (size_t)(B * Hkv * N * D);
  const size_t past_n = (size_t)(B * Hkv * P * D), cache = (size_t)(B * Hkv * M * D);
  float* qd = f32_copy(q);
  float* kd = f32_copy(k);
  float* vd = f32_copy(v);
  float* qt = (float*)malloc(sizeof(float) * qn);
  float* step_k = (float*)malloc(sizeof(float) * chunk);
  float* step_v = (float*)malloc(sizeof(float) * chunk);
  float* past_k = (float*)malloc(sizeof(float) * (past_n > 0 ? past_n : 1));
  float* past_v = (float*)malloc(sizeof(float) * (past_n > 0 ? past_n : 1));
  float* present_k = (float*)malloc(sizeof(float) * cache);
  float* present_v = (float*)malloc(sizeof(float) * cache);
  float* y = (float*)malloc(sizeof(float) * qn);
  int32_t* seqlens = (int32_t*)malloc(sizeof(int32_t) * (size_t)B);
  int32_t total = (int32_t)M;
  int rc = 1;
  if (!qd || !kd || !vd || !qt || !step_k || !step_v || !past_k || !past_v || !present_k ||
      !present_v || !y || !seqlens) {
    snprintf(err, err_len, "out of memory");
    goto done;
  }
  to_bshd(qd, qt, B, H, N, D);
  for (int64_t b = 0; b < B; ++b) {
    seqlens[b] = (int32_t)(M - 1);
    for (int64_t h = 0; h < Hkv; ++h) {
      const int64_t cache_row = (b * Hkv + h) * M * D;
      memcpy(past_k + (b * Hkv + h) * P * D, kd + cache_row, sizeof(float) * (size_t)(P * D));
      memcpy(past_v + (b * Hkv + h) * P * D, vd + cache_row, sizeof(float) * (size_t)(P * D));
    }
  }
  /* the chunk's keys and values, (B, N, Hkv * D): positions P .. M - 1 */
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t from = ((b * Hkv + h) * M + P + n) * D, to = ((b * N + n) * Hkv + h) * D;
        memcpy(step_k + to, kd + from, sizeof(float) * (size_t)D);
        memcpy(step_v + to, vd + from, sizeof(float) * (size_t)D);
      }
  const ort_tensor in[] = {{"query", ONNX_FLOAT, qs, 3, qt},
                           {"key", ONNX_FLOAT, ks, 3, step_k},
                           {"value", ONNX_FLOAT, ks, 3, step_v},
                           {"past_key", ONNX_FLOAT, past, 4, past_k},
                           {"past_value", ONNX_FLOAT, past, 4, past_v},
                           {"seqlens_k", ONNX_INT32, bs, 1, seqlens},
                           {"total_sequence_length", ONNX_INT32, scalar_shape, 0, &total}};
  const ort_tensor without_past[] = {in[0], in[1], in[2], in[5], in[6]};
  const ort_tensor result[] = {{"output", ONNX_FLOAT, qs, 3, y},
                               {"present_key", ONNX_FLOAT, present, 4, present_k},
                               {"present_value", ONNX_FLOAT, present, 4, present_v}};
  rc = P > 0 ? ort_run(&model, in, 7, result, 3, err, err_len)
             : ort_run(&model, without_past, 5, result, 3, err, err_len);
  if (rc) goto done;
  from_bshd(y, qd, B, H, N, D);
  adapter_write_f32(o, qd);
done:
  free(qd);
  free(kd);
  free(vd);
  free(qt);
  free(step_k);
  free(step_v);
  free(past_k);
  free(past_v);
  free(present_k);
  free(present_v);
  free(y);
  free(seqlens);
  onnx_bytes_free(&model);
  return rc;
}

int ort_group_query_attention_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out,
                                  int n_out, const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "onnxruntime attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  if (!moacert_flag(params, "causal")) {
    snprintf(err, err_len, "GroupQueryAttention is causal alone");
    return MOACERT_UNSUPPORTED;
  }
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return group_query_attention_fwd(in[0], in[1], in[2], scale, out[0], err, err_len);
}

int ort_group_query_attention_decode(const DLTensor* const* in, int n_in, DLTensor* const* out,
                                     int n_out, const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 4 || n_out != 2) {
    snprintf(err, err_len, "onnxruntime attention.decode: expected 4 inputs and 2 outputs");
    return 1;
  }
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return group_query_attention_decode(in[0], in[1], in[2], (const int64_t*)in[3]->data, scale,
                                      out[0], err, err_len);
}

int ort_attention_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "onnxruntime attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return attention(in[0], in[1], in[2], NULL, moacert_flag(params, "causal"), scale, out[0], err,
                   err_len);
}

int ort_attention_decode(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 4 || n_out != 2) {
    snprintf(err, err_len, "onnxruntime attention.decode: expected 4 inputs and 2 outputs");
    return 1;
  }
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return attention(in[0], in[1], in[2], (const int64_t*)in[3]->data, 0, scale, out[0], err,
                   err_len);
}

/* rmsnorm as one node of `op_type` over the last axis, stash_type 1 (f32
   statistics), eps as a float attribute (the kernels declare params "f32") */
static int rms_norm(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                    const char* params, char* err, size_t err_len, const char* op_type) {
  adapter_begin_call(params);
  if (n_in != 2 || n_out != 1) {
    snprintf(err, err_len, "onnxruntime rmsnorm: expected 2 inputs and 1 output");
    return 1;
  }
  const int64_t xs[2] = {in[0]->shape[0], in[0]->shape[1]}, ws[1] = {in[1]->shape[0]};
  onnx_graph g = {{0}};
  onnx_graph_input(&g, "X", ONNX_FLOAT, xs, 2);
  onnx_graph_input(&g, "scale", ONNX_FLOAT, ws, 1);
  onnx_graph_output(&g, "Y", ONNX_FLOAT, xs, 2);
  const char* inputs[] = {"X", "scale"};
  const char* outputs[] = {"Y"};
  const onnx_attribute attributes[] = {{"axis", 0, -1, 0},
                                       {"epsilon", 1, 0, (float)moacert_param(params, "eps", 1e-6)},
                                       {"stash_type", 0, 1, 0}};
  onnx_graph_node(&g, op_type, "", inputs, 2, outputs, 1, attributes, 3);
  onnx_bytes model = onnx_model(&g, 23);
  /* f32: read in place, written into moacert's output */
  const ort_tensor ins[] = {{"X", ONNX_FLOAT, xs, 2, in[0]->data},
                            {"scale", ONNX_FLOAT, ws, 1, in[1]->data}};
  const ort_tensor result[] = {{"Y", ONNX_FLOAT, xs, 2, out[0]->data}};
  const int rc = ort_run(&model, ins, 2, result, 1, err, err_len);
  onnx_bytes_free(&model);
  return rc;
}

int ort_rms_normalization(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                          const char* params, char* err, size_t err_len) {
  return rms_norm(in, n_in, out, n_out, params, err, err_len, "RMSNormalization");
}

int ort_simplified_layer_norm(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                              const char* params, char* err, size_t err_len) {
  return rms_norm(in, n_in, out, n_out, params, err, err_len, "SimplifiedLayerNormalization");
}

/* y = (silu(x w1) * (x w3)) w2 as an exported PyTorch model writes it:
   MatMul, MatMul, Sigmoid, Mul, Mul, MatMul (ORT may fuse what it
   recognises; the kernel certified is what the session runs) */
int ort_matmul_swiglu(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                      const char* params, char* err, size_t err_len) {
  adapter_begin_call(params);
  if (n_in != 4 || n_out != 1) {
    snprintf(err, err_len, "onnxruntime mlp.swiglu: expected 4 inputs and 1 output");
    return 1;
  }
  const int64_t T = in[0]->shape[0], Dm = in[0]->shape[1], F = in[1]->shape[1];
  const int64_t xs[2] = {T, Dm}, w13[2] = {Dm, F}, w2s[2] = {F, Dm};
  onnx_graph g = {{0}};
  onnx_graph_input(&g, "x", ONNX_FLOAT, xs, 2);
  onnx_graph_input(&g, "w1", ONNX_FLOAT, w13, 2);
  onnx_graph_input(&g, "w3", ONNX_FLOAT, w13, 2);
  onnx_graph_input(&g, "w2", ONNX_FLOAT, w2s, 2);
  onnx_graph_output(&g, "y", ONNX_FLOAT, xs, 2);
  const char* gate_in[] = {"x", "w1"};
  const char* gate_out[] = {"gate"};
  const char* up_in[] = {"x", "w3"};
  const char* up_out[] = {"up"};
  const char* sig_in[] = {"gate"};
  const char* sig_out[] = {"sig"};
  const char* silu_in[] = {"gate", "sig"};
  const char* silu_out[] = {"silu"};
  const char* h_in[] = {"silu", "up"};
  const char* h_out[] = {"h"};
  const char* y_in[] = {"h", "w2"};
  const char* y_out[] = {"y"};
  onnx_graph_node(&g, "MatMul", "", gate_in, 2, gate_out, 1, NULL, 0);
  onnx_graph_node(&g, "MatMul", "", up_in, 2, up_out, 1, NULL, 0);
  onnx_graph_node(&g, "Sigmoid", "", sig_in, 1, sig_out, 1, NULL, 0);
  onnx_graph_node(&g, "Mul", "", silu_in, 2, silu_out, 1, NULL, 0);
  onnx_graph_node(&g, "Mul", "", h_in, 2, h_out, 1, NULL, 0);
  onnx_graph_node(&g, "MatMul", "", y_in, 2, y_out, 1, NULL, 0);
  onnx_bytes model = onnx_model(&g, 23);
  /* f32: read in place, written into moacert's output */
  const ort_tensor ins[] = {{"x", ONNX_FLOAT, xs, 2, in[0]->data},
                            {"w1", ONNX_FLOAT, w13, 2, in[1]->data},
                            {"w3", ONNX_FLOAT, w13, 2, in[2]->data},
                            {"w2", ONNX_FLOAT, w2s, 2, in[3]->data}};
  const ort_tensor result[] = {{"y", ONNX_FLOAT, xs, 2, out[0]->data}};
  const int rc = ort_run(&model, ins, 4, result, 1, err, err_len);
  onnx_bytes_free(&model);
  return rc;
}
