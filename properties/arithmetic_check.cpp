#include "properties/arithmetic_check.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "oracle/bounds.hpp"
#include "properties/certify.hpp"
#include "reference/arithmetic_spec.hpp"

namespace moacert::properties {

namespace {

// The items of `a` one at a time, each as an arithmetic of its own.
std::vector<Arithmetic> items_of(const Arithmetic& a) {
  std::vector<Arithmetic> out;
  if (a.accumulation != Accumulation::rounded) out.push_back({.accumulation = a.accumulation});
  for (const auto& [c, mode] : a.contractions) out.push_back({.contractions = {{c, mode}}});
  for (const auto& [i, to] : a.rounded) out.push_back({.rounded = {{i, to}}});
  for (const auto& [f, ulps] : a.function_ulps) out.push_back({.function_ulps = {{f, ulps}}});
  if (a.flush != Flush::none) out.push_back({.flush = a.flush});
  return out;
}

// `a` without the items of `b` (one of items_of(a)).
Arithmetic without(Arithmetic a, const Arithmetic& b) {
  if (b.accumulation != Accumulation::rounded) a.accumulation = Accumulation::rounded;
  for (const auto& [c, mode] : b.contractions) a.contractions.erase(c);
  for (const auto& [i, to] : b.rounded) a.rounded.erase(i);
  for (const auto& [f, ulps] : b.function_ulps) a.function_ulps.erase(f);
  if (b.flush != Flush::none) a.flush = Flush::none;
  return a;
}

// The sum of `bounds` over every element against that of `standard`
// (infinite where a bound is and the standard one is not).
double looseness(const std::vector<std::vector<double>>& bounds,
                 const std::vector<std::vector<double>>& standard) {
  double sum = 0, standard_sum = 0;
  for (std::size_t t = 0; t < bounds.size(); ++t)
    for (std::size_t n = 0; n < bounds[t].size(); ++n)
      if (std::isfinite(standard[t][n])) {
        sum += bounds[t][n];
        standard_sum += standard[t][n];
      }
  return standard_sum > 0 ? sum / standard_sum : 1;
}

double worst_ratio(const Verdict& v) {
  double ratio = 0;
  for (const TensorStats& s : v.tensors) ratio = std::max(ratio, s.max_ratio);
  return ratio;
}

}  // namespace

std::vector<Arithmetic> candidate_arithmetics(Op op, Format format, const Arithmetic& declared) {
  const ArithmeticVocabulary& vocabulary = info(op).arithmetic;
  std::vector<Arithmetic> out;
  auto add = [&](Arithmetic a) {
    if (!a.standard() && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  };
  // An intermediate rounded to a format narrower than the accumulation's.
  const int accumulated_bits = format == Format::f64 ? 53 : 24;
  for (Rounding to : {Rounding::f32, Rounding::f16, Rounding::bf16})
    for (std::string_view i : vocabulary.intermediates)
      if (info(*Arithmetic{.rounded = {{std::string(i), to}}}.rounded_format(i, format)).precision <
          accumulated_bits)
        add({.rounded = {{std::string(i), to}}});
  add({.accumulation = Accumulation::tensor_core});
  for (Accumulation mode : {Accumulation::tf32, Accumulation::f16, Accumulation::bf16})
    if (mode != Accumulation::tf32 || vocabulary.tf32)
      for (std::string_view c : vocabulary.contractions)
        add({.contractions = {{std::string(c), mode}}});
  for (double ulps : {4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0})
    for (std::string_view f : vocabulary.functions)
      add({.function_ulps = {{std::string(f), ulps}}});
  if (vocabulary.flush_inputs) add({.flush = Flush::inputs});
  if (vocabulary.flush_outputs) add({.flush = Flush::outputs});
  if (vocabulary.flush_inputs && vocabulary.flush_outputs) add({.flush = Flush::both});
  const std::vector<Arithmetic> items = items_of(declared);
  if (items.size() > 1)
    for (const Arithmetic& item : items) add(without(declared, item));
  add(declared);
  return out;
}

void stand_in_for_vacuous(std::vector<std::vector<double>>& bounds,
                          const std::vector<std::vector<double>>& standard) {
  for (std::size_t t = 0; t < bounds.size(); ++t)
    for (std::size_t n = 0; n < bounds[t].size(); ++n)
      if (std::isinf(bounds[t][n]) && std::isfinite(standard[t][n])) bounds[t][n] = standard[t][n];
}

std::string past_declared_reach(const Problem& p, const Arithmetic& a) {
  const ArithmeticVocabulary& vocabulary = info(p.op).arithmetic;
  // A declared unit u compounded n + `extra` times bounds nothing once
  // (n + extra) u >= 1/2; its reach is the last n short of that.
  auto past = [&](std::string_view item, double u, double extra, std::string_view axis,
                  std::string_view what) -> std::string {
    const moa::extent_t n = extent_of(p.dims, axis);
    if ((double(n) + extra) * u < 0.5) return {};
    const double reach = std::ceil(0.5 / u - extra) - 1;
    return fmt::format("{} over {} = {} {}, past its reach of {}", item, axis, n, what, reach);
  };
  for (std::size_t c = 0; c < vocabulary.contractions.size(); ++c) {
    const std::string_view contraction = vocabulary.contractions[c];
    const Accumulation mode = a.accumulation_of(contraction);
    if (mode != Accumulation::f16 && mode != Accumulation::bf16) continue;
    const double u = mode == Accumulation::f16 ? 0x1p-11 : 0x1p-8;
    // The n terms and the three operations every sum bound counts beside them.
    const std::string why = past(fmt::format("sum.{}={}", contraction, name(mode)), u, 3,
                                 vocabulary.contraction_axes[c], "terms");
    if (!why.empty()) return why;
  }
  if (vocabulary.softmax_axis.empty()) return {};
  // The running sum l rounded after each of its n updates and its last
  // rescale; the exp's error composed once per rescale, n + 1 in all
  // (docs/bounds.md#declared-arithmetic).
  if (const std::optional<Format> l = a.rounded_format("l", p.format)) {
    const std::string why =
        past(to_string(Arithmetic{.rounded = {{"l", *a.rounding_of("l")}}}),
             std::ldexp(1.0, -info(*l).precision), 1, vocabulary.softmax_axis, "keys");
    if (!why.empty()) return why;
  }
  if (const std::optional<double> ulps = a.ulps_of("exp")) {
    const double ua = all_f64(p) ? 0x1p-53 : 0x1p-24;  // the accumulation format's
    return past(to_string(Arithmetic{.function_ulps = {{"exp", *ulps}}}), 2 * *ulps * ua, 1,
                vocabulary.softmax_axis, "keys");
  }
  return {};
}

ArithmeticFindings arithmetic_findings(const Case& c, const oracle::Answer& exact,
                                       const std::vector<AnyTensor>& outputs, const Rule& rule,
                                       const std::vector<std::vector<double>>& standard_bounds,
                                       const std::vector<Arithmetic>& candidates,
                                       const Arithmetic& declared, const oracle::Selection* rows,
                                       const Verdict* judged) {
  ArithmeticFindings f;
  const Verdict standard = judged ? *judged : judge(c, exact, outputs, rule, &standard_bounds);
  f.standard_ratio = worst_ratio(standard);
  f.consistent.assign(candidates.size(), 1);
  f.looseness.assign(candidates.size(), 1);
  if (standard.holds) return f;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // A vacuous bound explains nothing (an f16 sum over thousands of terms
    // bounds nothing, so it would "explain" any error): where a candidate's
    // is infinite and the standard model's is not, the standard's stands.
    // The kernel's own declaration is judged as the verdict judged it: under
    // the standard model past its reach, else with its vacuous
    // elements said beside it.
    auto bounds = oracle::apriori_bounds(c, {.arithmetic = candidates[i]}, rows);
    if (!(candidates[i] == declared) || !past_declared_reach(c.problem, declared).empty())
      stand_in_for_vacuous(bounds, standard_bounds);
    f.consistent[i] = judge(c, exact, outputs, rule, &bounds).holds ? 1 : 0;
    f.looseness[i] = looseness(bounds, standard_bounds);
  }
  return f;
}

std::optional<Arithmetic> tightest_consistent(
    const std::vector<Arithmetic>& candidates,
    const std::vector<const ArithmeticFindings*>& per_case) {
  std::optional<std::size_t> tightest;
  double least = INFINITY;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    double loosest = 1;
    bool consistent = true;
    for (const ArithmeticFindings* f : per_case) {
      consistent = consistent && f->consistent[i] != 0;
      loosest = std::max(loosest, f->looseness[i]);
    }
    if (consistent && (!tightest || loosest < least)) {
      tightest = i;
      least = loosest;
    }
  }
  if (!tightest) return std::nullopt;
  return candidates[*tightest];
}

void CaseRunner::check_arithmetic(Certificate& cert, const std::vector<CaseRecord>& records) const {
  const kernels::Variant& v = *o_.variant;
  // The records the certificate reduces: up to its first failing case, in
  // position order (ranks may have judged cases past it).
  std::vector<const ArithmeticFindings*> findings;
  for (const CaseRecord& r : records) {
    if (r.has_arithmetic) findings.push_back(&r.arithmetic);
    if (!r.holds) break;
  }
  std::optional<Arithmetic> needs;
  if (!findings.empty()) {
    cert.arithmetic_checked = true;
    for (const ArithmeticFindings* f : findings)
      cert.standard_worst_ratio = std::max(cert.standard_worst_ratio, f->standard_ratio);
    cert.standard_holds = cert.standard_worst_ratio <= 1;
    needs =
        cert.standard_holds
            ? std::optional(Arithmetic{})
            : tightest_consistent(candidate_arithmetics(v.op, o_.format, v.arithmetic), findings);
    cert.needs = needs ? to_string(*needs) : "";
  }
  if (!o_.arithmetic_at_most) return;
  cert.arithmetic_at_most = o_.arithmetic_at_most_text;
  if (!cert.holds) return;  // failed already: its own counterexample says why
  const std::string limit = " beyond --arithmetic-at-most '" + o_.arithmetic_at_most_text + "'";
  std::optional<std::string> past = beyond(v.arithmetic, *o_.arithmetic_at_most, o_.format);
  std::string what = past ? "declares " + *past : "";
  if (!past && needs && (past = beyond(*needs, *o_.arithmetic_at_most, o_.format)))
    what = "needs " + *past;
  if (!past) return;
  cert.holds = false;
  cert.failure = v.name + " " + what + "," + limit;
  cert.failure_case = "the whole run";
  cert.worst_ratio = INFINITY;
}

}  // namespace moacert::properties
