/* Planted kernels of attention.fwd that each refuse an option their
   envelope declares refused (MOACERT_UNSUPPORTED), and compute the
   example plugin's correct attention otherwise:

     refuses_causal   envelope refuses causal masking; refuses a causal problem
     refuses_grouped  envelope refuses GQA/MQA; refuses Hkv < H

   A problem outside a kernel's envelope is never drawn, so certify holds
   on both (tests/plugins/CMakeLists.txt). The attention is the example's
   (examples/plugins/c/example_plugin.c), included under other names so
   that it is written once. */
#define moacert_plugin_kernels example_plugin_kernels
#define kernels example_kernels
#include "../../examples/plugins/c/example_plugin.c"
#undef kernels
#undef moacert_plugin_kernels

#include <string.h>

static int refuses_causal(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                          const char* params, char* err, size_t err_len) {
  if (moacert_flag(params, "causal")) {
    snprintf(err, err_len, "causal masking is not supported");
    return MOACERT_UNSUPPORTED;
  }
  return attention_float(in, n_in, out, n_out, params, err, err_len);
}

static int refuses_grouped(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                           const char* params, char* err, size_t err_len) {
  if (n_in == 3 && in[1]->shape[1] < in[0]->shape[1]) {
    snprintf(err, err_len, "Hkv < H (GQA/MQA) is not supported");
    return MOACERT_UNSUPPORTED;
  }
  return attention_float(in, n_in, out, n_out, params, err, err_len);
}

static const moacert_envelope no_causal = {NULL, 0, MOACERT_REFUSES_CAUSAL};
static const moacert_envelope no_grouped = {NULL, 0, MOACERT_REFUSES_GROUPED_HEADS};

static const moacert_kernel kernels[] = {
    {"attention.fwd", "refuses_causal", "f32", 1, refuses_causal, &no_causal, "cpu"},
    {"attention.fwd", "refuses_grouped", "f32", 1, refuses_grouped, &no_grouped, "cpu"},
};

const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = (int)(sizeof kernels / sizeof kernels[0]);
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
