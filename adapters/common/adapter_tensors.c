/* adapter_tensors.h's helpers; why each exists: there. */
#include "adapter_tensors.h"

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
