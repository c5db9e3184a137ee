// A kernel's declared arithmetic (reference/arithmetic.hpp) as the units
// the a priori bounds compute with (docs/bounds.md#declared-arithmetic):
// per contraction its γ's unit, underflow, overflow and operand rounding
// (SumUnits), per intermediate its rounding (IntermediateRounding), the
// elementary functions' errors and what flushing subnormals costs.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "oracle/detail/bound_helpers.hpp"

namespace moacert::oracle::detail {

namespace {

// A contraction accumulated as declared (docs/bounds.md#declared-arithmetic),
// in a call whose accumulation format has unit `ua` and smallest
// subnormal `eta_a` (f64 for f64, else f32).
SumUnits sum_units(Accumulation a, bool f64, double ua, double eta_a) {
  // A tensor-core step merging j more terms errs by at most (j + 1) 2^-23 +
  // j 2^-46 of its addends' magnitudes, below (1 + u_t)^j - 1 with
  // u_t = (1 + 2^-23)^2 - 1 = 2^-22 + 2^-46, exact in double
  // (docs/bounds.md#tensor-cores); f32 accumulators only.
  const double u_t = f64 ? ua : 0x1p-22 + 0x1p-46;
  switch (a) {
    case Accumulation::rounded:
      return {ua, eta_a};
    case Accumulation::tensor_core:
      return {u_t, eta_a};
    case Accumulation::tf32:  // both operands to 11 bits, then on tensor cores
      return {u_t, eta_a, kInf, false, 0x1p-11, 0x1p-137};
    case Accumulation::f16:  // every addition in f16: its unit, subnormal, largest finite
      return {std::max(ua, 0x1p-11), std::max(eta_a, 0x1p-24), 65504, true};
    case Accumulation::bf16:
      return {std::max(ua, 0x1p-8), std::max(eta_a, 0x1p-133), 0x1.fep127, true};
  }
  return {ua, eta_a};
}

IntermediateRounding rounding_of(const Arithmetic& a, std::string_view intermediate,
                                 Format storage) {
  const std::optional<Format> to = a.rounded_format(intermediate, storage);
  if (!to) return {};
  const FormatInfo i = info(*to);
  return {std::ldexp(1.0, -i.precision), std::ldexp(1.0, i.emin - i.precision + 1),
          std::ldexp(2 - std::ldexp(1.0, 1 - i.precision), i.emax)};
}

// A declared function's relative error, K ulps of the accumulation format:
// K 2^(1-p) = 2 K u_a; undeclared, `standard`.
double function_error(const Arithmetic& a, std::string_view function, double ua, double standard) {
  const std::optional<double> ulps = a.ulps_of(function);
  return ulps ? 2 * *ulps * ua : standard;
}

}  // namespace

RoundingUnits rounding_units(Format f, const BoundConstants& k) {
  return rounding_units(f, k, f, f == Format::f64);
}

RoundingUnits rounding_units(Format f, const BoundConstants& k, Format out, bool f64_accumulation) {
  const bool f64 = f64_accumulation;
  const FormatInfo s = info(out);
  const Arithmetic& a = k.arithmetic;
  RoundingUnits u;
  u.ua = f64 ? 0x1p-53 : 0x1p-24;
  u.us = std::ldexp(1.0, -s.precision);
  // Flushed subnormals (a CPU's FTZ and DAZ, a GPU's .ftz) cost each
  // operation up to the smallest normal where rounding costs half the
  // smallest subnormal: every η_a term then allows it.
  const bool flushes = a.flush != Flush::none;
  u.eta_a = flushes ? (f64 ? 0x1p-1022 : 0x1p-126) : f64 ? std::ldexp(1.0, -1074) : 0x1p-149;
  u.eta_s = std::ldexp(1.0, s.emin - s.precision + 1);
  u.flush_outputs = a.flushes_outputs();
  u.output_floor = std::ldexp(1.0, s.emin);
  u.flush_inputs = a.flushes_inputs();
  u.input_floor = std::ldexp(1.0, info(f).emin);
  u.eps_exp = function_error(a, "exp", u.ua, k.exp_error_u * u.ua);
  u.eps_log = function_error(a, "log", u.ua, k.log_error_u * u.ua);
  u.eps_sqrt = function_error(a, "sqrt", u.ua, u.ua);
  u.eps_div = function_error(a, "div", u.ua, u.ua);
  // silu(z) = z / (1 + e^-z): an exp, an addition, a division and a product.
  u.eps_silu = function_error(a, "silu", u.ua, compose(u.eps_exp, power(u.ua, 3)));
  u.all = sum_units(a.accumulation, f64, u.ua, u.eta_a);
  u.u_sum = u.all.u;
  auto contraction = [&](std::string_view name) {
    return sum_units(a.accumulation_of(name), f64, u.ua, u.eta_a);
  };
  u.qk = contraction("QK");
  u.pv = contraction("PV");
  u.ss = contraction("ss");
  u.gate = contraction("gate");
  u.up = contraction("up");
  u.down = contraction("down");
  // P rounded before P V: as declared, and to TF32 where P V takes TF32
  // operands (both: composed).
  const IntermediateRounding weights = rounding_of(a, "P", f);
  u.u_weights = compose(weights.u, u.pv.operand_u);
  u.eta_weights = weights.eta + 2 * u.pv.operand_eta;
  const IntermediateRounding score_grads = rounding_of(a, "dS", f);
  u.u_score_grads = score_grads.u;
  u.eta_score_grads = score_grads.eta;
  u.scores = rounding_of(a, "S", f);
  u.row_sum = rounding_of(a, "l", f);
  u.lse = rounding_of(a, "lse", f);
  u.query_read = rounding_of(a, "q", f);
  u.key_read = rounding_of(a, "k", f);
  u.value_read = rounding_of(a, "v", f);
  u.sum_of_squares = rounding_of(a, "ss", f);
  u.inverse_root = rounding_of(a, "r", f);
  u.gate_value = rounding_of(a, "gate", f);
  u.up_value = rounding_of(a, "up", f);
  u.h = rounding_of(a, "h", f);
  u.weight_grads = rounding_of(a, "dP", f);
  u.row_delta = rounding_of(a, "D", f);
  return u;
}

}  // namespace moacert::oracle::detail
