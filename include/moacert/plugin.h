/* The moacert plugin ABI (docs/design.md, "Plugin ABI"): a shared library that
   exports `moacert_plugin_kernels` can be certified by
   `moacert certify OP --plugin LIB.so[#NAME]`. Tensors are DLPack's
   (Debian's libdlpack-dev). How to write, build and certify a plugin, and
   what the isolation guarantees: docs/plugins.md. */
#ifndef MOACERT_PLUGIN_H
#define MOACERT_PLUGIN_H

#include <stddef.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The declarations below are docs/design.md's, verbatim. */
/* clang-format off */
#define MOACERT_PLUGIN_ABI 1
typedef struct moacert_kernel {
  const char *op;      /* an op name from the table above */
  const char *name;    /* the variant's name inside the library */
  const char *dtype;   /* "f32", "f64", "bf16", "f16" */
  int accepts_strided; /* 0: moacert hands it row-major contiguous tensors */
  /* inputs and outputs in the table's order; strides in elements; params as
     JSON ({"scale":..., "causal":..., "eps":...}); returns 0, or non-zero
     after writing a message into err */
  int (*run)(const DLTensor *const *inputs, int n_inputs,
             DLTensor *const *outputs, int n_outputs,
             const char *params_json, char *err, size_t err_len);
} moacert_kernel;
/* the one symbol a plugin exports */
const moacert_kernel *moacert_plugin_kernels(int *count, int *abi_version);
/* clang-format on */

#ifdef __cplusplus
}
#endif

#endif /* MOACERT_PLUGIN_H */
