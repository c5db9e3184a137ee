#include "cli/certify_budget.hpp"

#include <optional>

#include <rapidcheck.h>

#include "cli/commands.hpp"
#include "properties/case_gen.hpp"
#include "properties/properties.hpp"

namespace moacert::cli {

void check_case_budget(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                       const kernels::Variant& v, const std::vector<moa::Layout>& layouts,
                       const kernels::Variant* beside, double whole_work) {
  BudgetParts parts{.variant = &v, .beside = beside, .layouts = &layouts};
  check_budget_before_oracle(p, max_bytes, what, parts);
  const auto sample = properties::sample_bound(p, v.tiles, whole_work);
  parts.sample = sample ? &*sample : nullptr;
  check_budget(p, max_bytes, what, parts);
}

const kernels::Variant* torch_beside(const properties::CertifyOptions& o, const Problem& p,
                                     const std::vector<moa::Layout>& layouts,
                                     std::uint64_t max_bytes) {
  if (o.rule.kind == properties::Rule::vs_torch) return properties::torch_for(p.op, p.format);
  if (!o.equivalence || o.variant->role == kernels::Role::torch) return nullptr;
  const kernels::Variant* torch = properties::torch_for(p.op, p.format);
  if (!torch) return nullptr;
  // The refusal's own checks, in its order: the one definition of a fit.
  try {
    check_case_budget(p, max_bytes, "", *o.variant, layouts, torch, o.whole_oracle_work);
  } catch (const UsageError&) {
    return nullptr;
  }
  return torch;
}

std::vector<moa::Layout> layouts_of(const Case& c) {
  std::vector<moa::Layout> out;
  for (const AnyTensor& t : c.inputs) out.push_back(t.layout());
  return out;
}

namespace {

// check_case_budget for a generated case of `o`, with the runs certify
// makes of it.
void check_spec_budget(const properties::CertifyOptions& o, const properties::CaseSpec& spec,
                       std::uint64_t max_bytes, const std::string& what) {
  check_case_budget(spec.problem, max_bytes, what, *o.variant, spec.layouts,
                    torch_beside(o, spec.problem, spec.layouts, max_bytes), o.whole_oracle_work);
}

}  // namespace

void check_certify_budget(const properties::CertifyOptions& o, std::uint64_t max_bytes) {
  const kernels::Variant& v = *o.variant;
  const std::string shape = o.shape.empty() ? "" : " (--shape " + o.shape.str(v.op) + ")";
  const properties::GenSettings settings = properties::base_token(o).settings();
  const auto check = [&](const properties::CaseSpec& spec, const std::string& what) {
    check_spec_budget(o, spec, max_bytes, what + shape);
  };
  const auto curated = properties::curated_specs(v.op, o.format, settings);
  for (std::size_t k = 0; k < curated.size(); ++k)
    check(curated[k], "curated case " + std::to_string(k));
  // A random case past the budget is discarded (case_fits); only when none
  // is left is the request itself too large.
  const rc::Gen<properties::CaseSpec> gen = properties::gen_case_spec(v.op, o.format, settings);
  std::optional<UsageError> first_refusal;
  for (int i = 0; i < o.cases; ++i) {
    const auto s =
        gen(rc::Random({o.seed, std::uint64_t(i), 0, 0}), properties::size_for(i, o.cases));
    try {
      check(s.value(), "random case " + std::to_string(i));
      return;
    } catch (const UsageError& e) {
      if (!first_refusal) first_refusal = e;
    }
  }
  if (first_refusal) throw *first_refusal;
}

bool case_fits(const properties::CertifyOptions& o, const properties::CaseSpec& spec,
               std::uint64_t max_bytes) {
  try {
    check_spec_budget(o, spec, max_bytes, "");
    return true;
  } catch (const UsageError&) {
    return false;
  }
}

}  // namespace moacert::cli
