/* The ONNX Runtime adapter: ORT 1.30.0's CPU kernels (as onnxruntime-node
   1.30.0 ships them) as moacert plugin kernels (ABI 4). Each row of the
   table is one kernel: its op, name, format, envelope and arithmetic, and
   how it takes its problem (docs/design.md#conventions): outputs "o" for
   attention (no operator here returns the log-sum-exp), Attention-23's own
   is_causal declared top-left (ONNX's alignment), scale and epsilon as
   float attributes (params "f32"). docs/deployed-kernels.md gives the
   verdicts. Every kernel takes row-major tensors (accepts_strided 0). */
#include "ort_kernels.h"
#include "ort_session.h"

/* com.microsoft's MultiHeadAttention has one head count for q, k and v */
static const moacert_envelope mha_envelope = {NULL, 0, MOACERT_REFUSES_GROUPED_HEADS};

/* com.microsoft's GroupQueryAttention: "head_size must be a multiple of 8" */
static const moacert_axis gqa_axes[] = {{"D", 0, 0, NULL, 0, 8}};
static const moacert_envelope gqa_envelope = {gqa_axes, 1, 0};

/* GroupQueryAttention as attention.fwd: causal alone (the KV cache's
   bottom-right mask), head size a multiple of 8, no more queries than keys
   (the N queries follow a past of M - N), and one sequence when several
   queries follow a past ("batch_size must be 1 when sequence_length > 1
   and past context is given"). An envelope bounds each axis alone, so this
   is kept as B = 1 and N <= 64 <= M: a prompt of up to 64 tokens, or a
   chunk of that many after a past, down to a decode step of one. */
static const moacert_axis gqa_fwd_axes[] = {{"B", 1, 1, NULL, 0, 0},
                                            {"N", 1, 64, NULL, 0, 0},
                                            {"M", 64, 0, NULL, 0, 0},
                                            {"D", 0, 0, NULL, 0, 8}};
static const moacert_envelope gqa_fwd_envelope = {gqa_fwd_axes, 4, MOACERT_REFUSES_NON_CAUSAL};

/* an attention kernel: o alone, scale read as a float, the causal mask
   aligned as `alignment_` (NULL: bottom-right) */
#define ORT_ATTENTION(op_, name_, run_, envelope_, alignment_)                        \
  {                                                                                   \
    .op = op_, .name = name_, .dtype = "f32", .accepts_strided = 0, .run = run_,      \
    .envelope = envelope_, .device = "cpu", .arithmetic = "standard", .outputs = "o", \
    .causal_alignment = alignment_, .params = "f32"                                   \
  }

static const moacert_kernel kernels[] = {
    ORT_ATTENTION("attention.fwd", "attention", ort_attention_fwd, NULL, "top_left"),
    /* the causal mask as an additive bias, bottom-right (ort_graphs.c) */
    ORT_ATTENTION("attention.fwd", "multi_head_attention", ort_multi_head_attention, &mha_envelope,
                  NULL),
    ORT_ATTENTION("attention.fwd", "group_query_attention_fwd", ort_group_query_attention_fwd,
                  &gqa_fwd_envelope, NULL),
    ORT_ATTENTION("attention.decode", "attention_decode", ort_attention_decode, NULL, NULL),
    ORT_ATTENTION("attention.decode", "group_query_attention", ort_group_query_attention_decode,
                  &gqa_envelope, NULL),
    {.op = "rmsnorm",
     .name = "rms_normalization",
     .dtype = "f32",
     .accepts_strided = 0,
     .run = ort_rms_normalization,
     .device = "cpu",
     .arithmetic = "standard",
     .params = "f32"},
    {.op = "rmsnorm",
     .name = "simplified_layer_norm",
     .dtype = "f32",
     .accepts_strided = 0,
     .run = ort_simplified_layer_norm,
     .device = "cpu",
     .arithmetic = "standard",
     .params = "f32"},
    {.op = "mlp.swiglu",
     .name = "matmul_swiglu",
     .dtype = "f32",
     .accepts_strided = 0,
     .run = ort_matmul_swiglu,
     .device = "cpu",
     .arithmetic = "standard"},
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
