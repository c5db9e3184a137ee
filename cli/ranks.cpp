// What both builds share (with MPI: cli/mpi_ranks.cpp; without:
// cli/one_rank.cpp): how a process knows that a launcher started it.
#include <cstdlib>
#include <string>
#include <utility>

#include "cli/ranks.hpp"

namespace moacert::cli {

namespace {

// A variable's whole number, or `otherwise` when it is unset or not one.
int env_int(const char* name, int otherwise) {
  const char* text = std::getenv(name);
  if (!text || !*text) return otherwise;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' && value >= 0 && value < (1L << 30) ? int(value) : otherwise;
}

// This process alone.
class OneRank final : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void announce(int) override {}
  std::optional<int> heard() override { return std::nullopt; }
  std::vector<std::string> gather(std::string mine) override { return {std::move(mine)}; }
  int share(int value) override { return value; }
  void settle() override {}
};

}  // namespace

Ranks& one_rank() {
  static OneRank one;
  return one;
}

Launch launch_from_environment() {
  for (const auto& [rank, size] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                   std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    const int n = env_int(size, 0);
    if (n > 0) return {env_int(rank, 0), n};
  }
  return {};
}

}  // namespace moacert::cli
