#include "properties/certify.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

#include <omp.h>
#include <rapidcheck.h>

#include "oracle/bounds.hpp"
#include "properties/arithmetic_check.hpp"
#include "properties/case_record.hpp"
#include "properties/earlier_calls.hpp"
#include "properties/ops/table.hpp"  // the envelope axes
#include "properties/parallel_cases.hpp"
#include "properties/plot_samples.hpp"
#include "properties/properties.hpp"
#include "properties/regimes.hpp"
#include "properties/sample.hpp"
#include "properties/schedule_spread.hpp"
#include "properties/spec_shrinks.hpp"

namespace moacert::properties {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Hands the pages the heap has freed back to the system. The budget counts
// a case's oracle and its kernels as two phases, the larger of them
// (cli/budget.hpp, Footprint): glibc keeps what the bounds' and the
// oracle's threads freed resident in their arenas for reuse, while the
// kernels' large buffers are mapped afresh, so that freed heap would sit
// under PyTorch's scores. Once per case, after the oracle: the oracle
// itself reuses what the bounds freed, and pages handed back are faulted
// in again when next touched.
void release_freed_heap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// Everything one judged case yields.
struct Judged {
  Case c;
  Verdict verdict;
  std::vector<AnyTensor> outputs;
  oracle::Answer exact;
  std::vector<std::vector<double>> bounds;  // a priori bounds (rules apriori, vs-torch)
  // Rule apriori, a kernel declaring arithmetic: the bounds of the standard
  // model too (properties/arithmetic_check.hpp); empty otherwise.
  std::vector<std::vector<double>> standard_bounds;
  // Per output, the judged elements of a case past a declared sum's reach
  // (past_declared_reach), judged under the standard model; empty otherwise.
  std::vector<std::int64_t> declared_vacuous;
  std::string past_reach;                         // why, in words (past_declared_reach)
  std::vector<std::vector<double>> torch_errors;  // PyTorch's (rule vs-torch)
  std::string error;                              // the kernel threw
  std::vector<AnyTensor> torch_outputs;           // PyTorch's, when it ran (equivalence)
  bool hang = false;                              // the kernel timed out (an isolated plugin)
  // The kernel refused the case outside its envelope (kernels::Unsupported):
  // counted, never a counterexample; the verdict holds, with no outputs.
  bool refused = false;
  int threads_ran = 0;  // the threads the kernel's run had (threads_of; 0: not known)
  Sample sample;        // the rows judged (all, at a small shape)
  std::vector<kernels::LaunchCounts> launches;  // a counting backend's, of this case's run
  double bounds_seconds = 0, oracle_seconds = 0, kernel_seconds = 0, judge_seconds = 0;
  double torch_seconds = 0;  // PyTorch's runs beside it (equivalence, vs-torch)
};

// The outputs a kernel declares it does not produce are not judged: none
// of their elements counts as evaluated (oracle::TensorAnswer::evaluated),
// so that every judgement, statistic and plot passes them by.
void leave_unproduced(oracle::Answer& exact, Op op, const Conventions& c) {
  const auto names = info(op).outputs;
  for (std::size_t t = 0; t < names.size() && t < exact.outputs.size(); ++t)
    if (!c.produces(names[t]))
      std::fill(exact.outputs[t].evaluated.begin(), exact.outputs[t].evaluated.end(), 0);
}

// The case made ready to judge, before the variant runs: the rows to judge,
// the oracle's answer, the a priori bounds, and PyTorch's errors (rule
// vs-torch) or outputs (the equivalence report). The schedule spread
// prepares its case again this way (CaseRunner::certificate).
Judged prepare_case(Case c, const kernels::Variant& v, const Rule& rule, int threads,
                    bool equivalence, double whole_work) {
  Judged j;
  j.c = std::move(c);
  j.c = as_taken(std::move(j.c), v.conventions);  // idempotent: a case taken so stays
  auto phase = Clock::now();
  j.sample = sample_rows(j.c, v.tiles, whole_work);
  const double sample_seconds = seconds_since(phase);
  phase = Clock::now();
  if (rule.kind == Rule::apriori || rule.kind == Rule::vs_torch)
    // for the arithmetic the variant declares (tensor cores: docs/bounds.md#tensor-cores)
    j.bounds = oracle::apriori_bounds(j.c, {.arithmetic = v.arithmetic},
                                      j.sample.rows ? &*j.sample.rows : nullptr);
  if (rule.kind == Rule::apriori && !v.arithmetic.standard())
    j.standard_bounds = oracle::apriori_bounds(j.c, {}, j.sample.rows ? &*j.sample.rows : nullptr);
  j.bounds_seconds = seconds_since(phase);
  phase = Clock::now();
  // Under rule apriori each element's `exact` need only be within 2^-10 of
  // the larger of its ulp and its bound: the error / bound the verdict
  // compares with 1 is then right to 2^-10 (oracle::Options::allowed).
  // A declared arithmetic's bounds are the standard model's or larger: the
  // standard ones ask the oracle for enough to judge under both.
  // Under vs-torch the allowance is a multiple of PyTorch's error, measured
  // against `exact` itself, and under max-ulp it is ulps: the ulp alone.
  j.exact = oracle::evaluate(j.c, {.allowed = rule.kind != Rule::apriori  ? nullptr
                                              : j.standard_bounds.empty() ? &j.bounds
                                                                          : &j.standard_bounds,
                                   .rows = j.sample.rows});
  release_freed_heap();
  leave_unproduced(j.exact, j.c.problem.op, v.conventions);
  // A case past a declared sum's reach: the declaration bounds nothing
  // there, and the standard model judges every element.
  if (!j.standard_bounds.empty()) j.past_reach = past_declared_reach(j.c.problem, v.arithmetic);
  if (!j.past_reach.empty()) {
    j.bounds = j.standard_bounds;
    for (const oracle::TensorAnswer& t : j.exact.outputs)
      j.declared_vacuous.push_back(std::count(t.evaluated.begin(), t.evaluated.end(), 1));
  }
  j.oracle_seconds = sample_seconds + seconds_since(phase);
  phase = Clock::now();
  // PyTorch's mask is bottom-right aligned: beside a top-left kernel it
  // computes another function. And it runs in one format: beside mixed
  // ones (docs/design.md#per-tensor-formats), it has none to compare.
  const bool mixed = mixed_formats(j.c.problem);
  if (rule.kind == Rule::vs_torch && mixed)
    throw std::invalid_argument("rule vs-torch: " + v.name +
                                " declares mixed tensor formats, PyTorch runs in one");
  const kernels::Variant* t =
      !mixed && (v.conventions.causal_alignment == CausalAlignment::bottom_right ||
                 !j.c.problem.causal())
          ? torch_for(j.c.problem.op, j.c.problem.format)
          : nullptr;
  if (rule.kind == Rule::vs_torch && !t && j.c.problem.causal() &&
      v.conventions.causal_alignment != CausalAlignment::bottom_right)
    throw std::invalid_argument("rule vs-torch: " + v.name +
                                " declares a top-left causal mask, PyTorch's is bottom-right");
  if (rule.kind == Rule::vs_torch) {
    if (!t)
      throw std::invalid_argument(
          "rule vs-torch needs the LibTorch adaptor for " + std::string(info(j.c.problem.op).name) +
          " in " + std::string(name(j.c.problem.format)) + ", absent from this build");
    j.torch_outputs = run_variant(*t, j.c, threads);
    j.torch_errors = abs_errors(j.exact, j.torch_outputs);
  } else if (equivalence && t) {  // under any other rule, for the report only
    try {
      j.torch_outputs = run_variant(*t, j.c, threads);
    } catch (const std::exception&) {
      j.torch_outputs.clear();  // no equivalence figures for this case
    }
  }
  j.torch_seconds = seconds_since(phase);
  return j;
}

// The threads a call with `threads` runs: those asked for, or the OpenMP
// default of this thread for a host kernel asked for 0; 0 where not known
// (the kernel's own choice in another process).
int threads_of(const kernels::Variant& v, int threads) {
  return threads > 0 ? threads : v.host_threads ? omp_get_max_threads() : 0;
}

Judged judge_case(Case c, const kernels::Variant& v, const Rule& rule, int threads,
                  bool equivalence = false, double whole_work = kWholeOracleWork) {
  Judged j = prepare_case(std::move(c), v, rule, threads, equivalence, whole_work);
  const auto* bounds = rule.kind == Rule::max_ulp ? nullptr : &j.bounds;
  const auto* torch = rule.kind == Rule::vs_torch ? &j.torch_errors : nullptr;
  auto phase = Clock::now();
  try {
    j.threads_ran = threads_of(v, threads);
    j.outputs = run_variant(v, j.c, threads);
  } catch (const kernels::Unsupported& e) {  // outside its envelope: inside is a KernelFault
    j.error = e.what();
    j.refused = true;
    return j;
  } catch (const kernels::KernelFault& e) {  // crashed, hung or wrote out of bounds
    j.error = e.what();
    j.hang = e.hang();
    j.verdict.holds = false;
    j.verdict.why = v.name + ": " + e.what();
    return j;
  } catch (const kernels::DeviceOutOfMemory&) {  // the machine's limit: no verdict
    throw;
  } catch (const std::exception& e) {
    j.error = e.what();
    j.verdict.holds = false;
    j.verdict.why = v.name + " threw: " + e.what();
    return j;
  }
  j.kernel_seconds += seconds_since(phase);
  phase = Clock::now();
  j.verdict = judge(j.c, j.exact, j.outputs, rule, bounds, torch);
  for (std::size_t t = 0; t < j.declared_vacuous.size() && t < j.verdict.tensors.size(); ++t)
    j.verdict.tensors[t].declared_vacuous = j.declared_vacuous[t];
  if (!j.verdict.holds && !j.past_reach.empty())
    j.verdict.why += "; judged under the standard model: " + j.past_reach;
  j.judge_seconds = seconds_since(phase);
  return j;
}

// Whether j's case fails again when the variant runs it once more (in a
// fresh process, earlier_calls.hpp), judged as j was.
bool fails_again(const Judged& j, const kernels::Variant& v, const Rule& rule, int threads) {
  try {
    const std::vector<AnyTensor> outputs = run_variant(v, j.c, threads);
    return !judge(j.c, j.exact, outputs, rule, rule.kind == Rule::max_ulp ? nullptr : &j.bounds,
                  rule.kind == Rule::vs_torch ? &j.torch_errors : nullptr)
                .holds;
  } catch (const kernels::Unsupported&) {
    return false;
  } catch (const kernels::DeviceOutOfMemory&) {  // the machine's limit: no verdict
    throw;
  } catch (const std::exception&) {
    return true;
  }
}

Judged judge_spec(const CaseSpec& spec, const kernels::Variant& v, const Rule& rule, int threads,
                  bool equivalence = false, double whole_work = kWholeOracleWork) {
  return judge_case(make_case(spec, v.conventions), v, rule, threads, equivalence, whole_work);
}

// The `count` elements nearest to failing (largest error / allowed).
std::vector<ElementReport> worst_elements(const Judged& j, const Rule& rule, std::size_t count) {
  std::vector<std::pair<double, ElementReport>> all;
  const auto names = info(j.c.problem.op).outputs;
  for_each_judged_element(
      j.c, j.exact, j.outputs, j.verdict.allowed, rule,
      [&](std::size_t t, std::size_t, const moa::Index& i, const oracle::DD& x, double y,
          double allowed, const ElementJudgement& e) {
        all.push_back({e.margin, {std::string(names[t]), i, x.hi, y, e.ulps, allowed}});
      });
  const std::size_t k = std::min(count, all.size());
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(k), all.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<ElementReport> out;
  for (std::size_t i = 0; i < k; ++i) out.push_back(all[i].second);
  return out;
}

// The variant run again on c with 1 thread twice and with 2, every run
// bitwise the same. The case's own run (`ran`, at `threads_ran`; 0: not
// known) stands for one of the three where it ran at 1 or 2 threads, so
// that the check makes two runs instead of three (docs/design.md, "Threads
// and determinism").
bool deterministic_on(const kernels::Variant& v, const Case& c, const std::vector<AnyTensor>& ran,
                      int threads_ran) {
  if (threads_ran == 1)
    return bitwise_equal(ran, run_variant(v, c, 1)) && bitwise_equal(ran, run_variant(v, c, 2));
  const auto one = run_variant(v, c, 1);
  if (threads_ran == 2) return bitwise_equal(one, run_variant(v, c, 1)) && bitwise_equal(one, ran);
  return bitwise_equal(one, run_variant(v, c, 1)) && bitwise_equal(one, run_variant(v, c, 2));
}

// The largest of each equivalence figure over cases.
void add_equivalence(Certificate& cert, const CaseRecord& r) {
  if (!r.has_equivalence) return;
  const std::vector<Equivalence>& e = r.equivalence;
  if (cert.vs_torch.empty()) cert.vs_torch = e;
  for (std::size_t t = 0; t < e.size(); ++t) {
    cert.vs_torch[t].kernel_max_ulp =
        std::max(cert.vs_torch[t].kernel_max_ulp, e[t].kernel_max_ulp);
    cert.vs_torch[t].torch_max_ulp = std::max(cert.vs_torch[t].torch_max_ulp, e[t].torch_max_ulp);
    cert.vs_torch[t].max_diff_ulp = std::max(cert.vs_torch[t].max_diff_ulp, e[t].max_diff_ulp);
  }
  ++cert.vs_torch_cases;
}

// A counting backend's counts of one case join the run's.
void add_counts(Certificate& cert, const CaseRecord& r) {
  if (!r.counted) return;
  if (r.traffic_checked) {
    if (!r.traffic_mismatch.empty() && cert.traffic_mismatches++ == 0)
      cert.traffic_mismatch = r.traffic_mismatch;
    cert.traffic_checked = true;
  }
  ++cert.counted_cases;
  for (const auto& [name, n] : r.counts) {
    auto it = std::find_if(cert.counts.begin(), cert.counts.end(),
                           [&](const auto& kept) { return kept.first == name; });
    if (it == cert.counts.end()) it = cert.counts.insert(cert.counts.end(), {name, 0.0});
    it->second += n;
  }
  cert.cost_atomics += r.cost_atomics;
  if (!r.atomics_mismatch.empty() && cert.atomics_mismatches++ == 0)
    cert.atomics_mismatch = r.atomics_mismatch;
}

struct Accumulator {
  std::vector<TensorSummary> tensors;
  void add(const CaseRecord& r, Op op) {
    if (tensors.empty())
      for (const TensorStats& s : r.tensors) tensors.push_back({s.name});
    for (std::size_t t = 0; t < r.tensors.size(); ++t) {
      const TensorStats& s = r.tensors[t];
      TensorSummary& a = tensors[t];
      a.elements_total += s.elements_total;
      if (r.sampled) {
        ++a.cases_sampled;
        const bool key = oracle::is_key_output(op, int(t));
        for (const Sample::Stratum& st : r.strata) {
          const std::int64_t rows = key ? st.key_rows : st.query_rows;
          auto it = std::find_if(a.sampled_rows.begin(), a.sampled_rows.end(),
                                 [&](const auto& kept) { return kept.first == st.name; });
          if (it == a.sampled_rows.end())
            it = a.sampled_rows.insert(a.sampled_rows.end(), {st.name, 0});
          it->second += rows;
        }
      }
      a.mean_ulp = (a.mean_ulp * double(a.elements) + s.mean_ulp * double(s.elements)) /
                   double(std::max<std::int64_t>(1, a.elements + s.elements));
      a.elements += s.elements;
      a.max_ulp = std::max(a.max_ulp, s.max_ulp);
      a.max_ratio = std::max(a.max_ratio, s.max_ratio);
      a.max_normwise_u = std::max(a.max_normwise_u, s.normwise_u);
      a.undetermined += s.undetermined;
      a.unbounded += s.unbounded;
      a.declared_vacuous += s.declared_vacuous;
      a.ulp_histogram += s.ulp_histogram;  // every element of every case
      a.ratio_histogram += s.ratio_histogram;
    }
  }
  void finish() {
    for (TensorSummary& a : tensors) {
      a.p50_ulp = quantile(a.ulp_histogram, 0.5, a.max_ulp);
      a.p99_ulp = quantile(a.ulp_histogram, 0.99, a.max_ulp);
      a.p999_ulp = quantile(a.ulp_histogram, 0.999, a.max_ulp);
    }
  }
};

// A judgement's time joins its case's, summed: whatever order the phases
// of a case are timed in (its classification is timed before its
// judgement), none overwrites another. Shrink candidates are not added:
// their time is the shrinking's (CaseRecord::shrinking_seconds).
void add_seconds(CaseRecord& r, const Judged& j) {
  r.bounds_seconds += j.bounds_seconds;
  r.oracle_seconds += j.oracle_seconds;
  r.kernel_seconds += j.kernel_seconds;
  r.judge_seconds += j.judge_seconds;
  r.torch_seconds += j.torch_seconds;
}

double ratio_of(const Judged& j) {
  double ratio = 0;
  for (const TensorStats& s : j.verdict.tensors) ratio = std::max(ratio, s.max_ratio);
  return ratio;
}

// Random case i of a certification, as RapidCheck draws it (its shrink
// tree with it).
rc::Shrinkable<CaseSpec> random_case(const CertifyOptions& o, const Token& base, int i) {
  const rc::Gen<CaseSpec> gen = gen_case_spec(o.variant->op, o.format, base.settings());
  return gen(rc::Random({o.seed, std::uint64_t(i), 0, 0}), size_for(i, o.cases));
}

std::string nondeterministic(const kernels::Variant& v) {
  return v.name +
         " is registered deterministic but its outputs differ between runs or thread counts";
}

// One case of a certification judged into its record (CaseRunner::run):
// each kind of case is one member, built from the steps they share.
class CaseRun {
 public:
  // Case `position` of `cases` in all, after the `earlier` calls in this
  // process (those the variant's process may keep state of); `failing`,
  // when given, is called as soon as the case is found to fail.
  CaseRun(const CertifyOptions& o, bool equivalence, int position, int cases,
          const std::vector<Token::Call>& earlier, const std::function<void()>& failing)
      : o_(o),
        v_(*o.variant),
        equivalence_(equivalence),
        cases_(cases),
        earlier_(earlier),
        failing_(failing),
        candidates_(candidate_arithmetics(v_.op, o.format, v_.arithmetic)) {
    r_.position = position;
  }

  // A curated edge case: judged, shrunk when it fails (through
  // shrinkable_spec: no generator drew it), and checked for determinism
  // where the variant claims it.
  CaseRecord curated(const CaseSpec& spec, Token token) && {
    r_.kind = CaseRecord::curated;
    Judged j = judge_generated(spec);
    keep_equivalence(j);
    r_.ratio = ratio_of(j);
    if (!j.verdict.holds) {
      announce_failure();  // before the shrinking, which may take long
      keep_drawn(j, describe(spec));
      set_up_by_earlier_calls(j, token);
      rc::Shrinkable<CaseSpec> s = [&] {
        const auto drawing = generation_lock();
        return shrinkable_spec(spec, token.shape);
      }();
      const CaseSpec shrunk = shrink(s, j, token);
      r_.ratio = ratio_of(j);  // the counterexample's, as shrunk
      if (j.error.empty()) keep_stats(j);
      fail(j, describe(shrunk));
      r_.token = token.encode();
      return std::move(r_);
    }
    if (j.error.empty()) keep_stats(j);
    r_.token = token.encode();
    if (v_.deterministic && !j.refused) holds_deterministically(j, describe(spec));
    return std::move(r_);
  }

  // A case file (certify --case): no token, the failure names the file.
  CaseRecord case_file(const std::string& path, Case c) && {
    r_.kind = CaseRecord::case_file;
    const Judged j = judge_counted(std::move(c), "case file " + path);
    keep_equivalence(j);
    if (j.error.empty()) keep_stats(j);
    r_.ratio = ratio_of(j);
    if (!j.verdict.holds) {
      keep_drawn(j, "case file " + path);
      fail(j, "case file " + path);
    }
    return std::move(r_);
  }

  // A random case past the memory budget: drawn, never started.
  CaseRecord over_budget() && {
    r_.kind = CaseRecord::random;
    r_.over_budget = true;
    return std::move(r_);
  }

  // A random case (drawn with its shrink tree `s`, named by `token`):
  // shrunk when it fails, checked for determinism when `determinism_due`.
  // A case whose determinism check fails keeps no statistics
  // (CaseRecord::accumulated).
  CaseRecord random(rc::Shrinkable<CaseSpec> s, const CaseSpec& spec, Token token,
                    bool determinism_due) && {
    r_.kind = CaseRecord::random;
    Judged j = judge_generated(spec);
    keep_equivalence(j);
    r_.ratio = ratio_of(j);
    if (j.refused) {
      r_.token = token.encode();
      return std::move(r_);
    }
    if (j.verdict.holds) {
      if (!determinism_due || holds_deterministically(j, describe(spec))) keep_stats(j);
      r_.token = token.encode();
      return std::move(r_);
    }
    announce_failure();  // before the shrinking, which may take long
    keep_drawn(j, describe(spec));
    set_up_by_earlier_calls(j, token);
    const CaseSpec shrunk = shrink(s, j, token);
    r_.ratio = ratio_of(j);  // the counterexample's, as shrunk
    keep_stats(j);
    fail(j, describe(shrunk));
    r_.token = token.encode();
    return std::move(r_);
  }

 private:
  // Judges case `c` (named `what` in count mismatches) into the record: its
  // regimes (those of the case as drawn, not of its shrinks), its time, and
  // a counting backend's counts of its own run, its float atomics against
  // the cost function's and the backend's own check of its counts (the
  // traffic law).
  Judged judge_counted(Case c, const std::string& what) {
    kernels::Instrumentation* counting = v_.instrumentation.get();
    if (counting) {  // drop what earlier calls left
      counting->take_counts();
      counting->take_count_mismatch();
    }
    const auto classifying = Clock::now();
    c = as_taken(std::move(c), v_.conventions);  // its regimes as the kernel takes it
    r_.regimes = classify(c).to_ullong();
    r_.extents.clear();
    for (moa::extent_t Dims::*field : kDimFields) r_.extents.push_back(c.problem.dims.*field);
    r_.generation_seconds += seconds_since(classifying);
    if (counting) counting->take_launch_counts();
    const bool equivalence = equivalence_ && (!o_.equivalence_fits || o_.equivalence_fits(c));
    Judged j = judge_case(std::move(c), v_, o_.rule, o_.threads, equivalence, o_.whole_oracle_work);
    r_.refused = j.refused;
    if (o_.rule.kind == Rule::apriori && j.error.empty() && !j.refused) {
      // Judging under the standard model and the candidates counts as judging.
      const auto judging = Clock::now();
      r_.has_arithmetic = true;
      r_.arithmetic =
          arithmetic_findings(j.c, j.exact, j.outputs, o_.rule,
                              j.standard_bounds.empty() ? j.bounds : j.standard_bounds, candidates_,
                              v_.arithmetic, j.sample.rows ? &*j.sample.rows : nullptr,
                              j.standard_bounds.empty() ? &j.verdict : nullptr);
      j.judge_seconds += seconds_since(judging);
    }
    if (counting) j.launches = counting->take_launch_counts();
    add_seconds(r_, j);
    if (counting && j.error.empty()) keep_counts(*counting, j, what);
    return j;
  }

  Judged judge_generated(const CaseSpec& spec) {
    const auto t = Clock::now();
    Case c = make_case(spec, v_.conventions);
    r_.generation_seconds += seconds_since(t);
    return judge_counted(std::move(c), describe(spec));
  }

  // Nothing when the backend counts nothing (Instrumentation::take_counts).
  void keep_counts(kernels::Instrumentation& counting, const Judged& j, const std::string& what) {
    std::optional<kernels::Counts> counts = counting.take_counts();
    if (!counts) return;
    if (const std::optional<std::string> mismatch = counting.take_count_mismatch()) {
      if (!mismatch->empty()) r_.traffic_mismatch = what + ": " + *mismatch;
      r_.traffic_checked = true;
    }
    r_.counted = true;
    r_.counts = std::move(*counts);
    double atomics = 0;
    for (const auto& [name, n] : r_.counts)
      if (name == "float atomics") atomics = n;
    r_.cost_atomics = v_.cost ? v_.cost(j.c.problem).atomics : 0;
    if (atomics != r_.cost_atomics) {
      r_.atomics_mismatch = what + ": counted " + std::to_string(atomics) +
                            " float atomics, the cost function says " +
                            std::to_string(r_.cost_atomics);
    }
  }

  // The statistics, the plots' share and the equivalence figures count as
  // judging (seconds_by_phase's `judge`).
  void keep_stats(const Judged& j) {
    const auto judging = Clock::now();
    r_.accumulated = true;
    r_.tensors = j.verdict.tensors;
    r_.sampled = j.sample.rows.has_value();
    r_.strata = j.sample.strata;
    r_.plot = plot_case(r_.position, j.c, j.exact, j.outputs, o_.rule, j.verdict.allowed,
                        j.bounds.empty() ? nullptr : &j.bounds, j.torch_outputs, j.launches);
    r_.judge_seconds += seconds_since(judging);
  }

  void keep_equivalence(const Judged& j) {
    if (j.torch_outputs.empty() || !j.error.empty()) return;
    const auto judging = Clock::now();
    r_.has_equivalence = true;
    r_.equivalence = equivalence(j.c, j.exact, j.outputs, j.torch_outputs);
    r_.judge_seconds += seconds_since(judging);
  }

  // The variant claims determinism: runs it again on j's case, and on a
  // difference the case fails as nondeterministic. False when it failed.
  bool holds_deterministically(Judged& j, std::string case_words) {
    const auto rerun = Clock::now();
    const bool same = deterministic_on(v_, j.c, j.outputs, j.threads_ran);
    r_.determinism_seconds += seconds_since(rerun);
    if (same) return true;
    r_.determinism_failed = true;
    j.verdict.holds = false;
    j.verdict.why = nondeterministic(v_);
    fail(j, std::move(case_words));
    return false;
  }

  // The failing case as drawn, before shrinking (CaseRecord::drawn_case).
  void keep_drawn(const Judged& j, std::string case_words) {
    r_.drawn_case = std::move(case_words);
    r_.drawn_ratio = ratio_of(j);
  }

  // Announced once, as soon as the case is found to fail.
  void announce_failure() {
    if (failing_ && !announced_) failing_();
    announced_ = true;
  }

  void fail(const Judged& j, std::string case_words) {
    announce_failure();
    r_.holds = false;
    r_.why = j.verdict.why;
    r_.failure_case = std::move(case_words);
    if (j.error.empty()) r_.failure_elements = worst_elements(j, o_.rule, 10);
  }

  // A failure of a variant whose process lives from call to call, after
  // earlier calls there: run again alone in a fresh process, before it is
  // shrunk. Where it holds there, it depends on earlier calls: the calls
  // that set it up (earlier_calls.hpp) join its token, which shrinking and
  // a replay make first, and its reason says so. An ordinary failure, or a
  // hang (each run would cost a whole timeout), is left as it was.
  void set_up_by_earlier_calls(Judged& j, Token& token) {
    if (!v_.fresh_process || earlier_.empty() || j.hang) return;
    const auto again = [&] { return fails_again(j, v_, o_.rule, o_.threads); };
    v_.fresh_process();
    if (again()) return;
    const std::optional<std::vector<Token::Call>> setup =
        find_setup(v_, token, earlier_, o_.threads, again);
    if (!setup) {
      j.verdict.why +=
          "; it holds when run again in a fresh worker, alone or after the calls "
          "before it, so its token may not replay";
      return;
    }
    token.setup = *setup;
    depends_ = depends_words(token, token.setup);
  }

  // Shrinks the failing case `s` (judged `j`): takes the first shrink that
  // still fails, until none does. The search is RapidCheck's
  // (rc::shrinkable::findLocalMin walks the same tree the same way),
  // written out here because the token must record the path taken (the
  // index of each shrink accepted, so that reproduce re-creates the shrunk
  // case without searching again), the search has an evaluation budget,
  // and the last failing candidate's judgement is kept for the
  // certificate; findLocalMin returns only the value and a count. A hang
  // is not shrunk: each candidate would cost a whole timeout.
  // Each step of the tree is taken under the generation lock, each
  // candidate judged outside it. Returns the shrunk case.
  CaseSpec shrink(rc::Shrinkable<CaseSpec>& s, Judged& j, Token& token) {
    const auto start = Clock::now();
    std::unique_lock<std::mutex> drawing = generation_lock();
    CaseSpec value = s.value();
    int budget = j.hang ? 0 : o_.max_shrinks;
    bool shrunk = true;
    while (shrunk && budget > 0) {
      shrunk = false;
      auto shrinks = s.shrinks();
      for (std::uint32_t k = 0; budget > 0; ++k) {
        auto next = shrinks.next();
        if (!next) break;
        --budget;
        CaseSpec spec = next->value();
        drawing.unlock();
        if (!token.setup.empty()) run_setup(v_, token, token.setup, o_.threads);
        Judged candidate = judge_spec(spec, v_, o_.rule, o_.threads, false, o_.whole_oracle_work);
        drawing.lock();
        if (candidate.verdict.holds) continue;
        token.path.push_back(k);
        s = *next;
        value = std::move(spec);
        j = std::move(candidate);
        shrunk = true;
        if (o_.progress) o_.progress(r_.position + 1, cases_, "shrinking");
        break;
      }
    }
    if (!depends_.empty()) j.verdict.why += "; " + depends_;
    r_.shrinking_seconds += seconds_since(start);
    return value;
  }

  const CertifyOptions& o_;
  const kernels::Variant& v_;
  bool equivalence_;
  int cases_;
  const std::vector<Token::Call>& earlier_;
  std::string depends_;  // the reason's words for a failure that depends on earlier calls
  const std::function<void()>& failing_;
  bool announced_ = false;
  std::vector<Arithmetic> candidates_;  // what `needs` chooses from
  CaseRecord r_;
};

}  // namespace

Token base_token(const CertifyOptions& o) {
  const kernels::Variant& v = *o.variant;
  Token base;
  base.op = v.op;
  base.format = o.format;
  base.variant = v.name;
  base.rule = o.rule;
  base.seed = o.seed;
  base.tiles = v.tiles;
  std::sort(base.tiles.begin(), base.tiles.end());
  base.shape = within_variant(o.shape, v);
  return base;
}

const char* phase_of(CaseRecord::Kind kind) {
  return kind == CaseRecord::curated  ? "curated"
         : kind == CaseRecord::random ? "random"
                                      : "case files";
}

CaseRunner::CaseRunner(CertifyOptions options)
    : o_(std::move(options)),
      case_files_([this] {
        std::vector<std::optional<Case>> cases;
        for (auto& [path, c] : o_.case_files) cases.emplace_back(std::move(c));
        return cases;
      }()),
      base_(base_token(o_)),
      curated_(o_.curated && o_.case_files.empty()
                   ? curated_specs(o_.variant->op, o_.format, base_.settings())
                   : std::vector<CaseSpec>{}),
      // PyTorch against itself says nothing: no equivalence report for it.
      equivalence_(o_.equivalence && o_.variant->role != kernels::Role::torch),
      start_(Clock::now()) {}

int CaseRunner::size() const {
  return int(curated_.size()) + (o_.case_files.empty() ? o_.cases : int(o_.case_files.size()));
}

CaseRecord CaseRunner::run(int position, const std::function<void()>& failing) const {
  CaseRun run(o_, equivalence_, position, size(), earlier_, failing);
  const int n_curated = int(curated_.size());
  // The calls made in the variant's process, which may keep state from one
  // to the next (earlier_calls.hpp); none for a variant run in this one.
  auto ran = [&](const Token& t) {
    if (o_.variant->fresh_process) earlier_.push_back({t.index, t.size});
  };
  if (position < n_curated) {
    Token t = base_;
    t.index = -std::int32_t(position) - 1;
    CaseRecord r = std::move(run).curated(curated_[std::size_t(position)], t);
    ran(t);
    return r;
  }
  if (!o_.case_files.empty()) {
    const auto at = std::size_t(position - n_curated);
    std::optional<Case>& c = case_files_[at];
    if (!c) throw std::logic_error("certify: case file " + o_.case_files[at].first + " run twice");
    Case handed = std::move(*c);
    c.reset();
    return std::move(run).case_file(o_.case_files[at].first, std::move(handed));
  }
  const int i = position - n_curated;
  Token t = base_;
  t.index = i;
  t.size = size_for(i, o_.cases);
  std::unique_lock<std::mutex> drawing = generation_lock();
  rc::Shrinkable<CaseSpec> drawn = random_case(o_, base_, i);
  CaseSpec spec = drawn.value();
  drawing.unlock();
  if (o_.fits && !o_.fits(spec)) return std::move(run).over_budget();
  CaseRecord r = std::move(run).random(std::move(drawn), std::move(spec), t,
                                       o_.variant->deterministic && i % 10 == 0);
  ran(t);
  return r;
}

bool CaseRunner::alone(int position) const {
  if (!o_.fits_beside) return false;
  const int n_curated = int(curated_.size());
  if (position < n_curated) return !o_.fits_beside(curated_[std::size_t(position)]);
  if (!o_.case_files.empty()) return true;  // of any size: each alone
  const auto drawing = generation_lock();
  return !o_.fits_beside(random_case(o_, base_, position - n_curated).value());
}

namespace {

// The envelope coverage of the judged records (Certificate::envelope_reach):
// per envelope axis of `op`, the largest extent and the thresholds crossed,
// those past the end of `shape`'s range (the variant's envelope included)
// left out. Records without extents (case files) count as none.
std::vector<Certificate::EnvelopeReach> envelope_reach(Op op, const ShapeConstraints& shape,
                                                       const std::vector<CaseRecord>& records) {
  std::vector<Certificate::EnvelopeReach> out;
  auto index = [](moa::extent_t Dims::*field) {
    return std::size_t(std::find(kDimFields.begin(), kDimFields.end(), field) - kDimFields.begin());
  };
  for (const EnvelopeAxis& a : property_op(op).envelope_axes) {
    Certificate::EnvelopeReach reach;
    reach.axis = "H/Hkv";
    if (!a.group)
      for (std::string_view name : dims_of(op))
        if (dim_field(name) == a.field) reach.axis = std::string(name);
    for (const CaseRecord& r : records) {
      if (r.extents.size() != kDimFields.size()) continue;
      const moa::extent_t e = a.group ? r.extents[index(&Dims::H)] / r.extents[index(&Dims::Hkv)]
                                      : r.extents[index(a.field)];
      reach.largest = std::max(reach.largest, e);
    }
    const moa::extent_t hi = a.group ? shape.range(&Dims::H).hi : shape.range(a.field).hi;
    for (moa::extent_t t : a.thresholds())
      if (t < hi) (reach.largest > t ? reach.crossed : reach.not_crossed).push_back(t);
    out.push_back(std::move(reach));
  }
  return out;
}

}  // namespace

Certificate CaseRunner::certificate(std::vector<CaseRecord> records) const {
  const kernels::Variant& v = *o_.variant;
  Certificate cert;
  cert.op = v.op;
  cert.variant = v.name;
  cert.role = std::string(kernels::name(v.role));
  cert.arithmetic = v.arithmetic;
  cert.conventions = v.conventions;
  cert.format = o_.format;
  cert.rule = o_.rule;
  cert.seed = o_.seed;
  cert.shape = o_.shape.str(v.op);
  cert.ran_on = v.where.empty() ? "CPU" : v.where;
  cert.determinism_checked = v.deterministic;
  std::sort(records.begin(), records.end(),
            [](const CaseRecord& a, const CaseRecord& b) { return a.position < b.position; });
  for (Regime g : declared_regimes(v.op)) cert.regime_cases.push_back({std::string(name(g)), 0});
  Accumulator acc;
  PlotSampler plots(v.op);
  std::optional<int> worst;           // the position of the worst case, for the schedule spread
  std::optional<int> worst_position;  // the worst generated case's, for the thread spread
  std::size_t k = 0;
  for (; k < records.size() && cert.holds; ++k) {
    const CaseRecord& r = records[k];
    if (r.position != int(k))
      throw std::logic_error("certificate: no record of case " + std::to_string(k));
    if (r.over_budget) {  // never started: nothing judged, never the worst case
      ++cert.discarded;
      continue;
    }
    ++(r.kind == CaseRecord::curated  ? cert.curated_run
       : r.kind == CaseRecord::random ? cert.random_run
                                      : cert.case_files_run);
    cert.generation_seconds += r.generation_seconds;
    cert.bounds_seconds += r.bounds_seconds;
    cert.oracle_seconds += r.oracle_seconds;
    cert.kernel_seconds += r.kernel_seconds;
    cert.judge_seconds += r.judge_seconds;
    cert.torch_seconds += r.torch_seconds;
    cert.determinism_seconds += r.determinism_seconds;
    cert.shrinking_seconds += r.shrinking_seconds;
    add_counts(cert, r);
    cert.refused += r.refused;
    const Regimes reached(r.regimes);
    for (std::size_t g = 0; g < cert.regime_cases.size(); ++g)
      cert.regime_cases[g].second += reached.test(std::size_t(declared_regimes(v.op)[g]));
    if (r.accumulated) {
      acc.add(r, v.op);
      plots.add(r.plot);
    }
    add_equivalence(cert, r);
    if (!r.holds) {
      cert.holds = false;
      cert.determinism_holds = !r.determinism_failed;
      cert.failure = r.why;
      cert.failure_case = r.failure_case;
      if (!r.token.empty()) cert.worst_token = r.token;
      // The counterexample's own error / allowed where its elements failed
      // the rule (infinite where one allowed no error at all is wrong);
      // infinite where none did: no output was judged (the kernel's error,
      // hang or crash) or its outputs differ between runs.
      const bool elements_failed =
          !r.failure_elements.empty() && !r.determinism_failed && r.ratio > 1;
      cert.worst_ratio = elements_failed ? r.ratio : INFINITY;
      cert.failure_elements = r.failure_elements;
      if (elements_failed) {  // the larger of the case as drawn and as shrunk
        const bool drawn_worse = r.drawn_ratio >= r.ratio;
        cert.worst_found_case = drawn_worse ? r.drawn_case : r.failure_case;
        cert.worst_found_ratio = drawn_worse ? r.drawn_ratio : r.ratio;
      }
    } else if (r.kind == CaseRecord::case_file) {
      cert.worst_ratio = std::max(cert.worst_ratio, r.ratio);
    } else if (r.ratio >= cert.worst_ratio || cert.worst_token.empty()) {
      cert.worst_ratio = r.ratio;
      cert.worst_token = r.token;
      worst_position = r.position;
      if (v.instrumentation && v.instrumentation->seeds_schedule() && !v.deterministic)
        worst = r.position;
    }
  }
  // Cases past the counterexample (judged by other ranks while it was
  // found) are not the run's: one process stops at the counterexample, so
  // the certificate reads the same cases whatever the ranks.
  records.resize(k);
  check_arithmetic(cert, records);
  cert.envelope_reach = envelope_reach(v.op, base_.shape, records);
  if (cert.holds && int(records.size()) != size())
    throw std::logic_error("certificate: " + std::to_string(records.size()) + " records of " +
                           std::to_string(size()) + " cases");

  // The schedule spread of the worst case (a seedable schedule, no
  // determinism claim): every run judged under the rule. The case is made
  // and the oracle asked again, so that the records stay small and the
  // spread runs where the certificate is made.
  auto prepared = [&](int position) {  // a curated or random case, made and asked again
    const CaseSpec spec = position < int(curated_.size())
                              ? curated_[std::size_t(position)]
                              : random_case(o_, base_, position - int(curated_.size())).value();
    return prepare_case(make_case(spec, v.conventions), v, o_.rule, o_.threads,
                        /*equivalence=*/false, o_.whole_oracle_work);
  };
  if (cert.holds && worst) {
    const auto spreading = Clock::now();
    const Judged w = prepared(*worst);
    for (const CaseRecord& r : records) cert.spread_cases_accesses += emulated_accesses(r.counts);
    cert.spread_worst_accesses = emulated_accesses(records[std::size_t(*worst)].counts);
    cert.spread_schedules =
        spread_schedules(cert.spread_cases_accesses, cert.spread_worst_accesses);
    schedule_spread(cert, {w.c, w.exact, w.bounds, w.torch_errors}, v, o_.rule, o_.threads,
                    cert.spread_schedules);
    cert.spread_seconds = seconds_since(spreading);
  }
  // A user's kernel that claims no determinism: the worst case at 1 and 2
  // threads (and --threads past 2), its spread recorded, not judged.
  if (cert.holds && v.role == kernels::Role::plugin && !v.deterministic && worst_position) {
    const Judged w = prepared(*worst_position);
    cert.thread_counts = {1, 2};
    if (o_.threads > 2) cert.thread_counts.push_back(o_.threads);
    std::vector<std::vector<AnyTensor>> runs;
    try {
      for (int threads : cert.thread_counts) runs.push_back(run_variant(v, w.c, threads));
      cert.thread_spread_ulps = spread_ulps(runs, w.exact, w.c.problem);
      std::erase_if(cert.thread_spread_ulps,  // an output it does not produce says nothing
                    [&](const auto& t) { return !v.conventions.produces(t.first); });
    } catch (const std::exception&) {  // a fault here is not the verdict's: nothing recorded
      cert.thread_counts.clear();
    }
  }
  acc.finish();
  cert.tensors = acc.tensors;
  for (TensorSummary& t : cert.tensors) t.produced = v.conventions.produces(t.name);
  cert.plots = plots.finish();
  cert.seconds = seconds_since(start_);
  return cert;
}

Certificate certify(CertifyOptions options) {
  options.progress = serialized(std::move(options.progress));
  const auto progress = options.progress;
  const int jobs = jobs_for(*options.variant, options.jobs);
  const CaseRunner runner(std::move(options));
  return runner.certificate(run_cases(runner, jobs, progress));
}

Replay replay(const Token& token, const kernels::Variant& variant, int threads,
              std::size_t worst_count) {
  const std::optional<CaseSpec> spec = spec_of(token);
  if (!spec) throw std::invalid_argument("token names a case this version cannot re-create");
  // A failure that depends on earlier calls: its setup first, in a fresh
  // process; said so where the case alone holds there.
  if (!token.setup.empty()) run_setup(variant, token, token.setup, threads);
  Judged j = judge_spec(*spec, variant, token.rule, threads);
  if (!token.setup.empty() && !j.verdict.holds && variant.fresh_process) {
    variant.fresh_process();
    if (!fails_again(j, variant, token.rule, threads))
      j.verdict.why += "; " + depends_words(token, token.setup);
  }
  Replay r{*spec, j.c, j.verdict, {}};
  if (j.error.empty()) r.worst = worst_elements(j, token.rule, worst_count);
  return r;
}

}  // namespace moacert::properties
