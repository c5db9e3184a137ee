/* The moacert plugin ABI (docs/design.md, "Plugin ABI"): a shared library that
   exports `moacert_plugin_kernels` can be certified by
   `moacert certify OP --plugin LIB.so[#NAME]`. Tensors are DLPack's
   (Debian's libdlpack-dev). How to write, build and certify a plugin, and
   what the isolation guarantees: docs/plugins.md. */
#ifndef MOACERT_PLUGIN_H
#define MOACERT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The declarations below are docs/design.md's, verbatim. */
/* clang-format off */
#define MOACERT_PLUGIN_ABI 4
/* run's return for a problem the kernel refuses (outside what it supports) */
#define MOACERT_UNSUPPORTED (-95)
/* the extents one axis of the op may take, by the op's axis name */
typedef struct moacert_axis {
  const char *name;       /* "D", "N", "M", "L", "T", "Dm", ... */
  int64_t min, max;       /* 0: unbounded */
  const int64_t *values;  /* NULL: every extent of [min, max]; else */
  int n_values;           /*   these, strictly ascending */
  int64_t multiple;       /* 0 or 1: any extent; else a multiple of it */
} moacert_axis;
/* what a kernel refuses beyond its axes; 0: nothing */
#define MOACERT_REFUSES_CAUSAL        1 /* causal masking */
#define MOACERT_REFUSES_NON_CAUSAL    2 /* attention without masking */
#define MOACERT_REFUSES_GROUPED_HEADS 4 /* Hkv < H (GQA, MQA) */
typedef struct moacert_envelope {
  const moacert_axis *axes; /* the axes it narrows; the others are free */
  int n_axes;
  int refuses;              /* MOACERT_REFUSES_* flags, or-ed */
} moacert_envelope;
typedef struct moacert_kernel {
  const char *op;      /* an op name from the table above */
  const char *name;    /* the variant's name inside the library */
  const char *dtype;   /* "f32", "f64", "bf16", "f16" */
  int accepts_strided; /* 0: moacert hands it row-major contiguous tensors */
  /* inputs and outputs in the table's order; strides in elements; params as
     JSON ({"scale":..., "causal":..., "eps":...}); returns 0, or non-zero
     after writing a message into err (MOACERT_UNSUPPORTED: a problem it
     refuses) */
  int (*run)(const DLTensor *const *inputs, int n_inputs,
             DLTensor *const *outputs, int n_outputs,
             const char *params_json, char *err, size_t err_len);
  /* since ABI 2 */
  const moacert_envelope *envelope; /* NULL: every problem of the op */
  const char *device;               /* "cpu" (or NULL), "cuda" */
  /* since ABI 3: how it computes where it departs from the standard model,
     as docs/design.md#arithmetic writes it ("sum=tensor_core, round.P=storage");
     NULL or "standard": the standard model */
  const char *arithmetic;
  /* since ABI 4: how it takes its problem where libraries differ from
     moacert's convention (docs/design.md#conventions); NULL: moacert's */
  const char *outputs;          /* the outputs it writes ("o": attention
                                   without lse); NULL: every output */
  const char *causal_alignment; /* "bottom_right" (NULL) or "top_left" */
  const char *params;           /* "f64" (NULL) or "f32": scale and eps as
                                   the kernel reads them */
  const char *tensor_formats;   /* each tensor's, "q=f32,k=f16,v=f16,o=f32";
                                   NULL: every tensor in dtype (a mixed one
                                   is judged tensor by tensor) */
  int deterministic;            /* 1: bitwise the same on every run and any
                                   "threads" (checked); 0: the spread across
                                   thread counts is reported */
} moacert_kernel;
/* the one symbol a plugin exports; it sets *abi_version to
   MOACERT_PLUGIN_ABI (or 3, 2 or 1, its table then of moacert_kernel_v3,
   moacert_kernel_v2 or moacert_kernel_v1) */
const moacert_kernel *moacert_plugin_kernels(int *count, int *abi_version);
/* clang-format on */

/* ABI 1's entry, which moacert still reads: ABI 2's without envelope and
   device (every problem of the op, on the CPU). */
typedef struct moacert_kernel_v1 {
  const char* op;
  const char* name;
  const char* dtype;
  int accepts_strided;
  int (*run)(const DLTensor* const* inputs, int n_inputs, DLTensor* const* outputs, int n_outputs,
             const char* params_json, char* err, size_t err_len);
} moacert_kernel_v1;

/* ABI 2's entry, which moacert still reads: ABI 3's without arithmetic
   (the standard model). */
typedef struct moacert_kernel_v2 {
  const char* op;
  const char* name;
  const char* dtype;
  int accepts_strided;
  int (*run)(const DLTensor* const* inputs, int n_inputs, DLTensor* const* outputs, int n_outputs,
             const char* params_json, char* err, size_t err_len);
  const moacert_envelope* envelope;
  const char* device;
} moacert_kernel_v2;

/* ABI 3's entry, which moacert still reads: ABI 4's without outputs,
   causal_alignment, params, tensor_formats (moacert's own convention)
   and deterministic (0). */
typedef struct moacert_kernel_v3 {
  const char* op;
  const char* name;
  const char* dtype;
  int accepts_strided;
  int (*run)(const DLTensor* const* inputs, int n_inputs, DLTensor* const* outputs, int n_outputs,
             const char* params_json, char* err, size_t err_len);
  const moacert_envelope* envelope;
  const char* device;
  const char* arithmetic;
} moacert_kernel_v3;

#ifdef __cplusplus
}
#endif

#endif /* MOACERT_PLUGIN_H */
