/* The ONNX Runtime adapter: ORT 1.30.0's CPU kernels (as onnxruntime-node
   1.30.0 ships them) as moacert plugin kernels (ABI 3). Each row of the
   table is one kernel: its op, name, format, envelope and arithmetic
   (docs/deployed-kernels.md gives the verdicts). Every kernel takes
   row-major tensors (accepts_strided 0). */
#include "ort_kernels.h"
#include "ort_session.h"

/* com.microsoft's MultiHeadAttention has one head count for q, k and v */
static const moacert_envelope mha_envelope = {NULL, 0, MOACERT_REFUSES_GROUPED_HEADS};

/* com.microsoft's GroupQueryAttention: "head_size must be a multiple of 8" */
static const moacert_axis gqa_axes[] = {{"D", 0, 0, NULL, 0, 8}};
static const moacert_envelope gqa_envelope = {gqa_axes, 1, 0};

static const moacert_kernel kernels[] = {
    /* op, name, dtype, strided, run, envelope, device, arithmetic */
    {"attention.fwd", "attention", "f32", 0, ort_attention_fwd, NULL, "cpu", "standard"},
    {"attention.fwd", "multi_head_attention", "f32", 0, ort_multi_head_attention, &mha_envelope,
     "cpu", "standard"},
    {"attention.decode", "attention_decode", "f32", 0, ort_attention_decode, NULL, "cpu",
     "standard"},
    {"attention.decode", "group_query_attention", "f32", 0, ort_group_query_attention_decode,
     &gqa_envelope, "cpu", "standard"},
    {"rmsnorm", "rms_normalization", "f32", 0, ort_rms_normalization, NULL, "cpu", "standard"},
    {"rmsnorm", "simplified_layer_norm", "f32", 0, ort_simplified_layer_norm, NULL, "cpu",
     "standard"},
    {"mlp.swiglu", "matmul_swiglu", "f32", 0, ort_matmul_swiglu, NULL, "cpu", "standard"},
};

static char g_error[512];

/* Why the table is missing, for moacert's one line (docs/plugins.md). */
const char* moacert_plugin_error(void) {
  return g_error;
}

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *abi_version = MOACERT_PLUGIN_ABI;
  if (ort_open(g_error, sizeof g_error) != 0) {
    *count = -1;
    return (const moacert_kernel*)0;
  }
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  return kernels;
}
