// The processes one moacert command runs in: this process alone, or the
// ranks of an mpirun (docs/hpc.md). This header does not include mpi.h:
// only cli/mpi_ranks.cpp does, and a build without MPI has
// cli/one_rank.cpp instead, where a command runs in one process.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace moacert::cli {

// The rank and the number of ranks a launcher gave this process, read from
// its environment without starting MPI: OMPI_COMM_WORLD_RANK and
// OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), else PMI_RANK and PMI_SIZE
// (MPICH's and Intel MPI's launchers, Slurm's srun --mpi=pmi2); 0 of 1
// when neither is set. A plain `moacert` run never initialises MPI: the
// singleton MPI_Init of a program started without mpirun is slow and
// prints warnings, as root most of all.
struct Launch {
  int rank = 0, size = 1;
};
Launch launch_from_environment();

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool root() const { return rank() == 0; }

  // Tells every other rank, without waiting, that this one found a
  // counterexample at case `position` of the current exchange.
  virtual void announce(int position) = 0;
  // The lowest position the other ranks announced in the current exchange
  // so far (nullopt: none), without waiting.
  virtual std::optional<int> heard() = 0;
  // At the root, every rank's `mine` in rank order (the root's first);
  // elsewhere, nothing. Every rank calls it, in the same order.
  virtual std::vector<std::string> gather(std::string mine) = 0;
  // The root's `value`, on every rank. Every rank calls it.
  virtual int share(int value) = 0;
  // Ends an exchange: every rank calls it, and the announcements still in
  // flight are received, so that none leaks into the next.
  virtual void settle() = 0;
};

// The ranks of this command: MPI's world, initialised on the first call,
// when launch_from_environment() says more than one rank; else this
// process alone. A build without MPI launched with several ranks throws
// UsageError: every rank would run the whole command and write the same
// files.
Ranks& ranks();

// This process alone (what ranks() is without a launcher).
Ranks& one_rank();

// Whether ranks() started MPI with other ranks: from then on, an error on
// one rank alone must end them all (abort_ranks), or they would wait for it.
bool sharing();
// Ends every rank of the run with `status` (MPI_Abort); returns when there
// is no other rank.
void abort_ranks(int status);

}  // namespace moacert::cli
