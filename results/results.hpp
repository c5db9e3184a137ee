// What a certification yields, as plain values: the rule it judged under,
// per-tensor summaries, the worst elements, the equivalence report against
// PyTorch and the certificate that holds them. Reports read these and
// nothing else (docs/design.md, "Who may include whom"): this header
// includes nothing of kernels/, oracle/ or the property engine (only the
// error histogram, itself a plain value).
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "reference/arithmetic.hpp"
#include "reference/conventions.hpp"
#include "reference/format.hpp"
#include "reference/moa/shape.hpp"
#include "reference/ops.hpp"
#include "results/error_histogram.hpp"

namespace moacert::properties {

// The pass rule (docs/design.md, "Error, rounding and bounds").
struct Rule {
  enum Kind { apriori, max_ulp, vs_torch } kind = apriori;
  double k = 0;  // K ulps, or R times PyTorch's error
  // "apriori", "max-ulp=K", "vs-torch=R".
  std::string str() const {
    if (kind == apriori) return "apriori";
    std::ostringstream os;
    os << (kind == max_ulp ? "max-ulp=" : "vs-torch=") << k;
    return os.str();
  }
};

// How a kernel's outputs compare with PyTorch's, per output tensor: each
// one's largest error against the oracle, and the largest direct difference
// |kernel - torch|, all in ulps of the format at the exact value.
struct Equivalence {
  std::string name;
  double kernel_max_ulp = 0, torch_max_ulp = 0, max_diff_ulp = 0;
};

// Per output tensor, over every element of every case.
struct TensorSummary {
  std::string name;
  std::int64_t elements = 0;
  double max_ulp = 0, mean_ulp = 0, p99_ulp = 0;
  // Quantiles of the ulp error over every judged element of the run, read
  // from ulp_histogram (error_histogram.hpp states their resolution).
  double p50_ulp = 0, p999_ulp = 0;
  ErrorHistogram ulp_histogram = make_error_histogram();
  ErrorHistogram ratio_histogram = make_error_histogram();  // error / allowed
  double max_ratio = 0;  // error / allowed (bound, or K ulp, or R·torch + 1)
  double max_normwise_u = 0;
  std::int64_t undetermined = 0;
  std::int64_t unbounded = 0;  // elements whose allowance is infinite: the rule is vacuous there
  // Elements where the declared arithmetic bounds nothing: judged under the
  // standard model's bound (properties/arithmetic_check.hpp).
  std::int64_t declared_vacuous = 0;
  // False for an output the kernel declares it does not produce
  // (reference/conventions.hpp): none of its elements was judged.
  bool produced = true;
  // The sampled oracle (docs/design.md, "Sampled certification"):
  // `elements` were judged of elements_total; in cases_sampled cases a
  // sample of rows was judged instead of every element, chosen as
  // sampled_rows says (stratum, rows of this tensor it chose, over those
  // cases; a row in several strata counts in each).
  std::int64_t elements_total = 0;
  int cases_sampled = 0;
  std::vector<std::pair<std::string, std::int64_t>> sampled_rows;
};

// One element of a failing or worst case, for reports and `reproduce`.
struct ElementReport {
  std::string tensor;
  moa::Index index;
  double exact = 0, computed = 0, ulps = 0, allowed = 0;
};

// The plots' data (docs/certificate.md#plot-data): bounded samples kept in
// the certificate, so that a report draws its plots from certificates alone
// (`moacert report --from`). properties/plot_samples.hpp chooses them.

// One judged case: its extents and, per output tensor, its largest ulp
// error and error / allowed (error against N and D, with a fitted growth).
struct CaseErrors {
  int ordinal = 0;                         // the case's position in the run, from 0
  std::vector<std::int64_t> extents;       // PlotData::dims' extents, in that order
  std::vector<double> max_ulp, max_ratio;  // per output tensor (PlotData::tensors)
};

// One judged element: its error in ulps and absolute, its a priori bound
// and PyTorch's ulp error on it, each NaN where the run has none (the
// max-ulp rule computes no bound; PyTorch ran only for the vs-torch rule or
// the equivalence report).
struct ElementPoint {
  int ordinal = 0;           // its case
  std::int64_t element = 0;  // its row-major position in the tensor
  double ulps = 0, abs_error = 0;
  double bound = NAN, torch_ulps = NAN;
};

// One kernel launch of a counting backend: its float atomics and global
// bytes (loads and stores) as counted against its cost function's model.
struct LaunchPoint {
  int ordinal = 0, launch = 0;  // its case, and its place among the case's launches
  std::string kernel;
  double atomics = 0, model_atomics = 0, bytes = 0, model_bytes = 0;
};

struct PlotData {
  std::vector<std::string> dims;     // the op's dimensions (dims_of), CaseErrors::extents' names
  std::vector<std::string> tensors;  // the output tensors, CaseErrors' and elements' order
  int cases_seen = 0;                // cases judged; `cases` keeps a bounded sample of them
  std::vector<CaseErrors> cases;
  // Per output tensor: the elements judged and a bounded sample of them
  // (the worst ones and a reservoir of the rest).
  std::vector<std::int64_t> elements_seen;
  std::vector<std::vector<ElementPoint>> elements;
  int launches_seen = 0;  // launches counted; `launches` keeps a bounded sample
  std::vector<LaunchPoint> launches;
};

struct Certificate {
  Op op = Op::attention_fwd;
  std::string variant;
  // The variant's role (kernels::Role, by its name): "dnf", "onf", "torch"
  // or "plugin". Reports read it, never the variant's name.
  std::string role;
  Format format = Format::f32;
  Rule rule;
  std::uint64_t seed = 0;
  std::string shape;  // certify --shape, as given ("N=4096,M=1..8192"); "" when none
  bool holds = true;
  // discarded: random cases drawn but not run, past the memory budget
  // (CertifyOptions::fits).
  int curated_run = 0, random_run = 0, discarded = 0;
  int case_files_run = 0;  // certify --case: files judged instead of generated cases
  // Cases the kernel refused outside its declared envelope (plugin ABI 2's
  // MOACERT_UNSUPPORTED): counted among those run, never a counterexample.
  int refused = 0;
  // How the variant declares it computes (kernels::Variant::arithmetic),
  // the model its a priori bounds were derived for (docs/bounds.md).
  Arithmetic arithmetic;
  // How the variant declares it takes its problem (kernels::Variant::
  // conventions): what the DNF was evaluated for and which outputs were
  // judged.
  Conventions conventions;
  // Beside the verdict under `arithmetic` (rule apriori,
  // docs/design.md#arithmetic): the worst error / allowed under the
  // standard model and whether it holds there; the tightest arithmetic of
  // the op's vocabulary the judged cases' errors are consistent with
  // ("standard", a declaration's text, or "" where no candidate is); and
  // certify --arithmetic-at-most's limit as given ("" without it).
  bool arithmetic_checked = false;
  bool standard_holds = true;
  double standard_worst_ratio = 0;
  std::string needs;
  std::string arithmetic_at_most;
  std::vector<TensorSummary> tensors;
  std::string worst_token;  // the case that came closest to failing (or failed)
  // The command that replays worst_token as certify printed it (a plugin's
  // names its library, `--plugin LIB.so#NAME`): what the JUnit failure
  // carries too. Empty: `moacert reproduce TOKEN`. Not in the JSON, whose
  // token a reader replays with the variant the certificate names.
  std::string reproduce_command;
  double worst_ratio = 0;
  std::string failure;       // why the counterexample fails, in words
  std::string failure_case;  // the shrunk case, described
  // The worst case found before shrinking: the failing case as drawn, its
  // error / allowed and its shape described. Shrinking keeps any smaller
  // case that still fails, so a kernel 41 times over its bound at M = 4096
  // may shrink to a near miss at M = 2: both are in view. Empty case while
  // it holds (worst_ratio is then the worst found).
  std::string worst_found_case;
  double worst_found_ratio = 0;
  std::vector<ElementReport> failure_elements;  // its worst elements
  bool determinism_checked = false, determinism_holds = true;
  double seconds = 0;
  // Equivalence with PyTorch over the cases it ran on (vs_torch_cases; 0
  // when this build has no torch variant for the op and format).
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
  // A backend that checks its counts against the cost function's model
  // (kernels/cuda/'s global traffic per launch and tensor): the judged
  // cases where some launch's traffic differed, and the first difference.
  // Recorded, not judged: `holds` is about the numbers (docs/design.md).
  bool traffic_checked = false;
  int traffic_mismatches = 0;
  std::string traffic_mismatch;
  // A variant with a seedable schedule that claims no determinism: the
  // worst case rerun under up to kSpreadRuns schedules, each judged under the
  // rule; per output, the largest spread (max - min over the runs) in ulps.
  int spread_runs = 0;
  std::vector<std::pair<std::string, double>> spread_ulps;
  // Its budget (properties/schedule_spread.hpp): the schedules it was to
  // run, as many runs of the worst case as the judged cases' emulated
  // global accesses hold (kMinSpreadRuns to kSpreadRuns), and those
  // accesses, the judged cases' in all and the worst case's.
  int spread_schedules = 0;
  double spread_cases_accesses = 0, spread_worst_accesses = 0;
  // A user's kernel (a plugin's, a worker's) that claims no determinism:
  // the worst case run at each of these thread counts (1, 2, and --threads
  // past 2), and per output the largest spread across them in ulps.
  // Recorded, not judged (docs/design.md#threads-and-determinism).
  std::vector<int> thread_counts;
  std::vector<std::pair<std::string, double>> thread_spread_ulps;
  // Where the judged cases' time went, in seconds: making the case, the
  // a priori bounds, the oracle, the variant under test, judging, PyTorch's
  // runs beside it, the determinism reruns, the shrinking of a
  // counterexample (its candidates' every phase); then the schedule spread
  // (the worst case prepared again and its runs). Summed over the cases:
  // with --jobs J the phases overlap, and their sum can pass `seconds`.
  double generation_seconds = 0, bounds_seconds = 0, oracle_seconds = 0, kernel_seconds = 0,
         judge_seconds = 0, torch_seconds = 0, determinism_seconds = 0, shrinking_seconds = 0,
         spread_seconds = 0;
  // Regime coverage (properties/regimes.hpp): each regime the op declares,
  // in its order, and how many judged cases reached it; a 0 is a regime
  // this run never reached.
  std::vector<std::pair<std::string, int>> regime_cases;
  // Envelope coverage (docs/design.md#deployment-envelope): per axis of the
  // op's deployment envelope ("N", "L", "D", ..., "H/Hkv" for the group),
  // the largest extent a judged case had and the thresholds t it crossed
  // (an extent past t) or not, among those its range allows.
  struct EnvelopeReach {
    std::string axis;
    std::int64_t largest = 0;
    std::vector<std::int64_t> crossed, not_crossed;
  };
  std::vector<EnvelopeReach> envelope_reach;
  PlotData plots;
};
constexpr int kSpreadRuns = 20;
constexpr int kMinSpreadRuns = 2;  // a spread needs two runs, whatever its budget

}  // namespace moacert::properties
