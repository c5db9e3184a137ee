/* The ggml adapter: llama.cpp's CPU kernels (ggml 0.25.1, as
   @node-llama-cpp/linux-x64 3.22.1 ships them) as moacert plugin kernels
   (ABI 4). Each row of the table is one kernel: its op, name, format,
   envelope and arithmetic as the library documents it, or as measured, and
   how it takes its problem (docs/design.md#conventions):
   - outputs "o" for attention: ggml_flash_attn_ext returns no log-sum-exp,
     and the adapter computes none, so certify judges o alone;
   - params "f32": ggml_flash_attn_ext's scale and ggml_rms_norm's eps are
     floats (the MLP takes none);
   - the causal alignment stays moacert's bottom-right: ggml has no causal
     flag, llama.cpp builds an explicit f16 mask of its KV cache
     (llama-kv-cache's set_input_kq_mask: the query at position p sees the
     cache's keys at positions <= p, i.e. bottom-right), and the adapter
     builds that mask the same way (ggml_attention.c).
   docs/deployed-kernels.md gives the verdicts. Every kernel takes
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

/* an attention kernel: o alone, scale read as a float, each tensor in
   `formats_` (NULL: all in the dtype) */
#define GGML_ATTENTION(op_, name_, dtype_, formats_, run_, envelope_, arithmetic_)     \
  {                                                                                    \
    .op = op_, .name = name_, .dtype = dtype_, .accepts_strided = 0, .run = run_,      \
    .envelope = envelope_, .device = "cpu", .arithmetic = arithmetic_, .outputs = "o", \
    .params = "f32", .tensor_formats = formats_                                        \
  }

/* llama.cpp's KV cache in f16 (its default): an f32 query against f16 keys
   and values, an f32 output (docs/design.md#per-tensor-formats) */
#define LLAMA_F16_CACHE "q=f32,k=f16,v=f16,o=f32"

static const moacert_kernel kernels[] = {
    GGML_ATTENTION("attention.fwd", "flash_attn_ext", "f32", NULL, ggml_flash_attn_f32, NULL,
                   "standard"),
    GGML_ATTENTION("attention.fwd", "flash_attn_ext_f16_cache", "f16", LLAMA_F16_CACHE,
                   ggml_flash_attn_f16_cache, NULL, "standard"),
    GGML_ATTENTION("attention.decode", "decode", "f32", NULL, ggml_decode_f32, NULL, "standard"),
    GGML_ATTENTION("attention.decode", "decode_f16_cache", "f16", LLAMA_F16_CACHE,
                   ggml_decode_f16_cache, NULL, "standard"),
    /* q in f16 too: ggml rounds an f32 q to f16 against f16 keys, a
       rounding of an input the vocabulary has no name for, so the value
       sum's declaration is measured where q is already f16 */
    GGML_ATTENTION("attention.decode", "decode_f16_cache_as_measured", "f16", NULL,
                   ggml_decode_f16_cache, &f16_value_sum_envelope, "sum.PV=f16"),
    /* llama.cpp's formats, declared as measured: q rounded to f16 against
       the f16 keys, the value sum in f16 */
    GGML_ATTENTION("attention.decode", "decode_f16_cache_mixed_as_measured", "f16", LLAMA_F16_CACHE,
                   ggml_decode_f16_cache, &f16_value_sum_envelope, "round.q=f16, sum.PV=f16"),
    {.op = "rmsnorm",
     .name = "rms_norm",
     .dtype = "f32",
     .accepts_strided = 0,
     .run = ggml_rmsnorm_f32,
     .device = "cpu",
     .arithmetic = "standard",
     .params = "f32"},
    {.op = "mlp.swiglu",
     .name = "swiglu_mlp",
     .dtype = "f32",
     .accepts_strided = 0,
     .run = ggml_mlp_f32,
     .device = "cpu",
     .arithmetic = "standard"},
    {.op = "mlp.swiglu",
     .name = "swiglu_mlp_f16_weights",
     .dtype = "f16",
     .accepts_strided = 0,
     .run = ggml_mlp_f16_weights,
     .device = "cpu",
     .arithmetic = "round.h=f16"},
    /* the same in llama.cpp's formats, f16 weights and f32 activations:
       ggml rounds x to f16 too before the products, an input rounding the
       vocabulary has no name for, so this declaration fails (the finding) */
    {.op = "mlp.swiglu",
     .name = "swiglu_mlp_f16_weights_f32_x",
     .dtype = "f16",
     .accepts_strided = 0,
     .run = ggml_mlp_f16_weights,
     .device = "cpu",
     .arithmetic = "round.h=f16",
     .tensor_formats = "x=f32,w1=f16,w3=f16,w2=f16,y=f32"},
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
