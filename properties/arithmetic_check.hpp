// The verdicts beside a kernel's declared arithmetic (docs/design.md#arithmetic):
// declaring more freedom raises the bounds, so a declaration alone could
// hide a worse kernel. Each case is therefore also judged under the
// standard model, and, where that fails, under candidate arithmetics of
// the op's vocabulary, from the case's own errors (no further kernel
// call): the certificate states the standard verdict and the tightest
// candidate every case is consistent with (`needs`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oracle/oracle.hpp"
#include "properties/check.hpp"
#include "reference/arithmetic.hpp"
#include "reference/case.hpp"

namespace moacert::properties {

// The arithmetics `needs` chooses from (ties go to the earlier): each single
// freedom of `op`'s vocabulary on its ladder (an intermediate rounded to
// f32, f16, bf16; tensor-core accumulation, then each contraction in TF32,
// f16, bf16; each function at 4, 16, 64, 256, 1024, 4096 ulps; subnormals
// flushed), then `declared` less one of its items, then `declared`.
std::vector<Arithmetic> candidate_arithmetics(Op op, Format format, const Arithmetic& declared);

// Where an arithmetic's bound is infinite and the standard model's is not,
// the standard model's bound stands in (a freedom whose bound is vacuous
// explains nothing).
void stand_in_for_vacuous(std::vector<std::vector<double>>& bounds,
                          const std::vector<std::vector<double>>& standard);

// A declaration bounds nothing once its unit u, compounded k times, reaches
// k u >= 1/2 (γ_k >= 1: an error as large as the value itself, as an f16
// sum of 4096 ones stops at 2048; docs/bounds.md#declared-arithmetic): a
// contraction in f16 or bf16 over its axis's n terms and the three
// operations the bounds add (k = n + 3), and, along an online softmax's
// keys (ArithmeticVocabulary::softmax_axis), the running sum rounded
// (round.l: k = n + 1, u of its format) or an exp of K ulps (k = n + 1,
// u = 2 K u_a). The first declared so that `p` takes past its reach, in
// words ("sum.PV=f16 over M = 4096 terms, past its reach of 1020"), or
// empty: every declaration reaches the case, which is then judged under
// it; a case past the reach is judged under the standard model.
std::string past_declared_reach(const Problem& p, const Arithmetic& a);

// One case's findings: its largest error / allowed under the standard
// model, and per candidate whether its errors are within that candidate's
// bounds, a vacuous one replaced by the standard model's (stand_in_for_vacuous)
// but for the kernel's own `declared` arithmetic's inside its reach,
// judged as the verdict judges it (every candidate
// is, where the standard model holds: each only adds freedom), and how
// much looser its bounds are than the standard
// model's (the sum of its bounds over the case's elements against the
// standard's; 1 where it was not evaluated).
struct ArithmeticFindings {
  double standard_ratio = 0;
  std::vector<std::uint8_t> consistent;
  std::vector<double> looseness;
};

// `standard_bounds` are the case's bounds under the standard model (the
// rule's own when the kernel declares nothing); `standard`, the case's
// verdict under them where the rule already judged it so (a kernel that
// declares nothing), else null: judged here.
ArithmeticFindings arithmetic_findings(const Case& c, const oracle::Answer& exact,
                                       const std::vector<AnyTensor>& outputs, const Rule& rule,
                                       const std::vector<std::vector<double>>& standard_bounds,
                                       const std::vector<Arithmetic>& candidates,
                                       const Arithmetic& declared, const oracle::Selection* rows,
                                       const Verdict* standard = nullptr);

// Of the candidates every case is consistent with (`per_case`: each judged
// case's findings), the one whose bounds are the tightest (the least
// looseness at its loosest case; the earlier on a tie), or nullopt when
// none is.
std::optional<Arithmetic> tightest_consistent(
    const std::vector<Arithmetic>& candidates,
    const std::vector<const ArithmeticFindings*>& per_case);

}  // namespace moacert::properties
