/* The ggml adapter's kernels (ggml_attention.c, ggml_rows.c), each a
   moacert_kernel run function; the table that declares them is
   ggml_kernels.c. */
#ifndef MOACERT_GGML_KERNELS_H
#define MOACERT_GGML_KERNELS_H

#include <moacert/plugin.h>

#define GGML_KERNEL(name)                                                        \
  int name(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out, \
           const char* params, char* err, size_t err_len)

GGML_KERNEL(ggml_flash_attn_f32);
GGML_KERNEL(ggml_flash_attn_f16_cache);
GGML_KERNEL(ggml_decode_f32);
GGML_KERNEL(ggml_decode_f16_cache);
GGML_KERNEL(ggml_rmsnorm_f32);
GGML_KERNEL(ggml_mlp_f32);
GGML_KERNEL(ggml_mlp_f16_weights);

#endif
