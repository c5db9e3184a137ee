// The schedule spread of a certificate's worst case (docs/design.md,
// "Schedule spread"): a variant with a seedable schedule that claims no
// determinism (the SIMT emulator's) runs its worst case again under
// schedules 1, 2, ..., each judged under the rule, and the certificate
// records per output the largest spread in ulps. Its cost is bounded by
// the judged cases' own: the spread's emulated accesses stay within
// theirs (spread_schedules), and the certificate says how many schedules
// ran and why.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.hpp"
#include "oracle/oracle.hpp"
#include "properties/check.hpp"
#include "results/results.hpp"

namespace moacert::properties {

// Per output, the largest spread (max - min) of an element over `runs` of
// one case of problem `p`, in ulps of the output's format at its exact
// value; elements outside the sample are passed by.
std::vector<std::pair<std::string, double>> spread_ulps(
    const std::vector<std::vector<AnyTensor>>& runs, const oracle::Answer& exact, const Problem& p);

// A case's emulated global accesses, every one shadow-checked: the global
// loads and stores a counting backend counted (CaseRecord::counts); 0
// where it counted none.
double emulated_accesses(const std::vector<std::pair<std::string, double>>& counts);

// The schedules the spread runs: kSpreadRuns where the judged cases'
// emulated accesses hold that many runs of the worst case's, else as many
// as they hold, but at least kMinSpreadRuns (a spread needs two runs).
// kSpreadRuns where the worst case counted none (nothing to bound by).
// A function of the counts alone: the same on every run of the seed.
int spread_schedules(double cases_accesses, double worst_accesses);

// The worst case, prepared again for the spread: its case, its oracle
// answer and the rule's bounds (empty: none), PyTorch's errors (vs-torch).
struct SpreadCase {
  const Case& c;
  const oracle::Answer& exact;
  const std::vector<std::vector<double>>& bounds;
  const std::vector<std::vector<double>>& torch_errors;
};

// Runs `w` under schedules 1 .. `schedules` of `v` (the variant's own
// schedule restored after), judging each; the first that fails makes
// `cert` fail and stops. Sets cert's spread_runs and, where it holds,
// spread_ulps.
void schedule_spread(Certificate& cert, const SpreadCase& w, const kernels::Variant& v,
                     const Rule& rule, int threads, int schedules);

}  // namespace moacert::properties
