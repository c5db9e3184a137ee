/* The ggml adapter: llama.cpp's CPU kernels (ggml 0.25.1, as
   @node-llama-cpp/linux-x64 3.22.1 ships them) as moacert plugin kernels
   (ABI 3). Each row of the table is one kernel: its op, name, format,
   envelope and arithmetic as the library documents it, or as measured
   (docs/deployed-kernels.md gives the verdicts). Every kernel takes
   row-major tensors (accepts_strided 0): the wrapper copies them into
   ggml's tensors anyway. */
#include <stdio.h>

#include "ggml_kernels.h"
#include "ggml_runtime.h"

/* ggml documents GGML_PREC_F32 as f32 accumulation, and the kernels
   declare the standard model; where ggml departs from it (the f16 KV
   cache's value sum) certify fails, which is the finding. */
/* ggml's f16 value sum, declared as measured (sum.PV=f16), is bounded only
   while its L keys keep (L + 3) u_f16 < 1/2 (docs/bounds.md#declared-arithmetic):
   the declaration covers contexts up to 1020 keys, and says nothing past them. */
static const moacert_axis f16_value_sum_axes[] = {{"L", 1, 1020, NULL, 0, 0}};
static const moacert_envelope f16_value_sum_envelope = {f16_value_sum_axes, 1, 0};

static const moacert_kernel kernels[] = {
    /* op              name                         dtype  strided run envelope device arithmetic */
    {"attention.fwd", "flash_attn_ext", "f32", 0, ggml_flash_attn_f32, NULL, "cpu", "standard"},
    {"attention.fwd", "flash_attn_ext_f16_cache", "f16", 0, ggml_flash_attn_f16_cache, NULL, "cpu",
     "standard"},
    {"attention.decode", "decode", "f32", 0, ggml_decode_f32, NULL, "cpu", "standard"},
    {"attention.decode", "decode_f16_cache", "f16", 0, ggml_decode_f16_cache, NULL, "cpu",
     "standard"},
    {"attention.decode", "decode_f16_cache_as_measured", "f16", 0, ggml_decode_f16_cache,
     &f16_value_sum_envelope, "cpu", "sum.PV=f16"},
    {"rmsnorm", "rms_norm", "f32", 0, ggml_rmsnorm_f32, NULL, "cpu", "standard"},
    {"mlp.swiglu", "swiglu_mlp", "f32", 0, ggml_mlp_f32, NULL, "cpu", "standard"},
    {"mlp.swiglu", "swiglu_mlp_f16_weights", "f16", 0, ggml_mlp_f16_weights, NULL, "cpu",
     "round.h=f16"},
};

static char g_error[512];

/* Why the table is missing, for moacert's one line (docs/plugins.md). */
const char* moacert_plugin_error(void) {
  return g_error;
}

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *abi_version = MOACERT_PLUGIN_ABI;
  if (ggml_runtime_open(g_error, sizeof g_error) != 0) {
    *count = -1;
    return NULL;
  }
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  return kernels;
}
