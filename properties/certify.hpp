// Certification of one variant of one op in one format: the curated edge
// cases, then N random cases from the property suite's generators, each
// judged against the oracle under a rule; the first failure is shrunk
// (RapidCheck's shrink tree) and named by a token that replays it anywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.hpp"
#include "properties/check.hpp"
#include "properties/token.hpp"

namespace moacert::properties {

struct CertifyOptions {
  const kernels::Variant* variant = nullptr;
  Format format = Format::f32;
  int cases = 200;
  std::uint64_t seed = 0;
  Rule rule;
  int threads = 0;
  int max_shrinks = 400;  // evaluations spent shrinking a counterexample
  bool curated = true;    // run the curated edge cases first
  // Run PyTorch (variant `torch`, where this build has it for the op and
  // format) on every case too, for the equivalence report; the vs-torch
  // rule runs it anyway.
  bool equivalence = true;
  // Called after each case: (cases done, cases in all, phase).
  std::function<void(int, int, const char*)> progress;
};

// Per output tensor, over every element of every case.
struct TensorSummary {
  std::string name;
  std::int64_t elements = 0;
  double max_ulp = 0, mean_ulp = 0, p99_ulp = 0;
  double max_ratio = 0;  // error / allowed (bound, or K ulp, or R·torch + 1)
  double max_normwise_u = 0;
  std::int64_t undetermined = 0;
};

// One element of a failing or worst case, for reports and `reproduce`.
struct ElementReport {
  std::string tensor;
  moa::Index index;
  double exact = 0, computed = 0, ulps = 0, allowed = 0;
};

struct Certificate {
  Op op = Op::attention_fwd;
  std::string variant;
  Format format = Format::f32;
  Rule rule;
  std::uint64_t seed = 0;
  bool holds = true;
  int curated_run = 0, random_run = 0, discarded = 0;
  std::vector<TensorSummary> tensors;
  std::string worst_token;  // the case that came closest to failing (or failed)
  double worst_ratio = 0;
  std::string failure;                          // why the counterexample fails, in words
  std::string failure_case;                     // the shrunk case, described
  std::vector<ElementReport> failure_elements;  // its worst elements
  bool determinism_checked = false, determinism_holds = true;
  double seconds = 0;
  // Equivalence with PyTorch over the cases it ran on (vs_torch_cases; 0
  // when this build has no torch variant for the op and format): per output,
  // the largest errors of the kernel and of PyTorch against the oracle and
  // the largest direct difference, in ulps.
  int vs_torch_cases = 0;
  std::vector<Equivalence> vs_torch;
  // Where the variant ran: Variant::where ("host emulator", a GPU), else
  // "CPU".
  std::string ran_on;
  // A counting backend's counts (Variant::take_counts) over the judged cases
  // (not the shrink candidates): totals by name, and the float atomics
  // against the cost function's on the same cases, case by case.
  int counted_cases = 0;
  std::vector<std::pair<std::string, double>> counts;
  double cost_atomics = 0;
  int atomics_mismatches = 0;
  std::string atomics_mismatch;  // the first, in words
  // A variant with a seedable schedule that claims no determinism: the
  // worst case rerun under kSpreadRuns schedules, each judged under the
  // rule; per output, the largest spread (max - min over the runs) in ulps.
  int spread_runs = 0;
  std::vector<std::pair<std::string, double>> spread_ulps;
};
constexpr int kSpreadRuns = 20;

Certificate certify(const CertifyOptions& options);

// Re-creates a token's case and judges `variant` on it (the token's own
// variant, or another one). Fills `elements` with the worst elements.
struct Replay {
  CaseSpec spec;
  Case c;
  Verdict verdict;
  std::vector<ElementReport> worst;
};
Replay replay(const Token& token, const kernels::Variant& variant, int threads = 0,
              std::size_t worst_count = 10);

}  // namespace moacert::properties
