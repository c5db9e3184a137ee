// What the oracle needs to answer a case, stated by the oracle itself so
// that `--max-memory` (cli/budget.cpp) only adds up what each part says.
#pragma once

#include "oracle/oracle.hpp"
#include "reference/problem.hpp"

namespace moacert::oracle {

// Bytes the oracle holds at once for a case of `p` at the precision cap
// `max_precision` (bits) with `threads` threads (0: the machine's cores):
// its MPFI and double-interval copies of the inputs, each output element's
// answer (enclosure, double-double, rounded value, a priori bound), and one
// unit's scratch (detail/units.hpp) per thread, in MPFI at the cap.
double memory_needed(const Problem& p, int max_precision = Options{}.max_precision,
                     int threads = 0);

}  // namespace moacert::oracle
