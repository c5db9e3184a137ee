/* ggml as the adapter loads and runs it (ggml_runtime.c). */
#ifndef MOACERT_GGML_RUNTIME_H
#define MOACERT_GGML_RUNTIME_H

#include <stddef.h>

#include "ggml_decls.h"

/* Checks ggml's version and loads the CPU backend llama.cpp would pick (the
   libggml-cpu-<cpu>.so variant with the highest ggml_backend_score); 0, or
   -1 after writing one line naming the library and what is missing. */
int ggml_runtime_open(char* err, size_t err_len);

/* A context for a graph whose tensors hold `tensor_bytes` in `n_tensors`
   tensors, with room for the CPU backend's work buffer; NULL when out of
   memory. */
struct ggml_context* ggml_runtime_context(size_t tensor_bytes, int n_tensors);

/* Runs the graph of `out` on adapter_threads() threads; 0, or non-zero
   after writing a message. */
int ggml_runtime_compute(struct ggml_context* ctx, struct ggml_tensor* out, char* err,
                         size_t err_len);

/* The CPU variant loaded ("haswell", "skylakex", ...), for messages. */
const char* ggml_runtime_cpu_variant(void);

#endif
