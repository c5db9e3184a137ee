// A selection of output rows: what the sampled oracle evaluates
// (docs/oracle.md#sampled). Every output element of these ops belongs to one
// row, and a row is what one cheap unit of the oracle computes:
//
//   query rows   attention.fwd/bwd/fwdbwd (b, h, i), flat (b·H + h)·N + i:
//                o[b,h,i,:], lse[b,h,i], dq[b,h,i,:]; attention.decode (b, h),
//                flat b·H + h; rmsnorm, mlp.swiglu row t; block (b, n), flat
//                b·N + n
//   key rows     attention.bwd/fwdbwd (b, g, j), flat (b·Hkv + g)·M + j:
//                dk[b,g,j,:], dv[b,g,j,:]
#pragma once

#include <string>
#include <vector>

#include "reference/case.hpp"

namespace moacert::oracle {

struct Selection {
  std::vector<moa::extent_t> query_rows;  // sorted, each once
  std::vector<moa::extent_t> key_rows;    // sorted, each once; bwd and fwdbwd only
};

// How many query (key) rows the problem has; 0 key rows for the ops that
// have none.
moa::extent_t query_row_count(const Problem& p);
moa::extent_t key_row_count(const Problem& p);

// Whether output `out` (ops-table order) is indexed by key rows (dk, dv).
bool is_key_output(Op op, int out);

// How many consecutive elements (row-major) of output `out` one row holds:
// element `flat` is in row flat / row_length (a query or a key row, by
// is_key_output).
moa::extent_t row_length(const Problem& p, int out);

// Sorts, removes repeats and checks every row against the problem; throws
// std::invalid_argument naming the first row out of range.
Selection normalised(Selection s, const Problem& p);

// "q=0,5..9;k=3" (docs/design.md, `oracle --rows`): query rows after q=,
// key rows after k=, each a comma-separated list of flat row indices or
// inclusive ranges LO..HI; a list without a prefix is query rows. Throws
// std::invalid_argument with one line naming what is wrong.
Selection parse_selection(const std::string& text, const Problem& p);

// The selection written back in the same syntax (ranges where rows run on).
std::string str(const Selection& s);

}  // namespace moacert::oracle
