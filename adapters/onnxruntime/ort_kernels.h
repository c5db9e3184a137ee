/* The ONNX Runtime adapter's kernels (ort_graphs.c), each a moacert_kernel
   run function; the table that declares them is ort_kernels.c. */
#ifndef MOACERT_ORT_KERNELS_H
#define MOACERT_ORT_KERNELS_H

#include <moacert/plugin.h>

#define ORT_KERNEL(name)                                                         \
  int name(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
           const char* params, char* err, size_t err_len)

ORT_KERNEL(ort_attention_fwd);
ORT_KERNEL(ort_attention_decode);
ORT_KERNEL(ort_multi_head_attention);
ORT_KERNEL(ort_group_query_attention_fwd);
ORT_KERNEL(ort_group_query_attention_decode);
ORT_KERNEL(ort_rms_normalization);
ORT_KERNEL(ort_simplified_layer_norm);
ORT_KERNEL(ort_matmul_swiglu);

#endif
