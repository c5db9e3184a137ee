// The memory budget (--max-memory): a case whose tensors or oracle would
// not fit is refused up front with the figure (exit 2), rather than killed
// by the OOM killer half-way.
#pragma once

#include <cstdint>
#include <string>

#include "reference/problem.hpp"

namespace moacert::cli {

// Bytes one case needs, estimated from its problem (docs/plugins.md,
// "Memory budget"): `tensors` the case's inputs and outputs with the
// copies a run makes (row-major copies, a plugin's shared memory);
// `oracle` the oracle's MPFI inputs at its precision cap, its per-element
// answer, and one unit's scratch per thread.
struct Footprint {
  double tensors = 0, oracle = 0;
  double total() const { return tensors + oracle; }
};
Footprint footprint(const Problem& p, int oracle_bits = 1024);

// Half the machine's physical memory: the default of --max-memory.
std::uint64_t default_max_memory();

// "4G", "512M", "1.5GiB", "1000000": bytes. Throws UsageError.
std::uint64_t parse_bytes(const std::string& text);

// "37.2 GiB", "512 MiB", "800 B".
std::string bytes_text(double bytes);

// Throws UsageError "WHAT needs X (tensors A + oracle B), over --max-memory C"
// when the footprint exceeds `max_bytes`; `with_oracle` false counts tensors
// only (bench), plus `scratch_bytes` (a variant's own working memory).
void check_budget(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                  bool with_oracle = true, double scratch_bytes = 0);

}  // namespace moacert::cli
