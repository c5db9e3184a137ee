/* What both adapters (adapters/ggml, adapters/onnxruntime) do around a
   library's kernel: read moacert's tensors (f32 or f16, row-major: every
   adapter kernel declares accepts_strided 0) into the f32 or f16 buffers a
   library takes, write its f32 results back in the case's format, and read
   the thread count (docs/deployed-kernels.md). */
#ifndef MOACERT_ADAPTER_TENSORS_H
#define MOACERT_ADAPTER_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <moacert/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The number of elements of a tensor. */
int64_t adapter_numel(const DLTensor* t);

/* 1 when t holds f16, 0 for f32 (the only formats the adapters declare). */
int adapter_is_f16(const DLTensor* t);

/* t's elements as f32 into dst (f16 widens exactly). */
void adapter_read_f32(const DLTensor* t, float* dst);

/* t's elements as f16 into dst (f32 is rounded to nearest even: only used
   where t already holds f16, or where the adapter says it rounds). */
void adapter_read_f16(const DLTensor* t, uint16_t* dst);

/* src (f32) into t, rounded to t's format. */
void adapter_write_f32(DLTensor* t, const float* src);

/* Each kernel's call begins here: the thread count its library runs with
   is the params' "threads" (plugin ABI 4: certify's --threads, and the
   determinism check's 1 and 2), else MOACERT_ADAPTER_THREADS, else 1. */
void adapter_begin_call(const char* params);

/* The current call's thread count (adapter_begin_call). */
int adapter_threads(void);

/* f16 bits <-> f32 (IEEE binary16, round to nearest even). */
float adapter_half_to_float(uint16_t h);
uint16_t adapter_float_to_half(float f);

#ifdef __cplusplus
}
#endif

#endif
