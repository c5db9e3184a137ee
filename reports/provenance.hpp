// Where and how a certificate was obtained (docs/certificate.md#provenance):
// the machine, the build and the run, as plain values. The device a variant
// ran on (GPU model, driver and compute capability, or "host emulator") is
// the certificate's own `ran_on`, which the variant states.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace moacert::reports {

struct Provenance {
  // The host, from hwloc and uname(2).
  std::string cpu_model;
  int packages = 0, cores = 0, hardware_threads = 0, numa_nodes = 0;
  std::vector<std::pair<std::string, std::int64_t>> caches;  // "L1d", "L2", "L3": bytes
  std::string os, kernel;  // "Debian GNU/Linux 12", "Linux 6.1 x86_64"
  // The build, fixed at configure time (cmake/Provenance.cmake), its
  // commit at build time (reports/git_commit.hpp).
  std::string compiler, flags, git_commit;
  std::vector<std::pair<std::string, std::string>> libraries;  // name, version
  // The run.
  std::string command_line;
  std::string date;  // UTC, ISO 8601: 2026-12-03T13:45:00Z
};

// This machine, this build, now; `command_line` as the user typed it.
Provenance gather_provenance(std::string command_line);

nlohmann::json to_json(const Provenance& p);
std::string to_markdown(const Provenance& p);

}  // namespace moacert::reports
