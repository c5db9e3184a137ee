// The ranks of a build without MPI: this process alone (cli/ranks.hpp).
#include "cli/commands.hpp"
#include "cli/ranks.hpp"

namespace moacert::cli {

Ranks& ranks() {
  if (launch_from_environment().size > 1)
    throw UsageError(
        "this moacert was built without MPI: run it without mpirun, or rebuild it with MPI "
        "(libopenmpi-dev, docs/hpc.md)");
  return one_rank();
}

bool sharing() {
  return false;
}

void abort_ranks(int) {}

}  // namespace moacert::cli
