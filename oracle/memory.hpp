// What the oracle needs to answer a case, stated by the oracle itself so
// that `--max-memory` (cli/budget.cpp) only adds up what each part says.
#pragma once

#include "oracle/oracle.hpp"
#include "oracle/selection.hpp"
#include "reference/problem.hpp"

namespace moacert::oracle {

// The rows a sampled oracle will evaluate, known up to some of them:
// `rows`, and at most `more_query_rows` query rows and `more_key_rows` key
// rows besides, anywhere. certify states a case's sample this way from its
// shape alone, before its data exist (properties/sample.hpp, sample_bound);
// a selection known in full has no more rows.
struct SelectionBound {
  Selection rows;
  moa::extent_t more_query_rows = 0, more_key_rows = 0;
};

// Bytes the oracle holds at once for a case of `p` at the precision cap
// `max_precision` (bits) with `threads` threads (0: the machine's cores),
// evaluating every element (`sample` null) or a sample's, asked for
// `exact_digits` decimal digits (Options::exact_digits). Its passes run
// one after the other, each converting the input rows its units read
// (detail/units.hpp, reads_of; for a further row of a SelectionBound, the
// most any one row's units could add) one run of units at a time
// (for_each_chunk): the largest pass counts, at the bytes of its element
// (16 for the first pass's intervals, 32 for double-doubles, MPFI at the
// cap), with the largest unit's scratch per thread; beside it, each output
// element's state in the driver and the answer, and the rows' and units'
// bookkeeping. docs/design.md, "Memory budget".
// Throws std::invalid_argument for a selected row out of range.
double memory_needed(const Problem& p, int max_precision = Options{}.max_precision, int threads = 0,
                     const SelectionBound* sample = nullptr, int exact_digits = 0);

// Of memory_needed, what is still held once evaluate has returned and its
// passes have freed theirs: the Answer (per output element, sampled or not,
// the rounded value, 8 bytes, the double-double, 16, and the evaluated and
// undetermined flags; with exact digits asked, each element's decimal
// string), and a generated backward's forward rows, which the process
// keeps (detail/forward_memo.hpp). The kernels run beside these.
double held_after(const Problem& p, int exact_digits = 0);

}  // namespace moacert::oracle
