#include "reports/certificate.hpp"

#include <cmath>
#include <sstream>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "reference/arithmetic_spec.hpp"
#include "reports/json_figure.hpp"
#include "reports/plot_data.hpp"

namespace moacert::reports {

namespace {

std::string hexfloat(double x) {
  return fmt::format("{:a}", x);
}

// The bins that hold something, as [lower edge, upper edge, count], and
// the counts below and above the axis (docs/certificate.md#statistics).
nlohmann::json histogram_json(const properties::ErrorHistogram& h) {
  nlohmann::json bins = nlohmann::json::array();
  const auto& axis = h.axis();
  for (int i = 0; i < axis.size(); ++i) {
    if (h.at(i) != 0) bins.push_back({axis.bin(i).lower(), axis.bin(i).upper(), h.at(i)});
  }
  return {{"bins_per_decade", properties::kBinsPerDecade},
          {"lowest", properties::kLowest},
          {"highest", properties::kHighest},
          {"below_lowest", h.at(-1)},
          {"above_highest", h.at(axis.size())},
          {"bins", bins}};
}

// What a variant's arithmetic rounds to the storage format before its next
// use, by the intermediates' names in docs/bounds.md.
std::vector<std::string> rounded_to_storage(const Arithmetic& a) {
  std::vector<std::string> out;
  for (const auto& [intermediate, to] : a.rounded)
    if (to == Rounding::storage) out.push_back(intermediate);
  return out;
}

// The declared arithmetic (docs/certificate.md, `arithmetic`): the fields a
// tensor-core variant's certificate always had (accumulation, what is
// rounded to storage), and each further freedom where declared; its text
// is arithmetic_check's `declared`.
nlohmann::json arithmetic_json(const Arithmetic& a) {
  nlohmann::json j = {{"accumulation", std::string(name(a.accumulation))},
                      {"rounded_to_storage", rounded_to_storage(a)}};
  if (!a.contractions.empty()) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& [contraction, mode] : a.contractions) c[contraction] = std::string(name(mode));
    j["contractions"] = c;
  }
  nlohmann::json rounded = nlohmann::json::object();
  for (const auto& [intermediate, to] : a.rounded)
    if (to != Rounding::storage) rounded[intermediate] = std::string(name(to));
  if (!rounded.empty()) j["rounded"] = rounded;
  if (!a.function_ulps.empty()) j["function_ulps"] = a.function_ulps;
  if (a.flush != Flush::none) j["flush_subnormals"] = std::string(name(a.flush));
  return j;
}

// How many schedules the spread ran and why (docs/design.md, "Schedule
// spread"): the budget its judged cases' emulated accesses set.
std::string spread_why(const properties::Certificate& c) {
  if (c.spread_schedules == 0) return "";
  if (c.spread_worst_accesses <= 0)
    return fmt::format("all {}: the worst case counted no global accesses to bound them by",
                       properties::kSpreadRuns);
  const std::string held = fmt::format(
      "the judged cases' {:.0f} emulated global accesses hold {:.0f} runs of the worst case's "
      "{:.0f}",
      c.spread_cases_accesses, std::floor(c.spread_cases_accesses / c.spread_worst_accesses),
      c.spread_worst_accesses);
  if (c.spread_schedules == properties::kSpreadRuns)
    return fmt::format("all {}: {}", properties::kSpreadRuns, held);
  return fmt::format("{} of {}: {}{}", c.spread_schedules, properties::kSpreadRuns, held,
                     c.spread_schedules == properties::kMinSpreadRuns
                         ? fmt::format(" (at least {})", properties::kMinSpreadRuns)
                         : "");
}

}  // namespace

nlohmann::json to_json(const properties::Certificate& c, const BuildInfo& build,
                       const Provenance& provenance) {
  nlohmann::json j;
  j["schema"] = kSchemaVersion;
  j["op"] = std::string(info(c.op).name);
  j["variant"] = c.variant;
  j["role"] = c.role;
  j["format"] = std::string(name(c.format));
  j["rule"] = c.rule.str();
  j["verdict"] = c.holds ? "holds" : "fails";
  j["seed"] = c.seed;
  j["shape"] = c.shape;  // certify --shape; "" when every extent was drawn freely
  j["cases"] = {{"curated", c.curated_run},
                {"random", c.random_run},
                {"discarded", c.discarded},
                {"case_files", c.case_files_run}};
  // Only where a kernel refused a case outside its envelope, so that other
  // certificates stay as they were.
  if (c.refused > 0) j["cases"]["refused_outside_envelope"] = c.refused;
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& t : c.tensors) {
    tensors[t.name] = {{"elements", t.elements},
                       {"max_ulp", number(t.max_ulp)},
                       {"mean_ulp", number(t.mean_ulp)},
                       {"p50_ulp", number(t.p50_ulp)},
                       {"p99_ulp", number(t.p99_ulp)},
                       {"p999_ulp", number(t.p999_ulp)},
                       {"ulp_histogram", histogram_json(t.ulp_histogram)},
                       {"error_to_allowed_histogram", histogram_json(t.ratio_histogram)},
                       {"max_error_to_allowed", number(t.max_ratio)},
                       {"max_normwise_error_u", number(t.max_normwise_u)},
                       {"oracle_undetermined", t.undetermined},
                       {"elements_total", t.elements_total}};
    if (t.cases_sampled > 0) {  // the sampled oracle: how the judged rows were chosen
      nlohmann::json strata = nlohmann::json::object();
      for (const auto& [stratum, rows] : t.sampled_rows) strata[stratum] = rows;
      tensors[t.name]["sampled"] = {{"cases", t.cases_sampled}, {"rows_by_stratum", strata}};
    }
    if (t.unbounded > 0) tensors[t.name]["unbounded_elements"] = t.unbounded;  // a vacuous rule
    if (t.declared_vacuous > 0)  // judged under the standard model there
      tensors[t.name]["declared_arithmetic_vacuous_elements"] = t.declared_vacuous;
    if (!t.produced) tensors[t.name]["produced"] = false;  // declared: not judged
  }
  j["tensors"] = tensors;
  j["worst_case"] = {{"token", c.worst_token}, {"error_to_allowed", number(c.worst_ratio)}};
  if (!c.holds) {
    nlohmann::json elems = nlohmann::json::array();
    for (const auto& e : c.failure_elements) {
      elems.push_back({{"tensor", e.tensor},
                       {"index", std::vector<std::int64_t>(e.index.begin(), e.index.end())},
                       {"exact", hexfloat(e.exact)},
                       {"computed", hexfloat(e.computed)},
                       {"ulps", number(e.ulps)},
                       {"allowed", number(e.allowed)}});
    }
    j["counterexample"] = {{"why", c.failure},
                           {"case", c.failure_case},
                           {"token", c.worst_token},
                           {"worst_elements", elems}};
    // The worst case found before shrinking, beside the shrunk one.
    if (!c.worst_found_case.empty())
      j["counterexample"]["worst_found"] = {{"case", c.worst_found_case},
                                            {"error_to_allowed", number(c.worst_found_ratio)}};
  }
  j["determinism"] = {{"checked", c.determinism_checked}, {"holds", c.determinism_holds}};
  if (c.vs_torch_cases > 0) {  // the equivalence report: only when PyTorch ran
    nlohmann::json eq = nlohmann::json::object();
    for (const auto& e : c.vs_torch) {
      eq[e.name] = {{"kernel_max_ulp", number(e.kernel_max_ulp)},
                    {"torch_max_ulp", number(e.torch_max_ulp)},
                    {"max_diff_ulp", number(e.max_diff_ulp)}};
    }
    j["vs_torch"] = {{"cases", c.vs_torch_cases}, {"tensors", eq}};
  }
  j["ran_on"] = c.ran_on;
  // Only where the variant departs from the standard model, so that other
  // certificates stay as they were.
  if (!c.arithmetic.standard()) j["arithmetic"] = arithmetic_json(c.arithmetic);
  // Likewise only where the variant declares conventions of its own
  // (docs/design.md#conventions).
  if (!c.conventions.standard()) {
    j["conventions"] = {{"not_produced", c.conventions.not_produced},
                        {"causal_alignment", name(c.conventions.causal_alignment)},
                        {"params", name(c.conventions.params)}};
    // Each tensor's format as declared, where mixed
    // (docs/design.md#per-tensor-formats); `format` stays the dtype.
    if (!c.conventions.tensor_formats.empty()) {
      nlohmann::json formats = nlohmann::json::object();
      for (const auto& [tensor, f] : c.conventions.tensor_formats)
        formats[tensor] = std::string(name(f));
      j["conventions"]["tensor_formats"] = std::move(formats);
    }
  }
  // Beside the verdict under the declared arithmetic: the standard model's,
  // what the cases need, and --arithmetic-at-most's limit.
  if (c.arithmetic_checked) {
    j["arithmetic_check"] = {
        {"declared", to_string(c.arithmetic)},
        {"standard_model",
         {{"holds", c.standard_holds}, {"worst_ratio", number(c.standard_worst_ratio)}}},
        {"needs", c.needs.empty() ? nlohmann::json() : nlohmann::json(c.needs)}};
    if (!c.arithmetic_at_most.empty()) j["arithmetic_check"]["at_most"] = c.arithmetic_at_most;
  }
  if (c.counted_cases > 0) {  // a counting backend (the host emulator)
    nlohmann::json totals = nlohmann::json::object();
    for (const auto& [what, n] : c.counts) totals[what] = n;
    j["counts"] = {{"cases", c.counted_cases},
                   {"totals", totals},
                   {"cost_function_float_atomics", c.cost_atomics},
                   {"float_atomics_match_cost_function", c.atomics_mismatches == 0}};
    if (c.atomics_mismatches > 0) j["counts"]["first_mismatch"] = c.atomics_mismatch;
    if (c.traffic_checked) {
      j["counts"]["traffic_mismatches"] = c.traffic_mismatches;
      j["counts"]["traffic_matches_cost_function"] = c.traffic_mismatches == 0;
      if (c.traffic_mismatches > 0) j["counts"]["first_traffic_mismatch"] = c.traffic_mismatch;
    }
  }
  if (c.spread_runs > 0) {
    nlohmann::json spread = nlohmann::json::object();
    for (const auto& [tensor, ulps] : c.spread_ulps) spread[tensor] = number(ulps);
    j["schedule_spread"] = {{"runs", c.spread_runs}, {"case", c.worst_token}, {"max_ulp", spread}};
    if (c.spread_schedules > 0)  // its budget, in runs of the worst case
      j["schedule_spread"]["budget"] = {{"schedules", c.spread_schedules},
                                        {"promised", properties::kSpreadRuns},
                                        {"cases_global_accesses", c.spread_cases_accesses},
                                        {"worst_case_global_accesses", c.spread_worst_accesses},
                                        {"why", spread_why(c)}};
  }
  if (!c.thread_counts.empty()) {  // a user's kernel claiming no determinism
    nlohmann::json spread = nlohmann::json::object();
    for (const auto& [tensor, ulps] : c.thread_spread_ulps) spread[tensor] = number(ulps);
    j["thread_spread"] = {
        {"threads", c.thread_counts}, {"case", c.worst_token}, {"max_ulp", spread}};
  }
  j["seconds"] = c.seconds;
  j["seconds_by_phase"] = {{"generation", c.generation_seconds},
                           {"bounds", c.bounds_seconds},
                           {"oracle", c.oracle_seconds},
                           {"kernel", c.kernel_seconds},
                           {"judge", c.judge_seconds},
                           {"torch", c.torch_seconds},
                           {"determinism", c.determinism_seconds},
                           {"shrinking", c.shrinking_seconds},
                           {"schedule_spread", c.spread_seconds}};
  nlohmann::json regimes = nlohmann::json::array();  // the op's declared regimes, in order
  for (const auto& [regime, cases] : c.regime_cases)
    regimes.push_back({{"regime", regime}, {"cases", cases}});
  j["regimes"] = regimes;
  nlohmann::json reach = nlohmann::json::array();  // the envelope's axes, in the op's order
  for (const auto& r : c.envelope_reach)
    reach.push_back({{"axis", r.axis},
                     {"largest", r.largest},
                     {"thresholds_crossed", r.crossed},
                     {"thresholds_not_crossed", r.not_crossed}});
  j["envelope_reach"] = reach;
  j["plot_data"] = plot_data_json(c.plots);
  j["moacert"] = {{"version", build.version}, {"build", build.flags}};
  j["provenance"] = to_json(provenance);
  return j;
}

std::string to_markdown(const properties::Certificate& c, const BuildInfo& build,
                        const Provenance& provenance) {
  std::ostringstream md;
  md << "# Certificate: " << info(c.op).name << " / " << c.variant << " / " << name(c.format)
     << "\n\n";
  md << "**Verdict: " << (c.holds ? "holds" : "FAILS") << "** under rule `" << c.rule.str() << "`, "
     << c.curated_run << " curated and " << c.random_run << " random cases"
     << (c.case_files_run > 0 ? fmt::format(" and {} case files", c.case_files_run) : "")
     << " (seed " << c.seed << ", " << c.discarded << " discarded), "
     << fmt::format("{:.1f}", c.seconds) << " s.\n\n";
  md << "Shape constraints (`--shape`): "
     << (c.shape.empty() ? "none, every extent drawn" : "`" + c.shape + "`") << ".\n\n";
  md << "| output | elements | max ulp | mean ulp | p50 ulp | p99 ulp | p99.9 ulp | max error / "
        "allowed | max normwise error (u) |\n";
  md << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& t : c.tensors) {
    md << fmt::format(
        "| {} | {} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} | {:.3g} |\n", t.name,
        t.elements, t.max_ulp, t.mean_ulp, t.p50_ulp, t.p99_ulp, t.p999_ulp, t.max_ratio,
        t.max_normwise_u);
  }
  for (const auto& t : c.tensors)
    if (t.unbounded > 0)
      md << fmt::format(
          "\n**The rule is vacuous for {} of {} judged elements of {}**: their bound is infinite "
          "(an upstream stage's bound is), so any finite error passes there.\n",
          t.unbounded, t.elements, t.name);
  for (const auto& t : c.tensors)
    if (t.declared_vacuous > 0)
      md << fmt::format(
          "\n**The declared arithmetic bounds nothing for {} of {} judged elements of {}** (their "
          "cases were past the reach of a sum it declares in f16 or bf16): the standard model's "
          "bound was their allowance.\n",
          t.declared_vacuous, t.elements, t.name);
  md << fmt::format(
      "\nQuantiles over every judged element, read from a histogram of {} bins per decade: each "
      "is at most {:.3g} times the exact quantile, never below it.\n",
      properties::kBinsPerDecade, std::pow(10.0, 1.0 / properties::kBinsPerDecade));
  bool sampled = false;
  for (const auto& t : c.tensors) sampled = sampled || t.cases_sampled > 0;
  if (sampled) {
    md << "\nJudged on a sample of rows where the whole oracle would be slow "
          "(docs/design.md, \"Sampled certification\"):\n\n"
       << "| output | judged | of | cases sampled | rows by stratum |\n"
       << "| --- | ---: | ---: | ---: | --- |\n";
    for (const auto& t : c.tensors) {
      std::string strata;
      for (const auto& [stratum, rows] : t.sampled_rows)
        if (rows > 0) strata += (strata.empty() ? "" : ", ") + fmt::format("{} {}", stratum, rows);
      md << fmt::format("| {} | {} | {} | {} | {} |\n", t.name, t.elements, t.elements_total,
                        t.cases_sampled, strata.empty() ? "-" : strata);
    }
  }
  if (!c.regime_cases.empty()) {
    md << "\nNumerical regimes the judged cases reached (docs/design.md, \"Numerical "
          "regimes\"):\n\n| regime | cases |\n| --- | ---: |\n";
    for (const auto& [regime, cases] : c.regime_cases)
      md << fmt::format("| {} | {}{} |\n", regime, cases, cases == 0 ? " (not reached)" : "");
  }
  if (!c.envelope_reach.empty()) {
    md << "\nDeployment envelope the judged cases reached (docs/design.md, \"Deployment "
          "envelope\"):\n\n| axis | largest | thresholds crossed | not crossed |\n"
          "| --- | ---: | --- | --- |\n";
    auto list = [](const std::vector<std::int64_t>& ts) {
      return ts.empty() ? std::string("-") : fmt::format("{}", fmt::join(ts, ", "));
    };
    for (const auto& r : c.envelope_reach)
      md << fmt::format("| {} | {} | {} | {} |\n", r.axis, r.largest, list(r.crossed),
                        list(r.not_crossed));
  }
  md << fmt::format(
      "\nTime: generation {:.2f} s, bounds {:.2f} s, oracle {:.2f} s, kernel {:.2f} s, judge "
      "{:.2f} s, PyTorch beside {:.2f} s, determinism reruns {:.2f} s, shrinking {:.2f} s, "
      "schedule spread {:.2f} s.\n",
      c.generation_seconds, c.bounds_seconds, c.oracle_seconds, c.kernel_seconds, c.judge_seconds,
      c.torch_seconds, c.determinism_seconds, c.shrinking_seconds, c.spread_seconds);
  if (!c.worst_token.empty()) {  // case files (certify --case) have no token
    md << "\nWorst case: `moacert reproduce " << c.worst_token << "` (error / allowed "
       << fmt::format("{:.3g}", c.worst_ratio) << ").\n";
  }
  if (!c.holds) {
    md << "\n## Counterexample\n\n" << c.failure << "\n\n```\n" << c.failure_case << "\n```\n\n";
    if (!c.worst_found_case.empty())
      md << fmt::format(
          "Worst case found before shrinking (error / allowed {:.3g}):\n\n```\n{}\n```\n\n",
          c.worst_found_ratio, c.worst_found_case);
    md << "| tensor | index | exact | computed | ulps | allowed |\n| --- | --- | ---: | ---: | "
          "---: | ---: |\n";
    for (const auto& e : c.failure_elements) {
      md << fmt::format("| {} | {} | {:.9g} | {:.9g} | {:.3g} | {:.3g} |\n", e.tensor,
                        e.index.str(), e.exact, e.computed, e.ulps, e.allowed);
    }
  }
  if (c.vs_torch_cases > 0) {
    md << "\n## Equivalence with PyTorch\n\nOver the " << c.vs_torch_cases
       << " cases PyTorch (variant `torch`) ran on, the largest errors against the oracle and the "
          "largest direct difference, in ulps of the format:\n\n"
       << "| output | kernel max ulp | PyTorch max ulp | max \\|kernel - PyTorch\\| ulp |\n"
       << "| --- | ---: | ---: | ---: |\n";
    for (const auto& e : c.vs_torch) {
      md << fmt::format("| {} | {:.3g} | {:.3g} | {:.3g} |\n", e.name, e.kernel_max_ulp,
                        e.torch_max_ulp, e.max_diff_ulp);
    }
  }
  md << "\nRan on: " << c.ran_on << ".\n";
  if (!c.conventions.standard())
    md << "\nConventions declared, which the DNF follows (docs/design.md#conventions): `"
       << to_string(c.conventions) << "`.\n";
  if (!c.arithmetic.standard())
    md << "\nArithmetic declared, which the bounds assume (docs/design.md#arithmetic): `"
       << to_string(c.arithmetic) << "`.\n";
  if (c.arithmetic_checked && (!c.arithmetic.standard() || !c.standard_holds))
    md << "\nUnder the standard model: " << (c.standard_holds ? "holds" : "fails")
       << fmt::format(", worst error/allowed {:.3g}", c.standard_worst_ratio) << ". Needs: "
       << (c.needs.empty() ? "no arithmetic of the vocabulary explains its errors"
                           : "`" + c.needs + "`")
       << ".\n";
  if (c.counted_cases > 0) {
    md << "\n## Counts\n\nOver the " << c.counted_cases
       << " judged cases, as the emulator counted them (docs/simt.md#counters):\n\n"
       << "| count | total |\n| --- | ---: |\n";
    for (const auto& [what, n] : c.counts) md << fmt::format("| {} | {:.0f} |\n", what, n);
    md << fmt::format(
        "\nThe cost function's float atomics on the same cases: {:.0f} ({}).\n", c.cost_atomics,
        c.atomics_mismatches == 0
            ? std::string("equal, case by case")
            : std::to_string(c.atomics_mismatches) + " cases differ; first: " + c.atomics_mismatch);
    if (c.traffic_checked)
      md << "The global traffic of every launch and tensor against the cost function's model: "
         << (c.traffic_mismatches == 0 ? std::string("equal, case by case")
                                       : std::to_string(c.traffic_mismatches) +
                                             " cases differ; first: " + c.traffic_mismatch)
         << ".\n";
  }
  if (c.spread_runs > 0) {
    md << "\n## Schedule spread\n\nThe worst case under " << c.spread_runs
       << " block orders, each within the rule";
    if (c.spread_schedules > 0) md << " (schedules run: " << spread_why(c) << ")";
    md << "; per output the largest spread (max - min over the runs) in ulps:\n\n"
          "| output | spread (ulp) |\n| --- | ---: |\n";
    for (const auto& [tensor, ulps] : c.spread_ulps)
      md << fmt::format("| {} | {:.3g} |\n", tensor, ulps);
  }
  if (!c.thread_counts.empty()) {
    md << "\n## Spread across thread counts\n\nThe worst case at "
       << fmt::format("{}", fmt::join(c.thread_counts, ", "))
       << " threads (the kernel claims no determinism; recorded, not judged); per output the "
          "largest spread in ulps:\n\n| output | spread (ulp) |\n| --- | ---: |\n";
    for (const auto& [tensor, ulps] : c.thread_spread_ulps)
      md << fmt::format("| {} | {:.3g} |\n", tensor, ulps);
  }
  md << "\nDeterminism: "
     << (c.determinism_checked ? (c.determinism_holds ? "checked, holds" : "checked, FAILS")
                               : "not claimed by the variant, not checked")
     << ".\n\nmoacert " << build.version << " (" << build.flags << ").\n";
  md << to_markdown(provenance);
  return md.str();
}

nlohmann::json summary_json(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                            const Provenance& provenance) {
  nlohmann::json j;
  j["schema"] = kSchemaVersion;
  bool holds = true;
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& c : cs) {
    holds = holds && c.holds;
    variants.push_back({{"variant", c.variant},
                        {"format", std::string(name(c.format))},
                        {"verdict", c.holds ? "holds" : "fails"},
                        {"cases", c.curated_run + c.random_run + c.case_files_run},
                        {"worst_error_to_allowed", number(c.worst_ratio)},
                        {"worst_token", c.worst_token},
                        {"certificate", c.variant + "/certificate.json"}});
  }
  if (!cs.empty()) {
    j["op"] = std::string(info(cs.front().op).name);
    j["rule"] = cs.front().rule.str();
    j["seed"] = cs.front().seed;
    j["shape"] = cs.front().shape;
  }
  j["verdict"] = holds ? "holds" : "fails";
  j["variants"] = variants;
  j["moacert"] = {{"version", build.version}, {"build", build.flags}};
  j["provenance"] = to_json(provenance);
  return j;
}

std::string summary_markdown(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                             const Provenance& provenance) {
  std::ostringstream md;
  if (cs.empty()) return "# Certificate\n\nNo variant.\n";
  md << "# Certificate: " << info(cs.front().op).name << "\n\n";
  if (!cs.front().shape.empty())
    md << "Shape constraints (`--shape`): `" << cs.front().shape << "`.\n\n";
  md << "| variant | format | verdict | cases | worst error / allowed |\n"
     << "| --- | --- | --- | ---: | ---: |\n";
  for (const auto& c : cs) {
    md << fmt::format("| [{}]({}/certificate.md) | {} | {} | {} | {:.3g} |\n", c.variant, c.variant,
                      name(c.format), c.holds ? "holds" : "FAILS",
                      c.curated_run + c.random_run + c.case_files_run, c.worst_ratio);
  }
  md << "\nmoacert " << build.version << " (" << build.flags << ").\n";
  md << to_markdown(provenance);
  return md.str();
}

}  // namespace moacert::reports
