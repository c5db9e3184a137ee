/* attention.fwd and attention.decode through ggml_flash_attn_ext, as
   llama.cpp calls it (llama-graph.cpp's build_attn_mha): q f32
   [D, N, H, B], k and v [D, M, Hkv, B] in the cache's type (f32, or f16 as
   llama.cpp's default KV cache), an f16 mask of 0 and -inf, the precision
   set to GGML_PREC_F32, no ALiBi and no soft-cap. The result is
   [D, H, N, B]: o alone (ggml computes no log-sum-exp, and the kernels
   declare outputs "o": the lse moacert hands over is left as it came). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <moacert/plugin_params.h>

#include "../common/adapter_tensors.h"
#include "ggml_kernels.h"
#include "ggml_runtime.h"

enum { HALF_ZERO = 0x0000, HALF_MINUS_INF = 0xFC00 };

/* a mask row's entries: 0 for a key row i sees, -inf for one it does not */
static void fill_mask(uint16_t* row, int64_t M, int64_t visible_to) {
  for (int64_t j = 0; j < M; ++j) row[j] = j < visible_to ? HALF_ZERO : HALF_MINUS_INF;
}

/* the keys row i of N sees among M: all, or the bottom-right causal mask,
   j <= i + (M - N). ggml has no causal flag: it takes whatever mask it is
   handed, and llama.cpp builds an explicit f16 one of 0 and -inf from its KV
   cache, the query at position p seeing the cells at positions <= p, which
   for a cache of M positions ending with the N queries is bottom-right.
   The adapter builds the mask as llama.cpp does, so the kernels keep the
   default alignment (ggml_kernels.c). */
static int64_t visible_to(int causal, int64_t i, int64_t N, int64_t M) {
  if (!causal) return M;
  const int64_t last = i + (M - N);
  return last < 0 ? 0 : (last + 1 < M ? last + 1 : M);
}

/* One call of ggml_flash_attn_ext. lens: decode's per-sequence lengths
   (NULL for attention.fwd), causal: attention.fwd's mask. */
static int attention(const DLTensor* q, const DLTensor* k, const DLTensor* v, const int64_t* lens,
                     int causal, float scale, DLTensor* o, int kv_f16, char* err, size_t err_len) {
  if (ggml_runtime_open(err, err_len) != 0) return 1;
  const int64_t B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const enum ggml_type kv_type = kv_f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  const size_t kv_size = kv_f16 ? 2 : 4;
  const int need_mask = causal || lens;
  const int64_t mask_rows = lens ? 1 : N, mask_seqs = lens ? B : 1;
  const size_t bytes = (size_t)(B * H * N * D) * 4 * 2 + (size_t)(B * Hkv * M * D) * kv_size * 2 +
                       (need_mask ? (size_t)(M * mask_rows * mask_seqs) * 2 : 0);
  struct ggml_context* ctx = ggml_runtime_context(bytes, 5);
  if (!ctx) {
    snprintf(err, err_len, "ggml: out of memory for a context of %zu bytes", bytes);
    return 1;
  }
  struct ggml_tensor* tq = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, N, H, B);
  struct ggml_tensor* tk = ggml_new_tensor_4d(ctx, kv_type, D, M, Hkv, B);
  struct ggml_tensor* tv = ggml_new_tensor_4d(ctx, kv_type, D, M, Hkv, B);
  /* moacert's row-major (B, H, N, D) is ggml's [D, N, H, B] */
  adapter_read_f32(q, (float*)ggml_get_data(tq));
  if (kv_f16) {
    adapter_read_f16(k, (uint16_t*)ggml_get_data(tk));
    adapter_read_f16(v, (uint16_t*)ggml_get_data(tv));
  } else {
    adapter_read_f32(k, (float*)ggml_get_data(tk));
    adapter_read_f32(v, (float*)ggml_get_data(tv));
  }
  struct ggml_tensor* mask = NULL;
  if (need_mask) {
    mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, M, mask_rows, 1, mask_seqs);
    uint16_t* m = (uint16_t*)ggml_get_data(mask);
    for (int64_t s = 0; s < mask_seqs; ++s)
      for (int64_t i = 0; i < mask_rows; ++i)
        fill_mask(m + (s * mask_rows + i) * M, M, lens ? lens[s] : visible_to(causal, i, N, M));
    if (lens) {
      /* a cache's positions past lens are never read (the op's contract);
         they are zeroed here so that whatever the caller left there cannot
         reach ggml's dot products before the mask skips them */
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hkv; ++h) {
          const size_t from = (size_t)(((b * Hkv + h) * M + lens[b]) * D) * kv_size;
          const size_t count = (size_t)((M - lens[b]) * D) * kv_size;
          memset((char*)ggml_get_data(tk) + from, 0, count);
          memset((char*)ggml_get_data(tv) + from, 0, count);
        }
    }
  }
  struct ggml_tensor* out = ggml_flash_attn_ext(ctx, tq, tk, tv, mask, scale, 0.0f, 0.0f);
  ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
  if (ggml_runtime_compute(ctx, out, err, err_len) != 0) {
    ggml_free(ctx);
    return 1;
  }
  /* [D, H, N, B] back to (B, H, N, D) */
  const float* r = (const float*)ggml_get_data(out);
  float* ob = (float*)malloc(sizeof(float) * (size_t)(B * H * N * D));
  if (!ob) {
    ggml_free(ctx);
    snprintf(err, err_len, "out of memory");
    return 1;
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t n = 0; n < N; ++n)
        memcpy(ob + ((b * H + h) * N + n) * D, r + ((b * N + n) * H + h) * D,
               sizeof(float) * (size_t)D);
  adapter_write_f32(o, ob);
  free(ob);
  ggml_free(ctx);
  return 0;
}

static int attention_fwd(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                         const char* params, char* err, size_t err_len, int kv_f16) {
  adapter_begin_call(params);
  if (n_in != 3 || n_out != 2) {
    snprintf(err, err_len, "ggml attention.fwd: expected 3 inputs and 2 outputs");
    return 1;
  }
  /* the kernel declares params "f32": the scale handed over is a float */
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return attention(in[0], in[1], in[2], NULL, moacert_flag(params, "causal"), scale, out[0], kv_f16,
                   err, err_len);
}

static int attention_decode(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                            const char* params, char* err, size_t err_len, int kv_f16) {
  adapter_begin_call(params);
  if (n_in != 4 || n_out != 2) {
    snprintf(err, err_len, "ggml attention.decode: expected 4 inputs and 2 outputs");
    return 1;
  }
  const float scale = (float)moacert_param(params, "scale", 1 / sqrt((double)in[0]->shape[3]));
  return attention(in[0], in[1], in[2], (const int64_t*)in[3]->data, 0, scale, out[0], kv_f16, err,
                   err_len);
}

int ggml_flash_attn_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                        const char* params, char* err, size_t err_len) {
  return attention_fwd(in, n_in, out, n_out, params, err, err_len, 0);
}

int ggml_flash_attn_f16_cache(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                              const char* params, char* err, size_t err_len) {
  return attention_fwd(in, n_in, out, n_out, params, err, err_len, 1);
}

int ggml_decode_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                    const char* params, char* err, size_t err_len) {
  return attention_decode(in, n_in, out, n_out, params, err, err_len, 0);
}

int ggml_decode_f16_cache(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                          const char* params, char* err, size_t err_len) {
  return attention_decode(in, n_in, out, n_out, params, err, err_len, 1);
}
