// The numerical regimes of each op's arithmetic (docs/design.md#numerical-
// regimes): the places where a kernel that is right on ordinary inputs can
// go wrong — an exp that overflows without the max subtracted, a key tile
// whose weights all underflow, a row that sees no key, a sum of squares
// past the format's range, a dot product that cancels. Each op declares its
// regimes once, in its entry of properties/ops/; `classify` says which of
// them a case reached, from the case's inputs, in double, cheaply enough to
// run on every case.
#pragma once

#include <bitset>
#include <string_view>
#include <vector>

#include "reference/case.hpp"

namespace moacert::properties {

enum class Regime {
  // softmax (attention.fwd, bwd, fwdbwd, decode)
  exp_overflow,  // a visible logit above ln(max finite): exp(S) overflows unless m is subtracted
  underflowing_tile,  // a whole key tile (kUnderflowTile) whose weights exp(S - m) are 0
  no_key_row,         // a query row that sees no key (causal with N > M)
  tie,                // two visible keys share a row's maximum logit exactly
  dominant_key,       // one key carries all but less than u of a row's weight: softmax ~ one-hot
  long_flat_row,      // a row's weight sum l = sum_j exp(S_ij - m) reaches kFlatRowWeight
  // silu (mlp.swiglu), over the gate arguments z = x W1
  silu_exp_z_overflows,         // z > ln(max finite)
  silu_exp_minus_z_overflows,   // z < -ln(max finite)
  silu_exp_z_underflows,        // z < ln(min subnormal / 2): exp(z) rounds to 0
  silu_exp_minus_z_underflows,  // z > -ln(min subnormal / 2): exp(-z) rounds to 0
  silu_near_zero,               // 0 < |z| < u: exp(-z) rounds to 1
  // rmsnorm, per row: s = sum_d x_td²
  sum_of_squares_overflows,   // s > max finite
  sum_of_squares_underflows,  // s < min normal
  eps_dominates,              // eps > mean_d x_td²
  // GEMMs (mlp.swiglu's x W1 and x W3)
  cancellation,  // sum |a_k b_k| > 2^ceil(p/2) |sum a_k b_k|: half the precision cancels
  // mlp.swiglu's down projection y = h W2, h = silu(x W1) * (x W3)
  down_cancellation,  // sum_f |h_tf W2_fc| > 2^ceil(p/2) |y_tc|: half the precision cancels
};
inline constexpr int kRegimeCount = int(Regime::down_cancellation) + 1;

// A long flat row: its weights sum past 2^11, where a running sum kept in
// f16 (11 significant bits: llama.cpp's value sum for an f16 KV cache)
// stops growing by terms of weight 1 — 2048 + 1 rounds to 2048 — so that
// the normalised output can come out half its value (docs/design.md#
// numerical-regimes). Reached by rows of thousands of keys whose scores
// are near-equal.
inline constexpr double kFlatRowWeight = 2048;
using Regimes = std::bitset<kRegimeCount>;

// Whether generation 3 holds back from aiming at regime `r` in format
// `f`, because every built-in variant fails there (a finding of issue #17
// item 6, open): a sum of squares past the largest finite overflows the
// f32 (f32, bf16) or f64 accumulator of every rmsnorm variant (cpu.dnf,
// cpu.fused, torch, simt.rmsnorm), which then writes y = 0 (f16's squares
// sum in f32 and do not overflow: f16 keeps the regime). A held-back
// regime stays declared, so its certificates list it with 0 cases and
// certify names it as not reached; aiming at it would fail every default
// certification of the op until the kernels scale their sums.
bool held_back(Regime r, Format f);

// The regime's name in certificates and certify's line ("softmax.exp-overflow").
std::string_view name(Regime r);

// The regimes of `op`'s arithmetic, in the order certificates list them.
// Block's are its parts': softmax (but for rows without a key), both
// RMSNorms', the MLP's.
const std::vector<Regime>& declared_regimes(Op op);

// The thresholds of a format, from its definition (reference/format.hpp):
// for f32 and f64 they equal std::numeric_limits' (tests/properties/
// test_regimes.cpp checks so).
struct FormatLimits {
  double max_finite;     // (2 - 2^(1-p)) 2^emax
  double min_normal;     // 2^emin
  double min_subnormal;  // 2^(emin - p + 1)
  double unit_roundoff;  // u = 2^-p
  double ln_max;         // exp(x) overflows for x > ln_max
  double ln_zero;        // exp(x) rounds to 0 for x < ln_zero = ln(min_subnormal / 2)
};
FormatLimits limits(Format f);

// The regimes `c` reached, judged in double from its inputs. Cheap:
// O(inputs) but for the softmax logits and GEMM sums, which are computed
// for at most kClassifiedRows query rows per (b, head) (mlp.swiglu: rows
// of x) — every row when there are that few, else the first, the last,
// the rows of largest norm and evenly spaced others. A regime it reports
// was reached; one reached only on rows outside that sample is missed.
// Block's are judged on its intermediates, at the cost of its forward in
// double up to the MLP's input (properties/block_in_double.hpp).
Regimes classify(const Case& c);
inline constexpr int kClassifiedRows = 16;

}  // namespace moacert::properties
