// What a counting backend says of the calls it ran, beside their results:
// the host emulator's counters, the counts of each call checked against the
// variant's cost function, each launch beside its model, and a seedable
// schedule. One interface for all of it, held by Variant::instrumentation
// and null for kernels that count nothing; a backend overrides what it
// has, and each default says "nothing here".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moacert::kernels {

// One kernel launch as a counting backend saw it: its float atomics and
// global bytes (loads and stores), counted and as its cost function
// models them.
struct LaunchCounts {
  std::string kernel;
  double atomics = 0, model_atomics = 0, bytes = 0, model_bytes = 0;
  // Global load and store accesses, one per thread and access (what Nsight
  // Compute's thread-level sass__inst_executed_global_* count on hardware,
  // scripts/device-check.sh).
  double loads = 0, stores = 0;
};

// Counts by name ("float atomics", "global loads", ...), in the order the
// backend reports them.
using Counts = std::vector<std::pair<std::string, double>>;

class Instrumentation {
 public:
  virtual ~Instrumentation() = default;

  // A kernel run on the SIMT emulator (a plugin built against
  // moacert/simt.h, or kernels/cuda/'s simt.* variants): the emulator's
  // counters summed over its calls so far, as JSON (docs/simt.md#counters);
  // empty for other kernels.
  virtual std::string simt_counters() { return {}; }

  // Backends that count what their calls did (the host emulator): the
  // counts of the calls since the last take. Nullopt where nothing is
  // counted.
  virtual std::optional<Counts> take_counts() { return std::nullopt; }

  // Backends that check each call's counts against the variant's cost
  // function (kernels/cuda/'s global traffic per launch and tensor,
  // docs/cuda.md): the first difference since the last take, in words, or
  // "" when every call since agreed. Nullopt where nothing is checked.
  virtual std::optional<std::string> take_count_mismatch() { return std::nullopt; }

  // Backends whose schedule is seeded (RunOptions::schedule_seed, derived
  // from the case): set_schedule_seed adds a variation to that seed for the
  // next calls, 0 for the case's own schedule (what `reproduce` replays),
  // for measuring a result's spread over schedules.
  virtual bool seeds_schedule() const { return false; }
  virtual void set_schedule_seed(std::uint64_t /*variation*/) {}

  // Backends that count each launch and model it (kernels/cuda/'s simt.*
  // variants): every launch since the last take, its counts beside its
  // cost function's, for the certificate's plot of counted against
  // modelled. Empty otherwise.
  virtual std::vector<LaunchCounts> take_launch_counts() { return {}; }
};

// The emulator's counters and nothing else: a plugin built against
// moacert/simt.h, whose worker sums them (kernels/plugin/).
class SimtCountersOnly : public Instrumentation {
 public:
  explicit SimtCountersOnly(std::function<std::string()> counters)
      : counters_(std::move(counters)) {}
  std::string simt_counters() override { return counters_(); }

 private:
  std::function<std::string()> counters_;
};

}  // namespace moacert::kernels
