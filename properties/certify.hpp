// Certification of one variant of one op in one format: the curated edge
// cases, then N random cases from the property suite's generators, each
// judged against the oracle under a rule; the first failure is shrunk
// (RapidCheck's shrink tree) and named by a token that replays it anywhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.hpp"
#include "properties/case_record.hpp"
#include "properties/check.hpp"
#include "properties/sample.hpp"
#include "properties/token.hpp"
#include "results/results.hpp"

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
  // Whether PyTorch's run for the equivalence report fits a case (certify
  // --max-memory: cli/budget.cpp); null: every case. A case it does not fit
  // is judged without the report (PyTorch's attention holds the N×M
  // scores: 32 GiB for the backward at N = M = 16384 with 8 heads), and
  // the certificate's vs_torch.cases counts the cases that had it.
  std::function<bool(const Case&)> equivalence_fits;
  // Whether a random case fits the memory budget (certify --max-memory:
  // cli/certify_budget.cpp); null: every case. One that does not is drawn
  // but never started, and counted as discarded: the deployment-scale
  // draws of the backward ops need some 12 GiB at their largest, over
  // half of a 24 GiB machine.
  std::function<bool(const CaseSpec&)> fits;
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
  // certify --arithmetic-at-most: a kernel that declares or needs more
  // freedom than this fails, the freedom named (docs/design.md#arithmetic).
  std::optional<Arithmetic> arithmetic_at_most;
  std::string arithmetic_at_most_text;  // as given, for the certificate
  // Called after each case: (cases done, cases in all, phase).
  std::function<void(int, int, const char*)> progress;
  // Cases judged at once (certify --jobs; properties/parallel_cases.hpp),
  // where the variant allows it (jobs_for), each in a thread of this
  // process; the certificate is the same, field for field, times aside.
  int jobs = 1;
  // Whether a case fits the memory budget beside the other jobs' (certify
  // --jobs J: a J-th of --max-memory); null: every case. One that does not
  // is judged alone, the others waiting.
  std::function<bool(const CaseSpec&)> fits_beside;
};

// The token every case of `options` extends (its index, size and shrink
// path aside): its generator settings are those certify draws from.
Token base_token(const CertifyOptions& options);

// The constraints cases are drawn within: `shape` (--shape) cut to the
// variant's envelope (Variant::envelope: its axes and options). Throws
// std::invalid_argument, in words, when they leave nothing.
ShapeConstraints within_variant(ShapeConstraints shape, const kernels::Variant& v);

// What a kernel's envelope keeps certify from reaching, each with why in
// one phrase: the op's declared regimes that no problem inside it reaches
// (by the extents and options each needs), and its axes along which it
// admits no deployment-scale extent (is_large: past kLargeExtent; decode's
// L past kLargeDecodeLength). A certificate records them beside the
// envelope.
struct EnvelopeExclusion {
  std::string what;  // a regime's name, or an axis
  std::string why;
};
struct EnvelopeExclusions {
  std::vector<EnvelopeExclusion> regimes, deployment_scale;
};
EnvelopeExclusions excluded_by(Op op, const kernels::Envelope& e);
// What a variant's reach (Variant::reach: how far certify draws the axes
// --shape leaves free) excludes of the op's deployment envelope, each why
// ending in the reach's reason (Variant::reach_why); none where it has no
// reach.
std::vector<EnvelopeExclusion> excluded_by_reach(const kernels::Variant& v);

// The cases of one certification, each judged on its own into a
// CaseRecord (properties/case_record.hpp), and the certificate as their
// reduction in case order. certify() runs the cases one after the other in
// one process; the ranks of an mpirun share them (cli/shared_certify.cpp).
class CaseRunner {
 public:
  explicit CaseRunner(CertifyOptions options);
  // The positions 0 .. size()-1: the curated cases, then the case files or
  // the random cases.
  int size() const;
  // The case at `position`, judged under the rule: a failing random case
  // shrunk (its token records the path), the determinism check where the
  // variant claims it (every curated case and every tenth random one), a
  // counting backend's counts. Random case i is drawn from
  // rc::Random({seed, i, 0, 0}) alone, so any process can judge any case.
  // `failing`, when given, is called as soon as the case is found to fail,
  // before it is shrunk (the ranks of an mpirun announce it then).
  // A case file's case is handed to its judge, not copied (a long decode's
  // is gigabytes): each position is run once (std::logic_error on a case
  // file run again).
  CaseRecord run(int position, const std::function<void()>& failing = {}) const;
  // Whether the case at `position` must be judged with no other beside it
  // (CertifyOptions::fits_beside says it does not fit; a case file).
  bool alone(int position) const;
  // The certificate of the records, reduced in position order up to and
  // including the first that fails (those after it are ignored), then the
  // schedule spread of the worst case (a seedable variant without a
  // determinism claim), which runs the variant again, in this process.
  // @pre the records hold every position below the first failure, or
  //      every position; throws std::logic_error otherwise.
  Certificate certificate(std::vector<CaseRecord> records) const;
  // The verdict under the standard model beside the declared one, what the
  // cases' errors need, and --arithmetic-at-most (defined in
  // properties/arithmetic_check.cpp).
  void check_arithmetic(Certificate& cert, const std::vector<CaseRecord>& records) const;

 private:
  CertifyOptions o_;
  // o_.case_files' cases, moved here to be handed out by run() (their paths
  // stay in o_.case_files).
  mutable std::vector<std::optional<Case>> case_files_;
  Token base_;
  std::vector<CaseSpec> curated_;
  bool equivalence_;
  // The calls run so far in this process (Token::Call), where the
  // variant's process may keep state from one to the next.
  mutable std::vector<Token::Call> earlier_;
  std::chrono::steady_clock::time_point start_;
};

// The name of a case's phase in progress reports: "curated", "case files",
// "random".
const char* phase_of(CaseRecord::Kind kind);

// The certificate (results/results.hpp) of one variant: every case in
// turn, stopping at the first failure. Taken by value: a caller done with
// its options moves them, case files and all, rather than copy them.
Certificate certify(CertifyOptions options);

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
