// How a kernel computes, where it departs from the standard model of
// docs/bounds.md (every operation rounded to nearest in the accumulation
// format, exp and log within 2 ulps): what a kernel declares (a built-in
// variant's kernels::Variant::arithmetic, a plugin's or a worker's
// declaration, parsed by reference/arithmetic_spec.hpp) and what the a
// priori bounds are derived for (oracle::BoundConstants). One value, read
// by every layer, so that the kernel's declaration and the bound's model
// cannot drift apart. The vocabulary: docs/design.md#arithmetic; each
// freedom's bound: docs/bounds.md#declared-arithmetic.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "reference/format.hpp"

namespace moacert {

// How the sums and dot products of a contraction are accumulated, from the
// tightest to the loosest (the order `--arithmetic-at-most` compares in).
enum class Accumulation {
  // Every addition rounded to nearest in f32 (f64 for f64): Higham's
  // standard model, u_a per addition.
  rounded,
  // On tensor cores (mma, f32 accumulators): products exact, the addends of
  // a step aligned to the largest and truncated, the sum truncated toward
  // zero (docs/simt.md, "The arithmetic model of one mma"); bounded with
  // u_t = (1 + 2^-23)^2 - 1 per term merged (docs/bounds.md#tensor-cores).
  tensor_core,
  // The operands rounded to TF32 (11 significant bits, f32's exponents)
  // before their products, accumulated on tensor cores: what cuBLAS does
  // under torch.backends.cuda.matmul.allow_tf32.
  tf32,
  // Every addition rounded to nearest in f16 or in bf16 (llama.cpp's CPU
  // flash attention sums V·P in f16 for an f16 KV cache).
  f16,
  bf16,
};

// The format an intermediate is rounded to before its next use: f32, f16,
// bf16, or the call's storage format (FlashAttention-2's P, whatever the
// call's format is).
enum class Rounding { f32, f16, bf16, storage };

// Subnormals flushed to zero: on the kernel's inputs (read as 0), on its
// outputs (written as 0), or both. Either also flushes the accumulation
// format's subnormals inside (a CPU's FTZ/DAZ mode, a GPU's .ftz).
enum class Flush { none, inputs, outputs, both };

struct Arithmetic {
  // Every contraction of the op not named in `contractions`.
  Accumulation accumulation = Accumulation::rounded;
  // By the op's contraction names (reference/ops.hpp: "QK", "PV", ...).
  std::map<std::string, Accumulation, std::less<>> contractions;
  // By the op's intermediate names ("S", "P", "dS", "h", ...).
  std::map<std::string, Rounding, std::less<>> rounded;
  // The error of an elementary function in ulps of its format, by name
  // ("exp", "log", "sqrt", "div", "silu"); absent: the standard model's.
  std::map<std::string, double, std::less<>> function_ulps;
  Flush flush = Flush::none;

  friend bool operator==(const Arithmetic&, const Arithmetic&) = default;

  bool standard() const { return *this == Arithmetic{}; }
  Accumulation accumulation_of(std::string_view contraction) const {
    const auto it = contractions.find(contraction);
    return it == contractions.end() ? accumulation : it->second;
  }
  std::optional<Rounding> rounding_of(std::string_view intermediate) const {
    const auto it = rounded.find(intermediate);
    return it == rounded.end() ? std::nullopt : std::optional(it->second);
  }
  // The format `intermediate` is rounded to in a call of storage format
  // `storage`, if it is rounded.
  std::optional<Format> rounded_format(std::string_view intermediate, Format storage) const {
    const std::optional<Rounding> r = rounding_of(intermediate);
    if (!r) return std::nullopt;
    switch (*r) {
      case Rounding::f32:
        return Format::f32;
      case Rounding::f16:
        return Format::f16;
      case Rounding::bf16:
        return Format::bf16;
      case Rounding::storage:
        return storage;
    }
    return std::nullopt;
  }
  // The ulps of `function` where declared; absent, the bounds use the
  // standard model's (docs/bounds.md#declared-arithmetic).
  std::optional<double> ulps_of(std::string_view function) const {
    const auto it = function_ulps.find(function);
    return it == function_ulps.end() ? std::nullopt : std::optional(it->second);
  }
  bool flushes_inputs() const { return flush == Flush::inputs || flush == Flush::both; }
  bool flushes_outputs() const { return flush == Flush::outputs || flush == Flush::both; }
};

}  // namespace moacert
