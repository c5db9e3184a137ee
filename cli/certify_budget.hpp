// Which cases `certify` and `reproduce` check against --max-memory before
// any work, and with which runs beside the variant's: the budget's
// figures are cli/budget.hpp's, the cases certify's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/budget.hpp"
#include "properties/certify.hpp"
#include "properties/sample.hpp"
#include "reference/case.hpp"

namespace moacert::cli {

// check_budget for a case certify or reproduce judges with `v` (and
// `beside`, PyTorch where it runs too), its inputs laid out as `layouts`:
// the tensors first, arithmetic on the shape; then the kernels' scratch,
// whose cost functions may walk an axis; then the oracle's part for the
// sample the shape decides (properties::sample_bound, whose row spaces hold
// a count per query and key position). So a shape far past the budget (N =
// 99999999999) is refused before either grows with it. Throws UsageError.
void check_case_budget(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                       const kernels::Variant& v, const std::vector<moa::Layout>& layouts,
                       const kernels::Variant* beside,
                       double whole_work = properties::kWholeOracleWork);

// PyTorch's variant where certify runs it beside `o`'s variant on a case:
// always under the rule vs-torch, which needs it (its memory then counts
// and may refuse the case); for the equivalence report (any variant but
// PyTorch's own) where the case fits the budget with it, the report being
// skipped for a case it does not fit (CertifyOptions::equivalence_fits).
const kernels::Variant* torch_beside(const properties::CertifyOptions& o, const Problem& p,
                                     const std::vector<moa::Layout>& layouts,
                                     std::uint64_t max_bytes);

// The layouts of a case's inputs.
std::vector<moa::Layout> layouts_of(const Case& c);

// The cases certify will run fit the memory budget: every curated spec,
// and at least one random case's (those past it are discarded, case_fits;
// shrinks only get smaller), generated without their data. A refusal
// names the axes --shape fixed or bounded ("curated case 0 (--shape
// N=99999999999) needs ..."), the ones that made the case too big.
void check_certify_budget(const properties::CertifyOptions& o, std::uint64_t max_bytes);

// Whether a case of `spec` fits the budget with the runs certify makes of
// it (check_case_budget): CertifyOptions::fits.
bool case_fits(const properties::CertifyOptions& o, const properties::CaseSpec& spec,
               std::uint64_t max_bytes);

}  // namespace moacert::cli
