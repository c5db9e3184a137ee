#include "properties/certify.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include <rapidcheck.h>

#include "oracle/bounds.hpp"
#include "properties/plot_samples.hpp"
#include "properties/properties.hpp"
#include "properties/sample.hpp"

namespace moacert::properties {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Everything one judged case yields.
struct Judged {
  Case c;
  Verdict verdict;
  std::vector<AnyTensor> outputs;
  oracle::Answer exact;
  std::vector<std::vector<double>> allowed;       // a priori bounds (rules apriori, vs-torch)
  std::vector<std::vector<double>> torch_errors;  // PyTorch's (rule vs-torch)
  std::string error;                              // the kernel threw
  std::vector<AnyTensor> torch_outputs;           // PyTorch's, when it ran (equivalence)
  bool hang = false;                              // the kernel timed out (an isolated plugin)
  Sample sample;                                  // the rows judged (all, at a small shape)
  std::vector<kernels::LaunchCounts> launches;    // a counting backend's, of this case's run
  double bounds_seconds = 0, oracle_seconds = 0, kernel_seconds = 0, judge_seconds = 0;
};

Judged judge_case(Case c, const kernels::Variant& v, const Rule& rule, int threads,
                  bool equivalence = false, double whole_work = kWholeOracleWork) {
  Judged j;
  j.c = std::move(c);
  auto phase = Clock::now();
  j.sample = sample_rows(j.c, v.tiles, whole_work);
  j.exact = oracle::evaluate(j.c, {.rows = j.sample.rows});
  j.oracle_seconds = seconds_since(phase);
  const std::vector<std::vector<double>>* bounds = nullptr;
  const std::vector<std::vector<double>>* torch = nullptr;
  phase = Clock::now();
  if (rule.kind == Rule::apriori || rule.kind == Rule::vs_torch) {
    j.allowed = oracle::apriori_bounds(j.c, {}, j.sample.rows ? &*j.sample.rows : nullptr);
    bounds = &j.allowed;
  }
  j.bounds_seconds = seconds_since(phase);
  phase = Clock::now();
  const kernels::Variant* t = torch_for(j.c.problem.op, j.c.problem.format);
  if (rule.kind == Rule::vs_torch) {
    if (!t)
      throw std::invalid_argument(
          "rule vs-torch needs the LibTorch adaptor for " + std::string(info(j.c.problem.op).name) +
          " in " + std::string(name(j.c.problem.format)) + ", absent from this build");
    j.torch_outputs = run_variant(*t, j.c, threads);
    j.torch_errors = abs_errors(j.exact, j.torch_outputs);
    torch = &j.torch_errors;
  } else if (equivalence && t) {  // under any other rule, for the report only
    try {
      j.torch_outputs = run_variant(*t, j.c, threads);
    } catch (const std::exception&) {
      j.torch_outputs.clear();  // no equivalence figures for this case
    }
  }
  try {
    j.outputs = run_variant(v, j.c, threads);
  } catch (const kernels::KernelFault& e) {  // crashed, hung or wrote out of bounds
    j.error = e.what();
    j.hang = e.hang();
    j.verdict.holds = false;
    j.verdict.why = v.name + ": " + e.what();
    return j;
  } catch (const std::exception& e) {
    j.error = e.what();
    j.verdict.holds = false;
    j.verdict.why = v.name + " threw: " + e.what();
    return j;
  }
  j.kernel_seconds = seconds_since(phase);
  phase = Clock::now();
  j.verdict = judge(j.c, j.exact, j.outputs, rule, bounds, torch);
  j.judge_seconds = seconds_since(phase);
  return j;
}

Judged judge_spec(const CaseSpec& spec, const kernels::Variant& v, const Rule& rule, int threads,
                  bool equivalence = false, double whole_work = kWholeOracleWork) {
  return judge_case(make_case(spec), v, rule, threads, equivalence, whole_work);
}

// The `count` elements nearest to failing (largest error / allowed).
std::vector<ElementReport> worst_elements(const Judged& j, const Rule& rule, std::size_t count) {
  std::vector<std::pair<double, ElementReport>> all;
  const auto names = info(j.c.problem.op).outputs;
  for_each_judged_element(
      j.c, j.exact, j.outputs, allowances(j.c, j.exact, rule, &j.allowed, &j.torch_errors), rule,
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

bool deterministic_on(const kernels::Variant& v, const Case& c) {
  const auto one = run_variant(v, c, 1);
  return bitwise_equal(one, run_variant(v, c, 1)) && bitwise_equal(one, run_variant(v, c, 2));
}

// The largest of each equivalence figure over cases.
void add_equivalence(Certificate& cert, const Judged& j) {
  if (j.torch_outputs.empty() || !j.error.empty()) return;
  const auto e = equivalence(j.c, j.exact, j.outputs, j.torch_outputs);
  if (cert.vs_torch.empty()) cert.vs_torch = e;
  for (std::size_t t = 0; t < e.size(); ++t) {
    cert.vs_torch[t].kernel_max_ulp =
        std::max(cert.vs_torch[t].kernel_max_ulp, e[t].kernel_max_ulp);
    cert.vs_torch[t].torch_max_ulp = std::max(cert.vs_torch[t].torch_max_ulp, e[t].torch_max_ulp);
    cert.vs_torch[t].max_diff_ulp = std::max(cert.vs_torch[t].max_diff_ulp, e[t].max_diff_ulp);
  }
  ++cert.vs_torch_cases;
}

struct Accumulator {
  std::vector<TensorSummary> tensors;
  int cases = 0;  // added
  void add(const Verdict& v, Op op, const Sample& sample) {
    ++cases;
    if (tensors.empty())
      for (const TensorStats& s : v.tensors) tensors.push_back({s.name});
    for (std::size_t t = 0; t < v.tensors.size(); ++t) {
      const TensorStats& s = v.tensors[t];
      TensorSummary& a = tensors[t];
      a.elements_total += s.elements_total;
      if (sample.rows) {
        ++a.cases_sampled;
        const bool key = oracle::is_key_output(op, int(t));
        for (const Sample::Stratum& st : sample.strata) {
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

ShapeConstraints within_variant(ShapeConstraints shape, const kernels::Variant& v) {
  for (const auto& [field, largest] : v.max_extents) {
    ExtentRange r = shape.range(field);
    if (r.lo > largest) {
      std::string axis = "?";  // the op's name for the field ("L" for decode's M)
      for (std::string_view a : dims_of(v.op))
        if (dim_field(a) == field) axis = std::string(a);
      throw std::invalid_argument(v.name + " supports " + axis + " up to " +
                                  std::to_string(largest) + "; --shape asks " + axis +
                                  " >= " + std::to_string(r.lo));
    }
    r.hi = std::min(r.hi, largest);
    shape.set(field, r);
  }
  return shape;
}

Certificate certify(const CertifyOptions& o) {
  const auto start = Clock::now();
  const kernels::Variant& v = *o.variant;
  Certificate cert;
  cert.op = v.op;
  cert.variant = v.name;
  cert.format = o.format;
  cert.rule = o.rule;
  cert.seed = o.seed;
  cert.shape = o.shape.str(v.op);
  const Token base = base_token(o);

  cert.ran_on = v.where.empty() ? "CPU" : v.where;
  // PyTorch against itself says nothing: no equivalence report for torch.
  const bool equivalence = o.equivalence && v.name != "torch";
  // A counting backend: the counts of each judged case's own run, its
  // float atomics against the cost function's, and the backend's own check
  // of its counts (the traffic law). `what` names the case.
  auto judge_counted = [&](Case c, const std::string& what) {
    if (v.take_counts) v.take_counts();  // drop what earlier calls left
    if (v.take_count_mismatch) v.take_count_mismatch();
    if (v.take_launch_counts) v.take_launch_counts();
    Judged j = judge_case(std::move(c), v, o.rule, o.threads, equivalence, o.whole_oracle_work);
    if (v.take_launch_counts) j.launches = v.take_launch_counts();
    cert.bounds_seconds += j.bounds_seconds;
    cert.oracle_seconds += j.oracle_seconds;
    cert.kernel_seconds += j.kernel_seconds;
    cert.judge_seconds += j.judge_seconds;
    if (!v.take_counts || !j.error.empty()) return j;
    if (v.take_count_mismatch) {
      const std::string mismatch = v.take_count_mismatch();
      if (!mismatch.empty() && cert.traffic_mismatches++ == 0)
        cert.traffic_mismatch = what + ": " + mismatch;
      cert.traffic_checked = true;
    }
    const auto counts = v.take_counts();
    ++cert.counted_cases;
    double atomics = 0;
    for (const auto& [name, n] : counts) {
      auto it = std::find_if(cert.counts.begin(), cert.counts.end(),
                             [&](const auto& kept) { return kept.first == name; });
      if (it == cert.counts.end()) it = cert.counts.insert(cert.counts.end(), {name, 0.0});
      it->second += n;
      if (name == "float atomics") atomics = n;
    }
    const double model = v.cost ? v.cost(j.c.problem).atomics : 0;
    cert.cost_atomics += model;
    if (atomics != model && cert.atomics_mismatches++ == 0) {
      cert.atomics_mismatch = what + ": counted " + std::to_string(atomics) +
                              " float atomics, the cost function says " + std::to_string(model);
    }
    return j;
  };
  auto judge_generated = [&](const CaseSpec& spec) {
    const auto t = Clock::now();
    Case c = make_case(spec);
    cert.generation_seconds += seconds_since(t);
    return judge_counted(std::move(c), describe(spec));
  };
  std::optional<Judged> worst;  // for the schedule spread
  const bool from_files = !o.case_files.empty();
  const auto curated = o.curated && !from_files ? curated_specs(v.op, o.format, base.settings())
                                                : std::vector<CaseSpec>{};
  const int total = int(curated.size()) + (from_files ? int(o.case_files.size()) : o.cases);
  Accumulator acc;
  PlotSampler plots(v.op);
  // A judged case joins the statistics and the plots' samples, numbered in
  // run order.
  auto accept = [&](const Judged& j) {
    acc.add(j.verdict, v.op, j.sample);
    const auto allowed = allowances(j.c, j.exact, o.rule, &j.allowed, &j.torch_errors);
    plots.add(plot_case(acc.cases - 1, j.c, j.exact, j.outputs, o.rule, allowed,
                        j.allowed.empty() ? nullptr : &j.allowed, j.torch_outputs, j.launches));
  };
  cert.determinism_checked = v.deterministic;
  auto ratio_of = [](const Judged& j) {
    double ratio = 0;
    for (const TensorStats& s : j.verdict.tensors) ratio = std::max(ratio, s.max_ratio);
    return ratio;
  };
  auto note_worst = [&](const Judged& j, const Token& t) {
    const double ratio = ratio_of(j);
    if (ratio >= cert.worst_ratio || cert.worst_token.empty()) {
      cert.worst_ratio = ratio;
      cert.worst_token = t.encode();
      if (v.set_schedule_seed && !v.deterministic) worst = j;
    }
  };
  auto fail = [&](const Judged& j, const Token& t, const CaseSpec& spec) {
    cert.holds = false;
    cert.failure = j.verdict.why;
    cert.failure_case = describe(spec);
    cert.worst_token = t.encode();
    cert.worst_ratio = INFINITY;
    if (j.error.empty()) cert.failure_elements = worst_elements(j, o.rule, 10);
  };

  // 1. The curated edge cases.
  for (std::size_t k = 0; k < curated.size(); ++k) {
    Token t = base;
    t.index = -std::int32_t(k) - 1;
    const Judged j = judge_generated(curated[k]);
    ++cert.curated_run;
    if (j.error.empty()) accept(j);
    add_equivalence(cert, j);
    if (!j.verdict.holds) {
      fail(j, t, curated[k]);
      break;
    }
    if (v.deterministic && !deterministic_on(v, j.c)) {
      cert.determinism_holds = false;
      Judged d = j;
      d.verdict.holds = false;
      d.verdict.why =
          v.name +
          " is registered deterministic but its outputs differ between runs or thread counts";
      fail(d, t, curated[k]);
      break;
    }
    note_worst(j, t);
    if (o.progress) o.progress(int(k) + 1, total, "curated");
  }

  // Or the case files given: no token (a file is not a generated case), the
  // certificate names the file.
  for (std::size_t k = 0; cert.holds && k < o.case_files.size(); ++k) {
    const auto& [path, c] = o.case_files[k];
    const Judged j = judge_counted(c, "case file " + path);
    ++cert.case_files_run;
    add_equivalence(cert, j);
    if (j.error.empty()) accept(j);
    if (!j.verdict.holds) {
      cert.holds = false;
      cert.failure = j.verdict.why;
      cert.failure_case = "case file " + path;
      cert.worst_ratio = INFINITY;
      if (j.error.empty()) cert.failure_elements = worst_elements(j, o.rule, 10);
      break;
    }
    cert.worst_ratio = std::max(cert.worst_ratio, ratio_of(j));
    if (o.progress) o.progress(int(k) + 1, total, "case files");
  }

  // 2. Random cases, shrinking the first failure.
  const rc::Gen<CaseSpec> gen = gen_case_spec(v.op, o.format, base.settings());
  for (int i = 0; !from_files && cert.holds && i < o.cases; ++i) {
    Token t = base;
    t.index = i;
    t.size = size_for(i, o.cases);
    rc::Shrinkable<CaseSpec> s = gen(rc::Random({o.seed, std::uint64_t(i), 0, 0}), t.size);
    Judged j = judge_generated(s.value());
    ++cert.random_run;
    add_equivalence(cert, j);
    if (j.verdict.holds && v.deterministic && i % 10 == 0 && !deterministic_on(v, j.c)) {
      cert.determinism_holds = false;
      j.verdict.holds = false;
      j.verdict.why =
          v.name +
          " is registered deterministic but its outputs differ between runs or thread counts";
      fail(j, t, s.value());
      break;
    }
    if (j.verdict.holds) {
      accept(j);
      note_worst(j, t);
      if (o.progress) o.progress(int(curated.size()) + i + 1, total, "random");
      continue;
    }
    // Shrink: take the first shrink that still fails, until none does. The
    // search is RapidCheck's (rc::shrinkable::findLocalMin walks the same
    // tree the same way), written out here because the token must record
    // the path taken (the index of each shrink accepted, so that reproduce
    // re-creates the shrunk case without searching again), the search has
    // an evaluation budget, and the last failing candidate's judgement is
    // kept for the certificate; findLocalMin returns only the value and a
    // count. A hang is not shrunk: each candidate would cost a whole timeout.
    int budget = j.hang ? 0 : o.max_shrinks;
    bool shrunk = true;
    while (shrunk && budget > 0) {
      shrunk = false;
      auto shrinks = s.shrinks();
      for (std::uint32_t k = 0; budget > 0; ++k) {
        auto next = shrinks.next();
        if (!next) break;
        --budget;
        Judged candidate =
            judge_spec(next->value(), v, o.rule, o.threads, false, o.whole_oracle_work);
        if (candidate.verdict.holds) continue;
        t.path.push_back(k);
        s = *next;
        j = std::move(candidate);
        shrunk = true;
        if (o.progress) o.progress(int(curated.size()) + i + 1, total, "shrinking");
        break;
      }
    }
    accept(j);
    fail(j, t, s.value());
  }
  // 3. The schedule spread of the worst case (a seedable schedule, no
  // determinism claim): every run judged under the rule.
  if (cert.holds && worst) {
    const auto names = info(v.op).outputs;
    std::vector<std::vector<AnyTensor>> runs;
    for (int r = 1; r <= kSpreadRuns && cert.holds; ++r) {
      v.set_schedule_seed(std::uint64_t(r));
      runs.push_back(run_variant(v, worst->c, o.threads));
      const Verdict verdict = judge(worst->c, worst->exact, runs.back(), o.rule,
                                    worst->allowed.empty() ? nullptr : &worst->allowed,
                                    worst->torch_errors.empty() ? nullptr : &worst->torch_errors);
      if (!verdict.holds) {
        cert.holds = false;
        cert.failure = "schedule " + std::to_string(r) + " of the worst case: " + verdict.why;
        cert.failure_case = "moacert reproduce " + cert.worst_token;
        cert.worst_ratio = INFINITY;
      }
    }
    v.set_schedule_seed(0);
    if (v.take_counts) v.take_counts();
    cert.spread_runs = int(runs.size());
    for (std::size_t t = 0; cert.holds && t < runs[0].size(); ++t) {
      double spread = 0;
      std::size_t n = 0;
      for (const moa::Index& i : moa::iota(runs[0][t].shape())) {
        if (!worst->exact.outputs[t].evaluated[n]) {  // not in the sample
          ++n;
          continue;
        }
        double lo = INFINITY, hi = -INFINITY;
        for (const auto& run : runs) {
          lo = std::min(lo, run[t].get(i));
          hi = std::max(hi, run[t].get(i));
        }
        if (hi > lo)
          spread =
              std::max(spread, (hi - lo) / oracle::ulp(o.format, worst->exact.outputs[t].exact[n]));
        ++n;
      }
      cert.spread_ulps.push_back({std::string(names[t]), spread});
    }
  }
  acc.finish();
  cert.tensors = acc.tensors;
  cert.plots = plots.finish();
  cert.seconds = seconds_since(start);
  return cert;
}

Replay replay(const Token& token, const kernels::Variant& variant, int threads,
              std::size_t worst_count) {
  const std::optional<CaseSpec> spec = spec_of(token);
  if (!spec) throw std::invalid_argument("token names a case this version cannot re-create");
  Judged j = judge_spec(*spec, variant, token.rule, threads);
  Replay r{*spec, j.c, j.verdict, {}};
  if (j.error.empty()) r.worst = worst_elements(j, token.rule, worst_count);
  return r;
}

}  // namespace moacert::properties
