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
#include "properties/results.hpp"
#include "properties/sample.hpp"
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
  // Case files to judge instead of the curated and random cases (certify
  // --case): each is judged as a random case would be, but has no token;
  // the certificate names the file instead.
  std::vector<std::pair<std::string, Case>> case_files;
  // Past this much oracle work a case is judged on a sample of rows
  // (properties/sample.hpp); below it, whole.
  double whole_oracle_work = kWholeOracleWork;
  // certify --shape: every generated case lies in these ranges (curated
  // ones are clamped into them); the tokens carry them.
  ShapeConstraints shape;
  // Called after each case: (cases done, cases in all, phase).
  std::function<void(int, int, const char*)> progress;
};

// The token every case of `options` extends (its index, size and shrink
// path aside): its generator settings are those certify draws from.
Token base_token(const CertifyOptions& options);

// The constraints cases are drawn within: `shape` (--shape) cut to the
// variant's largest extents (Variant::max_extents). Throws
// std::invalid_argument, in words, when they leave nothing.
ShapeConstraints within_variant(ShapeConstraints shape, const kernels::Variant& v);

// The certificate (properties/results.hpp) of one variant.
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
