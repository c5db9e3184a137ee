// Running a variant on a case and judging its outputs against the oracle:
// per element ULP error, error-to-bound ratio and normwise relative error,
// under one of the rules of docs/design.md (apriori, max-ulp=K, vs-torch=R).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "oracle/oracle.hpp"
#include "oracle/ulp.hpp"
#include "reference/case.hpp"
#include "results/results.hpp"

namespace moacert::properties {

// "apriori", "max-ulp=K", "vs-torch=R"; nullopt when malformed.
std::optional<Rule> parse_rule(const std::string& s);

// FNV-1a of the inputs' bytes (of their 8-byte words past kBytewiseUpTo
// bytes in all): the SIMT emulator's schedule seed of a case and the
// sampled rows' seed, so that `reproduce`, which rebuilds the same inputs,
// replays the same schedule and judges the same rows.
inline constexpr std::size_t kBytewiseUpTo = std::size_t(256) << 20;
std::uint64_t schedule_seed_of(const std::vector<TensorRef>& inputs);

// Runs `v` on `c` with `threads` threads into fresh row-major outputs. A
// variant that does not accept strided tensors gets row-major copies.
std::vector<AnyTensor> run_variant(const kernels::Variant& v, const Case& c, int threads = 0);

struct TensorStats {
  std::string name;
  std::int64_t elements = 0;         // judged: those the oracle evaluated (oracle::Options::rows)
  std::int64_t elements_total = 0;   // in the tensor
  double max_ulp = 0, mean_ulp = 0;  // of this case (the run's quantiles: the histograms)
  // Every element's ulp error and error / allowed, for the run's exact
  // statistics (the certificate's quantiles are read from their sum).
  ErrorHistogram ulp_histogram = make_error_histogram();
  ErrorHistogram ratio_histogram = make_error_histogram();
  double max_ratio = 0;     // max of error / bound (apriori) or error / allowed
  double normwise_u = 0;    // ||y - x||_2 / ||x||_2 in units of u of the format
  std::int64_t worst = -1;  // row-major index of the element nearest to failing
  double worst_exact = 0, worst_computed = 0, worst_ulp = 0, worst_bound = 0;
  std::int64_t undetermined = 0;
  // Judged elements whose allowance is infinite (an upstream stage's bound
  // is): the rule is vacuous there, and certify says so.
  std::int64_t unbounded = 0;
  // Judged elements of a case past a declared sum's reach, where the
  // declaration bounds nothing and the standard model's bound was the
  // allowance (past_declared_reach).
  std::int64_t declared_vacuous = 0;
};

struct Verdict {
  bool holds = true;
  std::string why;  // the first failing element, in words
  std::vector<TensorStats> tensors;
  // What the rule allowed each element of each output (allowances()), as
  // judged: computed once here, read again by the plots and the worst
  // elements.
  std::vector<std::vector<double>> allowed;
};

// What the rule allows each element of each output tensor: an absolute
// error (apriori: the a priori bound; vs-torch: vs_torch_allowed) or, under
// max-ulp, K ulps.
std::vector<std::vector<double>> allowances(const Case& c, const oracle::Answer& exact,
                                            const Rule& rule,
                                            const std::vector<std::vector<double>>* bounds,
                                            const std::vector<std::vector<double>>* torch_errors);

// One element judged: its errors (oracle/ulp.hpp) and how close it comes to
// failing, error / allowed in the rule's measure (+inf for an error the rule
// cannot allow, such as a NaN against a finite exact value). It fails when
// the margin is above 1.
struct ElementJudgement {
  double abs_error = 0, ulps = 0, margin = 0;
};
ElementJudgement judge_element(double y, const oracle::DD& x, double allowed, const Rule& rule,
                               Format f);

// Calls fn(tensor, n, index, exact, computed, allowed, judgement) for every
// element of every output that the oracle evaluated (n: its row-major
// position), judged under `rule` against `allowed` (allowances()).
template <class Fn>
void for_each_judged_element(const Case& c, const oracle::Answer& exact,
                             const std::vector<AnyTensor>& outputs,
                             const std::vector<std::vector<double>>& allowed, const Rule& rule,
                             Fn&& fn) {
  for (std::size_t t = 0; t < outputs.size(); ++t) {
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(outputs[t].shape())) {
      if (exact.outputs[t].evaluated[n]) {  // else not in the sample: not judged
        const oracle::DD& x = exact.outputs[t].exact[n];
        const double y = outputs[t].get(i);
        fn(t, n, i, x, y, allowed[t][n],
           judge_element(y, x, allowed[t][n], rule, output_format(c.problem, t)));
      }
      ++n;
    }
  }
}

// Judges outputs against the oracle's answer, the elements it evaluated
// only (TensorAnswer::evaluated). `bounds` are the a priori
// bounds (rules apriori and vs-torch); `torch_errors` PyTorch's absolute
// errors per element (rule vs-torch).
Verdict judge(const Case& c, const oracle::Answer& exact, const std::vector<AnyTensor>& outputs,
              const Rule& rule, const std::vector<std::vector<double>>* bounds,
              const std::vector<std::vector<double>>* torch_errors = nullptr);

// The vs-torch rule's allowance, per tensor and element, as an absolute
// error: R times PyTorch's largest absolute error on that output tensor (at
// least half an ulp at the tensor's scale: the rounding any stored result
// pays; and at least kVsTorchFloor of the element's a priori bound, the
// scale of the terms it sums), plus one ulp of the format at the tensor's
// largest exact magnitude (flash-attention's "no worse than R times
// PyTorch", its atol made exact). Element by
// element ratios are not a law: two correct summation orders err
// independently, and PyTorch's error on one element can be 0 by chance
// (docs/torch.md#r). A tensor where PyTorch gives no scale — its error is a
// NaN or an infinity somewhere, or every finite exact value is 0 — is judged
// by the a priori rule: its allowance is the a priori bound.
std::vector<std::vector<double>> vs_torch_allowed(
    const oracle::Answer& exact, const std::vector<std::vector<double>>& torch_errors,
    const std::vector<std::vector<double>>& bounds, Format f, double r);
// The same with each output's ulp in its own format (`formats`, per output:
// docs/design.md#per-tensor-formats).
std::vector<std::vector<double>> vs_torch_allowed(
    const oracle::Answer& exact, const std::vector<std::vector<double>>& torch_errors,
    const std::vector<std::vector<double>>& bounds, const std::vector<Format>& formats, double r);
// Where the outputs cancel (a dominant key: exact dQ of order e^-50 while
// its terms are of order 1), PyTorch's error can be 0 or tiny by luck: it is
// counted as at least this share of the a priori bound (docs/torch.md#r).
constexpr double kVsTorchFloor = 0x1p-10;

// Absolute errors of outputs against the answer, per tensor and element.
std::vector<std::vector<double>> abs_errors(const oracle::Answer& exact,
                                            const std::vector<AnyTensor>& outputs);

// How a kernel's outputs compare with PyTorch's on one case (Equivalence,
// results/results.hpp). Equal values (infinities and NaNs included)
// differ by 0; a finite against a non-finite one by +inf.
std::vector<Equivalence> equivalence(const Case& c, const oracle::Answer& exact,
                                     const std::vector<AnyTensor>& kernel,
                                     const std::vector<AnyTensor>& torch);

// True when every element of a and b is bitwise equal.
bool bitwise_equal(const std::vector<AnyTensor>& a, const std::vector<AnyTensor>& b);

}  // namespace moacert::properties
