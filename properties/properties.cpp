#include "properties/properties.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <rapidcheck.h>

#include "oracle/bounds.hpp"
#include "properties/ops/table.hpp"
#include "reference/named.hpp"

namespace moacert::properties {

bool selected(const kernels::Variant& v) {
  const char* env = std::getenv("MOACERT_VARIANTS");
  if (!env || !*env) return true;
  const std::string list(env);
  bool included = false, any_inclusion = false;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    std::string prefix = list.substr(at, comma - at);
    at = comma + 1;
    const bool exclude = !prefix.empty() && prefix[0] == '-';
    if (exclude) prefix.erase(0, 1);
    if (prefix.empty()) continue;
    const bool match = v.name.rfind(prefix, 0) == 0;
    if (exclude && match) return false;
    if (!exclude) {
      any_inclusion = true;
      included = included || match;
    }
  }
  return included || !any_inclusion;
}

// The suite draws small extents from 1 on and bounds every variant of a
// case by one a priori bound, of rounded arithmetic: a variant whose
// envelope narrows an axis to a set or above 1 (simt.flash_tc's D in {64,
// 128}), or that declares other arithmetic (tensor cores), is left to
// certify, which draws inside its envelope and bounds what it declares
// (docs/design.md#envelope, docs/bounds.md#tensor-cores).
bool drawn_by_the_suite(const kernels::Variant& v) {
  for (const auto& [axis, allowed] : v.envelope.axes)
    if (!allowed.values.empty() || allowed.lo > 1) return false;
  return v.arithmetic == Arithmetic{};
}

std::vector<const kernels::Variant*> variants_for(Op op, Format f) {
  std::vector<const kernels::Variant*> out;
  for (const kernels::Variant* v : kernels::Registry::builtin().of(op))
    if (v->supports(f) && selected(*v) && drawn_by_the_suite(*v)) out.push_back(v);
  return out;
}

std::vector<moa::extent_t> tiles_of(const std::vector<const kernels::Variant*>& vs) {
  std::vector<moa::extent_t> tiles;
  for (const kernels::Variant* v : vs) tiles.insert(tiles.end(), v->tiles.begin(), v->tiles.end());
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  return tiles;
}

std::vector<AnyTensor> oracle_outputs(const Case& c, bool keep_forward_rows) {
  // Only the correctly rounded values are kept (attention.bwd's o and lse):
  // no element is narrowed further for its double-double `exact`
  // (exact_ulp_bits 0), on which the rounding does not depend.
  const oracle::Answer a =
      oracle::evaluate(c, {.exact_ulp_bits = 0, .keep_forward_rows = keep_forward_rows});
  std::vector<AnyTensor> out = make_outputs(c.problem);
  for (std::size_t t = 0; t < out.size(); ++t) {
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(out[t].shape())) out[t].set(i, a.outputs[t].rounded[n++]);
  }
  return out;
}

Case make_case(const CaseSpec& spec) {
  return build_case(spec, [](const Case& fwd) { return oracle_outputs(fwd, true); });
}

Case make_case(CaseSpec spec, const Conventions& c) {
  // The formats only: the rest of as_taken (a scale read in f32) follows
  // generation, which draws from the problem as given.
  spec.problem.tensor_formats = as_taken(spec.problem, c).tensor_formats;
  return make_case(spec);
}

namespace {

// Tags the generator families a case reaches, for the RC_CLASSIFY counts.
void classify(const CaseSpec& s) {
  const Problem& p = s.problem;
  const Dims& d = p.dims;
  RC_TAG(name(s.values));
  // The layout families the case reaches (not per input: the combinations
  // would drown the counts).
  for (moa::LayoutKind kind :
       {moa::LayoutKind::row_major, moa::LayoutKind::col_major, moa::LayoutKind::permuted,
        moa::LayoutKind::padded, moa::LayoutKind::tiled, moa::LayoutKind::broadcast}) {
    if (std::find(s.kinds.begin(), s.kinds.end(), kind) != s.kinds.end())
      RC_TAG(std::string("layout:") + name(kind));
  }
  const bool attention = is_attention(p.op);
  if (info(p.op).family != Family::rows) {  // attention's heads, the block's too
    RC_CLASSIFY(d.H == d.Hkv, "MHA");
    RC_CLASSIFY(d.Hkv > 1 && d.H > d.Hkv, "GQA");
    RC_CLASSIFY(d.Hkv == 1 && d.H > 1, "MQA");
  }
  if (attention) {
    RC_CLASSIFY(d.N > d.M, "N>M");
    RC_CLASSIFY(d.N < d.M, "N<M");
    RC_CLASSIFY(d.N == 1, "N=1");
    RC_CLASSIFY(p.causal() && d.N > d.M, "causal rows with no key");
    RC_CLASSIFY(p.params.scale != 0, "scale other than 1/sqrt(D)");
    RC_CLASSIFY(d.D == 1 || d.D == 3 || d.D == 59 || d.D == 111 || d.D == 128, "curated D");
  }
  if (has_index_input(p.op)) {  // decode's lens
    for (std::int64_t len : s.lens) {
      RC_CLASSIFY(len == 1, "lens=1");
      RC_CLASSIFY(len == d.M, "lens=L");
    }
  }
}

rc::Gen<CaseSpec> gen_for(Op op, Format f, bool strided = true) {
  return gen_case_spec(op, f, tiles_of(variants_for(op, f)), strided);
}

std::string label(Op op, Format f, const std::string& what) {
  return what + " " + std::string(info(op).name) + " " + std::string(name(f));
}

}  // namespace

bool prop_agreement(Op op, Format f) {
  const auto variants = variants_for(op, f);
  return rc::check(label(op, f, "agreement with the oracle (apriori rule):"), [=] {
    const CaseSpec spec = *gen_for(op, f);
    classify(spec);
    const Case c = make_case(spec);
    const oracle::Answer exact = oracle::evaluate(c);
    const auto bounds = oracle::apriori_bounds(c);
    for (const kernels::Variant* v : variants) {
      const Verdict verdict = judge(c, exact, run_variant(*v, c), Rule{}, &bounds);
      if (!verdict.holds) RC_FAIL(v->name + ": " + verdict.why);
    }
  });
}

bool prop_layout_invariance(Op op, Format f) {
  std::vector<const kernels::Variant*> strided;
  for (const kernels::Variant* v : variants_for(op, f))
    if (v->accepts_strided) strided.push_back(v);
  return rc::check(label(op, f, "layout invariance:"), [=] {
    const CaseSpec spec = *gen_for(op, f);
    const Case c = make_case(spec);
    const Case other = relayout(c, *gen_layouts(spec));
    const oracle::Answer exact = oracle::evaluate(c);
    const auto bounds = oracle::apriori_bounds(c);
    for (const kernels::Variant* v : strided) {
      const auto a = run_variant(*v, c), b = run_variant(*v, other);
      // Bitwise where the variant's reduction order does not depend on
      // layout; within the rule otherwise.
      if (v->deterministic && v->same_bits_any_layout) {
        if (!bitwise_equal(a, b)) RC_FAIL(v->name + " is not bitwise equal across layouts");
      } else {
        const Verdict verdict = judge(other, exact, b, Rule{}, &bounds);
        if (!verdict.holds) RC_FAIL(v->name + " in the other layouts: " + verdict.why);
      }
    }
  });
}

bool prop_determinism(Op op, Format f) {
  std::vector<const kernels::Variant*> deterministic;
  for (const kernels::Variant* v : variants_for(op, f))
    if (v->deterministic) deterministic.push_back(v);
  return rc::check(label(op, f, "determinism (repeat, 1 vs 2 threads):"), [=] {
    const Case c = make_case(*gen_for(op, f));
    for (const kernels::Variant* v : deterministic) {
      const auto one = run_variant(*v, c, 1);
      RC_ASSERT(bitwise_equal(one, run_variant(*v, c, 1)));
      RC_ASSERT(bitwise_equal(one, run_variant(*v, c, 2)));
    }
  });
}

bool prop_backward_consistency(Format f) {
  const auto fused = variants_for(Op::attention_fwdbwd, f);
  return rc::check(label(Op::attention_fwdbwd, f, "backward consistency:"), [=] {
    const CaseSpec spec = *gen_for(Op::attention_fwdbwd, f);
    const Case c = make_case(spec);
    // The same q, k, v (and dO) as an attention.fwd case and an
    // attention.bwd case, whose o and lse are the oracle's.
    const auto in = inputs_by_name(Op::attention_fwdbwd, c.inputs);
    Case fwd{c.problem, {in["q"], in["k"], in["v"]}};
    fwd.problem.op = Op::attention_fwd;
    const auto fwd_exact = oracle_outputs(fwd);
    const auto exact = outputs_by_name(Op::attention_fwd, fwd_exact);
    Case bwd{c.problem, {in["q"], in["k"], in["v"], exact["o"], exact["lse"], in["do"]}};
    bwd.problem.op = Op::attention_bwd;
    const auto fused_bounds = oracle::apriori_bounds(c);  // o, lse, dq, dk, dv
    const auto bwd_bounds = oracle::apriori_bounds(bwd);  // dq, dk, dv
    for (const kernels::Variant* v : fused) {
      const auto out = run_variant(*v, c);
      const auto fused_out = outputs_by_name(Op::attention_fwdbwd, out);
      // o and lse: bitwise those of the forward of the same family.
      if (const kernels::Variant* fv =
              kernels::Registry::builtin().find_family(Op::attention_fwd, v->family())) {
        RC_ASSERT(bitwise_equal({fused_out["o"], fused_out["lse"]}, run_variant(*fv, fwd)));
      }
      // dq, dk, dv: within both bounds of the backward of the same family
      // (or the DNF's): |fused - bwd| <= bound_fwdbwd + bound_bwd.
      const kernels::Variant* bv =
          kernels::Registry::builtin().find_family(Op::attention_bwd, v->family());
      if (!bv) bv = kernels::Registry::builtin().find_role(Op::attention_bwd, kernels::Role::dnf);
      const auto grads = run_variant(*bv, bwd);
      const auto bwd_out = outputs_by_name(Op::attention_bwd, grads);
      const auto fused_bound = outputs_by_name(Op::attention_fwdbwd, fused_bounds);
      const auto bwd_bound = outputs_by_name(Op::attention_bwd, bwd_bounds);
      for (std::string_view grad : info(Op::attention_bwd).outputs) {
        std::size_t n = 0;
        for (const moa::Index& i : moa::iota(bwd_out[grad].shape())) {
          const double diff = std::fabs(fused_out[grad].get(i) - bwd_out[grad].get(i));
          const double allowed = fused_bound[grad][n] + bwd_bound[grad][n];
          if (!(diff <= allowed)) {
            RC_FAIL(v->name + " vs " + bv->name + " " + std::string(grad) + i.str() +
                    ": differ by " + std::to_string(diff) + ", allowed " + std::to_string(allowed));
          }
          ++n;
        }
      }
    }
  });
}

std::vector<const kernels::Variant*> vs_torch_variants_for(Op op, Format f) {
  std::vector<const kernels::Variant*> out;
  for (const kernels::Variant* v : variants_for(op, f))
    if (v->backend == "cpu" && v->role == kernels::Role::onf && v->name != "cpu.naive")
      out.push_back(v);
  return out;
}

const kernels::Variant* torch_for(Op op, Format f) {
  const kernels::Variant* t = kernels::Registry::builtin().find_role(op, kernels::Role::torch);
  return t && t->supports(f) ? t : nullptr;
}

bool prop_vs_torch(Op op, Format f, double r) {
  const kernels::Variant* torch = torch_for(op, f);
  const auto cpu = vs_torch_variants_for(op, f);
  const Rule rule{Rule::vs_torch, r};
  return rc::check(label(op, f, "no worse than " + rule.str() + ":"), [=] {
    RC_PRE(torch != nullptr);
    const CaseSpec spec = *gen_for(op, f);
    classify(spec);
    const Case c = make_case(spec);
    const oracle::Answer exact = oracle::evaluate(c);
    const auto torch_errors = abs_errors(exact, run_variant(*torch, c));
    const auto bounds = oracle::apriori_bounds(c);
    for (const kernels::Variant* v : cpu) {
      const Verdict verdict = judge(c, exact, run_variant(*v, c), rule, &bounds, &torch_errors);
      if (!verdict.holds) RC_FAIL(v->name + " vs torch: " + verdict.why);
    }
  });
}

}  // namespace moacert::properties
