// The memory budget (--max-memory): a case whose tensors, oracle or kernel
// scratch would not fit is refused up front with the figure (exit 2),
// rather than killed by the OOM killer half-way. Each part states its own
// need: the oracle (oracle/memory.hpp), the kernel (its registry cost
// function's peak_extra_bytes); this file only combines them and compares.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/registry.hpp"
#include "oracle/memory.hpp"
#include "reference/problem.hpp"

namespace moacert::cli {

// Bytes one case needs (docs/design.md, "Memory budget"): `tensors` the
// case's inputs and outputs with the copies its runs make (the variant's,
// and PyTorch's beside it: row-major copies, a plugin's shared memory, the
// outputs each run keeps); `oracle` what the oracle says it needs, of which
// `answer` is still held once it returns; `kernel` the variant's own
// scratch (the larger of the two runs'), none of it kept past its call
// (RunOptions::keep_workspaces). The oracle runs first and frees its passes
// before the kernels run (properties/certify.cpp, prepare_case): the case
// needs the larger of its two phases, never their sum.
struct Footprint {
  double tensors = 0, oracle = 0, answer = 0, kernel = 0;
  double total() const { return tensors + std::max(oracle, answer + kernel); }
};

struct BudgetParts {
  bool oracle = true;           // the oracle runs (certify, reproduce, oracle)
  int oracle_precision = 1024;  // its cap, bits
  int oracle_threads = 0;       // 0: the machine's cores
  int oracle_digits = 0;        // its exact digits (oracle --digits)
  // The rows the oracle evaluates: every element (null), or a sample's
  // (certify and reproduce: properties::sample_bound of the shape; oracle:
  // --rows).
  const oracle::SelectionBound* sample = nullptr;
  // The variant run on the case, whose copies and scratch count; null: any
  // (the tensors three times over, inputs and outputs alike).
  const kernels::Variant* variant = nullptr;
  bool scratch = true;  // its cost function's scratch counts (it may walk an axis)
  // A variant run on the same case after it, for certify's equivalence
  // report (PyTorch), or null.
  const kernels::Variant* beside = nullptr;
  // The inputs' layouts, where known (a generated case's, a case file's):
  // a tiled one has no single stride per axis and a strided run may copy
  // it. Null: every input may be tiled.
  const std::vector<moa::Layout>* layouts = nullptr;
};
Footprint footprint(const Problem& p, const BudgetParts& parts = {});

// Half the machine's physical memory: the default of --max-memory.
std::uint64_t default_max_memory();

// "4G", "512M", "1.5GiB", "1000000": bytes. Throws UsageError.
std::uint64_t parse_bytes(const std::string& text);

// "144.1 TiB", "37.2 GiB", "512 MiB", "800 B".
std::string bytes_text(double bytes);

// Throws UsageError "WHAT needs X (tensors A + max(oracle B, its scratch C
// + the answer D)), over --max-memory M", naming the parts that count, when
// the footprint exceeds `max_bytes`.
void check_budget(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                  const BudgetParts& parts = {});

// Throws UsageError "WHAT needs over X (tensors A + its scratch C, before
// the oracle's part), over --max-memory M" when the parts known from the
// shape alone already exceed `max_bytes` (the tensors, checked first, then
// with the scratch of `parts`' variants). Certify and reproduce check it
// before they choose the oracle's sample (properties::sample_bound), whose
// rows for such a shape would themselves not fit.
void check_budget_before_oracle(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                                const BudgetParts& parts);

}  // namespace moacert::cli
