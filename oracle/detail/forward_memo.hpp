// The forward rows a generated attention.bwd case's oracle would compute
// twice, kept once. Such a case's o and lse are the correctly rounded
// forward of its q, k, v (properties::make_case evaluates that forward
// whole, Options::keep_forward_rows); the sampled oracle of the case then
// needs, for its key rows, every query row's softmax normaliser and O_i
// (dnf::attention_bwd_key_rows): the same first-pass intervals, bit for
// bit, a second time. At N = M = 16384 that second forward was a third of
// the case's time (docs/performance-history.md, "The generation's forward
// kept").
//
// One set of inputs at a time, for the whole process: a first pass of
// attention.fwd over every row, asked to, fills one; a first pass with
// key rows takes it only when its q, k, v are the kept ones value for
// value (every bit of every element), and its scale and mask the same.
// Only the vectorised first pass (FastInterval) keeps and takes them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "reference/case.hpp"

namespace moacert::oracle::detail {

struct ForwardMemo {
  Problem problem;                // the forward's: dims, scale, mask
  std::vector<AnyTensor> inputs;  // its q, k, v, compared by value
  // Per query row (b, h, i), row-major: O_i's D intervals, then the
  // normaliser's shift and sum, each interval its lo and hi.
  std::vector<double> rows;
  std::vector<std::uint8_t> done;  // 1 once row r is filled
  moa::extent_t row_doubles() const { return 2 * (problem.dims.D + 2); }
};

// A memo to fill for the forward case `fwd` (attention.fwd, every row),
// its storage allocated.
std::shared_ptr<ForwardMemo> start_forward_memo(const Case& fwd);

// Keeps `memo` as the process's, if every row was filled (else, or for
// null, keeps none): it replaces the one kept before.
void keep_forward_memo(std::shared_ptr<ForwardMemo> memo);

// The kept memo if case c (an attention op with q, k, v) has its inputs,
// scale and mask; else null.
std::shared_ptr<const ForwardMemo> forward_memo_for(const Case& c);

// The bytes a memo of problem p holds (oracle/memory.cpp states them).
double forward_memo_bytes(const Problem& p);

}  // namespace moacert::oracle::detail
