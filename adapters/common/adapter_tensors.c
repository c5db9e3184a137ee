/* adapter_tensors.h's helpers; why each exists: there. */
#include "adapter_tensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <moacert/plugin_params.h>

int64_t adapter_numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

int adapter_is_f16(const DLTensor* t) {
  return t->dtype.code == kDLFloat && t->dtype.bits == 16;
}

float adapter_half_to_float(uint16_t h) {
  _Float16 f;
  memcpy(&f, &h, sizeof f);
  return (float)f;
}

uint16_t adapter_float_to_half(float f) {
  const _Float16 h = (_Float16)f;
  uint16_t bits;
  memcpy(&bits, &h, sizeof bits);
  return bits;
}

void adapter_read_f32(const DLTensor* t, float* dst) {
  const int64_t n = adapter_numel(t);
  if (adapter_is_f16(t)) {
    const uint16_t* src = (const uint16_t*)t->data;
    for (int64_t i = 0; i < n; ++i) dst[i] = adapter_half_to_float(src[i]);
  } else {
    memcpy(dst, t->data, (size_t)n * sizeof(float));
  }
}

void adapter_read_f16(const DLTensor* t, uint16_t* dst) {
  const int64_t n = adapter_numel(t);
  if (adapter_is_f16(t)) {
    memcpy(dst, t->data, (size_t)n * sizeof(uint16_t));
  } else {
    const float* src = (const float*)t->data;
    for (int64_t i = 0; i < n; ++i) dst[i] = adapter_float_to_half(src[i]);
  }
}

void adapter_write_f32(DLTensor* t, const float* src) {
  const int64_t n = adapter_numel(t);
  if (adapter_is_f16(t)) {
    uint16_t* dst = (uint16_t*)t->data;
    for (int64_t i = 0; i < n; ++i) dst[i] = adapter_float_to_half(src[i]);
  } else {
    memcpy(t->data, src, (size_t)n * sizeof(float));
  }
}

static double element(const DLTensor* t, int64_t i) {
  return adapter_is_f16(t) ? (double)adapter_half_to_float(((const uint16_t*)t->data)[i])
                           : (double)((const float*)t->data)[i];
}

int adapter_skip_lse(void) {
  return getenv("MOACERT_ADAPTER_BENCH_WITHOUT_LSE") != NULL;
}

void adapter_lse(const DLTensor* q, const DLTensor* k, double scale, int64_t visible_from,
                 int64_t visible_to, int64_t b, int64_t h, int64_t n, double* lse_out) {
  if (adapter_skip_lse()) {
    *lse_out = NAN;
    return;
  }
  const int64_t H = q->shape[1], N = q->shape[2], D = q->shape[3];
  const int64_t Hkv = k->shape[1], M = k->shape[2];
  const int64_t hk = h / (H / Hkv);
  const int64_t qrow = ((b * H + h) * N + n) * D;
  double max = -INFINITY, sum = 0;
  /* two passes: the max, then the sum of exp(s - max), so that no score
     overflows exp in f64 */
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t j = visible_from; j < visible_to; ++j) {
      const int64_t krow = ((b * Hkv + hk) * M + j) * D;
      double s = 0;
      for (int64_t d = 0; d < D; ++d) s += element(q, qrow + d) * element(k, krow + d);
      s *= scale;
      if (pass == 0)
        max = s > max ? s : max;
      else
        sum += exp(s - max);
    }
    if (max == -INFINITY) break; /* a row that sees no key */
  }
  *lse_out = max == -INFINITY ? -INFINITY : max + log(sum);
}

/* One call at a time per process (a plugin host or worker): the current
   call's count. */
static int g_threads = 1;

void adapter_begin_call(const char* params) {
  const char* s = getenv("MOACERT_ADAPTER_THREADS");
  const int fallback = s && atoi(s) > 0 ? atoi(s) : 1;
  const double n = params ? moacert_param(params, "threads", fallback) : fallback;
  g_threads = n >= 1 && n <= 1024 ? (int)n : fallback;
}

int adapter_threads(void) {
  return g_threads;
}
