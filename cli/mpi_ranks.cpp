// The ranks of an mpirun over MPI: the one file of moacert that includes
// mpi.h (docs/design.md, "Who may include whom"). Messages are few and
// small but for each rank's records at the end of an exchange: an
// announcement is one int, sent to every other rank (eager, so the sender
// never waits); the records go to the root in one message per rank.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "cli/commands.hpp"
#include "cli/ranks.hpp"

namespace moacert::cli {

namespace {

constexpr int kAnnounceTag = 1, kGatherTag = 2;

class MpiRanks final : public Ranks {
 public:
  MpiRanks() {
    // Threads (OpenMP, the plugin worker's reader) never call MPI: the
    // main thread alone does.
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiRanks() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void announce(int position) override {
    announced_ = true;
    for (int r = 0; r < size_; ++r)
      if (r != rank_) MPI_Send(&position, 1, MPI_INT, r, kAnnounceTag, MPI_COMM_WORLD);
  }

  std::optional<int> heard() override {
    for (;;) {
      int waiting = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, kAnnounceTag, MPI_COMM_WORLD, &waiting, MPI_STATUS_IGNORE);
      if (!waiting) return lowest_;
      receive_announcement();
    }
  }

  std::vector<std::string> gather(std::string mine) override {
    if (!root()) {
      MPI_Send(mine.data(), int(mine.size()), MPI_BYTE, 0, kGatherTag, MPI_COMM_WORLD);
      return {};
    }
    std::vector<std::string> all{std::move(mine)};
    for (int r = 1; r < size_; ++r) {
      MPI_Status status;
      MPI_Probe(r, kGatherTag, MPI_COMM_WORLD, &status);
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      std::string theirs(std::size_t(bytes), '\0');
      MPI_Recv(theirs.data(), bytes, MPI_BYTE, r, kGatherTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      all.push_back(std::move(theirs));
    }
    return all;
  }

  int share(int value) override {
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
  }

  void settle() override {
    // Each rank announces at most once an exchange (its own first failure
    // ends its share): the others' flags say how many are still to come.
    int mine = announced_ ? 1 : 0;
    std::vector<int> all(std::size_t(size_), 0);
    MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    const int expected = std::accumulate(all.begin(), all.end(), 0) - mine;
    while (received_ < expected) receive_announcement();
    announced_ = false;
    received_ = 0;
    lowest_.reset();
  }

 private:
  void receive_announcement() {
    int position = 0;
    MPI_Recv(&position, 1, MPI_INT, MPI_ANY_SOURCE, kAnnounceTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    ++received_;
    lowest_ = std::min(position, lowest_.value_or(position));
  }

  int rank_ = 0, size_ = 1;
  bool announced_ = false;
  int received_ = 0;
  std::optional<int> lowest_;
};

Ranks* started = nullptr;

}  // namespace

Ranks& ranks() {
  if (launch_from_environment().size <= 1) {
    return one_rank();
  }
  static MpiRanks world;
  started = &world;
  return world;
}

bool sharing() {
  return started != nullptr;
}

void abort_ranks(int status) {
  if (sharing()) MPI_Abort(MPI_COMM_WORLD, status);
}

}  // namespace moacert::cli
