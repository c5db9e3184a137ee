// How a kernel computes, where it departs from the standard model of
// docs/bounds.md (every operation rounded to nearest in the accumulation
// format): what a variant declares (kernels::Variant::arithmetic) and what
// the a priori bounds are derived for (oracle::BoundConstants). One value,
// read by both layers, so that the kernel's declaration and the bound's
// model cannot drift apart.
#pragma once

namespace moacert {

// How the sums and dot products of a kernel are accumulated.
enum class Accumulation {
  // Every addition rounded to nearest in f32 (f64 for f64): Higham's
  // standard model, u_a per addition.
  rounded,
  // On tensor cores (mma, f32 accumulators): products exact, the addends of
  // a step aligned to the largest and truncated, the sum truncated toward
  // zero (docs/simt.md, "The arithmetic model of one mma"); bounded with
  // u_t = (1 + 2^-23)^2 - 1 per term merged (docs/bounds.md#tensor-cores).
  tensor_core,
};

struct Arithmetic {
  Accumulation accumulation = Accumulation::rounded;
  // The softmax weights P are rounded to the storage format before the
  // product P V (the mma's A operand: bf16 or f16, as FlashAttention-2
  // and 3 do), a relative 2^-p more per weight (docs/bounds.md#tensor-cores).
  bool weights_in_storage_format = false;
  // The backward's score gradients dS = P (dP - D) are rounded to the
  // storage format before the products dS^T Q and dS K (the mmas' A
  // operand, as FlashAttention-2's backward does); with
  // weights_in_storage_format, its P before P^T dO (docs/bounds.md#tensor-cores).
  bool score_gradients_in_storage_format = false;

  friend bool operator==(const Arithmetic&, const Arithmetic&) = default;
};

}  // namespace moacert
