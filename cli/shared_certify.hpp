// certify's cases shared among the ranks of a run (cli/ranks.hpp; one rank
// without mpirun): rank r of K judges cases r, r+K, r+2K, ... in order
// (case i of the random stream depends on the seed and i alone), sends
// its records to the root, which reduces all of them in case order
// (properties::CaseRunner::certificate): the certificate one process
// writes for the same seed and case count.
//
// A counterexample at case p on any rank is announced to every other
// rank, which skips its cases past p (it checks between cases) and still
// judges those below p, so that the lowest failing case is the one
// reported, shrunk on the rank that owns it, as one process would.
#pragma once

#include <string>
#include <vector>

#include "cli/ranks.hpp"
#include "properties/certify.hpp"

namespace moacert::cli {

struct SharedCertificate {
  // At the root; elsewhere default values.
  properties::Certificate cert;
  // The SIMT emulator's counters, summed over every call of every rank
  // (docs/simt.md#counters); "" when the variant has none.
  std::string simt_counters;
  std::vector<int> cases_by_rank;  // the cases each rank judged
  int failing_rank = -1;           // the rank that judged the counterexample
};

// With one rank, its cases are judged o.jobs at a time where the variant
// allows it (properties/parallel_cases.hpp): o.progress must then bear
// calls from several threads (properties::serialized makes it so).
SharedCertificate certify_shared(const properties::CertifyOptions& options, Ranks& ranks);

}  // namespace moacert::cli
