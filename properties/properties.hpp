// The properties every registered variant must satisfy, over random cases
// (RapidCheck). Each returns RapidCheck's verdict; a failure prints the
// reproduce string and the shrunk case. The oracle's answer for a case is
// computed once and shared by every variant checked on it.
#pragma once

#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "oracle/oracle.hpp"
#include "properties/case_gen.hpp"
#include "properties/check.hpp"

namespace moacert::properties {

// The variants of `op` in this build that support `f`; with the environment
// variable MOACERT_VARIANTS (comma-separated name prefixes, e.g. "cuda." or
// "simt.,cpu.flash"; "-simt." excludes), only those it selects.
std::vector<const kernels::Variant*> variants_for(Op op, Format f);
// Whether MOACERT_VARIANTS (unset: every variant) names `v`.
bool selected(const kernels::Variant& v);

// Tile extents of the given variants (what generators straddle).
std::vector<moa::extent_t> tiles_of(const std::vector<const kernels::Variant*>& vs);

// The oracle's correctly rounded outputs, as tensors of the case's format (its
// double-double exact values not narrowed: they are not kept). With
// `keep_forward_rows` (oracle::Options), an attention.fwd's rows are kept
// for the backward of the same inputs.
std::vector<AnyTensor> oracle_outputs(const Case& c, bool keep_forward_rows = false);

// Builds the case of a spec (attention.bwd's o and lse from the oracle, its
// first pass's rows kept for the case's own oracle: oracle::Options).
Case make_case(const CaseSpec& spec);
// The same for a kernel declaring `c`: each input drawn in the format it
// declares (docs/design.md#per-tensor-formats); the rest of as_taken
// (reference/conventions.hpp) is the judge's.
Case make_case(CaseSpec spec, const Conventions& c);

// Every variant agrees with the oracle under the a priori rule.
bool prop_agreement(Op op, Format f);
// The same logical inputs in other layouts give results that agree with the
// oracle, and bitwise equal ones for deterministic CPU variants.
bool prop_layout_invariance(Op op, Format f);
// Deterministic variants give bitwise equal outputs on repeated runs and on
// 1 vs 2 threads.
bool prop_determinism(Op op, Format f);
// attention.fwdbwd's o and lse equal attention.fwd's of the same family,
// bitwise, and its gradients agree with attention.bwd's within the rule.
bool prop_backward_consistency(Format f);

// PyTorch's variant of `op` when this build has one for `f` (the LibTorch
// adaptor), else nullptr.
const kernels::Variant* torch_for(Op op, Format f);

// The vs-torch rule as a law (only in builds with LibTorch): each tuned CPU
// variant's error against the oracle is at most R times PyTorch's on the
// same case (at least half an ulp, and 2^-10 of the a priori bound), plus
// 1 ulp (vs_torch_allowed). R and its measurement: docs/torch.md#r.
constexpr double kVsTorchR = 32;
bool prop_vs_torch(Op op, Format f, double r = kVsTorchR);
// The variants prop_vs_torch checks: the CPU variants of `op` for `f` but
// cpu.dnf and cpu.naive, the DNF run as written (the a priori bound's
// baseline, not a claim of equivalence; docs/torch.md#r).
std::vector<const kernels::Variant*> vs_torch_variants_for(Op op, Format f);

}  // namespace moacert::properties
