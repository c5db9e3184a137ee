// What one case of a certification yields, self-contained: its verdict, its
// per-tensor statistics and histograms, its equivalence figures, a counting
// backend's counts, its time and, when it fails, the counterexample (shrunk,
// with its token). The certificate is a reduction of the records in case
// order (CaseRunner::certificate, properties/certify.hpp), so the cases may
// be judged anywhere — in one process, or shared among the ranks of an
// mpirun (cli/shared_certify.cpp) — and the certificate is the same.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "properties/arithmetic_check.hpp"
#include "properties/check.hpp"
#include "properties/plot_samples.hpp"
#include "properties/sample.hpp"
#include "results/results.hpp"

namespace moacert::properties {

struct CaseRecord {
  // Where the case lies in the certification's order: the curated cases,
  // then the case files (certify --case) or the random cases.
  int position = 0;
  enum Kind : std::uint8_t { curated, case_file, random } kind = curated;

  bool holds = true;
  // The variant claims determinism and its outputs differed between runs
  // or thread counts (holds is false).
  bool determinism_failed = false;
  // The kernel refused it outside its envelope (holds is true; nothing
  // else judged): counted in the certificate, never a counterexample.
  bool refused = false;
  // A random case drawn but not run: it would need more memory than the
  // budget allows (CertifyOptions::fits). Nothing else is set.
  bool over_budget = false;
  // Whether `tensors` joins the run's statistics: not when the kernel threw
  // (it has none), nor for a random case whose determinism check failed.
  // A failing random case's statistics are those of its shrunk case.
  bool accumulated = false;
  std::vector<TensorStats> tensors;
  bool sampled = false;  // judged on a sample of rows (properties/sample.hpp)
  std::vector<Sample::Stratum> strata;
  // Against PyTorch, when it ran and the kernel did not throw.
  bool has_equivalence = false;
  std::vector<Equivalence> equivalence;

  double ratio = 0;   // the largest error / allowed over its tensors
  std::string token;  // its token (shrunk, when it fails); "" for a case file
  // When it fails: why, the case described (shrunk), its worst elements.
  std::string why, failure_case;
  std::vector<ElementReport> failure_elements;
  // When it fails: the case as drawn, before shrinking, described, and its
  // error / allowed (Certificate::worst_found), which shrinking, taking any
  // smaller case that still fails, can bring down to just over 1.
  std::string drawn_case;
  double drawn_ratio = 0;

  // A counting backend's counts of the case's own run (Variant::take_counts),
  // the cost function's float atomics on it, and the two checks' findings,
  // each prefixed with the case described ("" when they agree).
  bool counted = false, traffic_checked = false;
  std::vector<std::pair<std::string, double>> counts;
  double cost_atomics = 0;
  std::string atomics_mismatch, traffic_mismatch;

  // Its share of the plots' samples (when `accumulated`).
  CasePlot plot;

  // The numerical regimes the case as drawn reached (a Regimes bitset,
  // properties/regimes.hpp).
  std::uint64_t regimes = 0;
  // Its extents as drawn, by kDimFields (the envelope coverage).
  std::vector<std::int64_t> extents;

  double generation_seconds = 0, bounds_seconds = 0, oracle_seconds = 0, kernel_seconds = 0,
         judge_seconds = 0;
  // PyTorch's runs beside the kernel, the determinism rerun, the shrinking
  // of a failing case (Certificate's phases of the same names).
  double torch_seconds = 0, determinism_seconds = 0, shrinking_seconds = 0;
  // Rule apriori, the case as drawn judged: its verdict under the standard
  // model and the candidate arithmetics its errors are consistent with
  // (properties/arithmetic_check.hpp).
  bool has_arithmetic = false;
  ArithmeticFindings arithmetic;
};

// The bytes of records, for another process of the same build, and back
// (properties/wire.hpp); decode throws std::runtime_error on bytes that are
// not such a message.
std::string encode_records(const std::vector<CaseRecord>& records);
std::vector<CaseRecord> decode_records(std::string_view bytes);

}  // namespace moacert::properties
