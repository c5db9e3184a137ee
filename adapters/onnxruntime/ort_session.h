/* ONNX Runtime as the adapter loads and runs it (ort_session.c). */
#ifndef MOACERT_ORT_SESSION_H
#define MOACERT_ORT_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "onnx_model.h"

/* Checks the library's version and creates the environment; 0, or -1
   after writing one line naming the library and what is missing. */
int ort_open(char* err, size_t err_len);

/* A tensor handed to or taken from a run: its name in the graph, element
   type (ONNX_FLOAT, ONNX_BOOL), shape and data (the caller's; an output's
   is filled with the run's result, of numel elements). */
typedef struct ort_tensor {
  const char* name;
  int elem_type;
  const int64_t* shape;
  int rank;
  void* data;
} ort_tensor;

/* Runs `model` (a session is kept for the last model run, so that repeated
   calls of one shape, as bench makes, do not pay its creation); 0, or
   non-zero after writing ONNX Runtime's message. */
int ort_run(const onnx_bytes* model, const ort_tensor* inputs, int n_inputs,
            const ort_tensor* outputs, int n_outputs, char* err, size_t err_len);

#endif
