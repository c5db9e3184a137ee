// The one file of moacert that includes hwloc.
#include "reports/provenance.hpp"

#include <sys/utsname.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <hwloc.h>

#include "reports/git_commit.hpp"

namespace moacert::reports {

namespace {

int count_of(hwloc_topology_t topology, hwloc_obj_type_t type) {
  return std::max(0, hwloc_get_nbobjs_by_type(topology, type));
}

void read_host(Provenance& p) {
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return;
  if (hwloc_topology_load(topology) == 0) {
    p.packages = count_of(topology, HWLOC_OBJ_PACKAGE);
    p.cores = count_of(topology, HWLOC_OBJ_CORE);
    p.hardware_threads = count_of(topology, HWLOC_OBJ_PU);
    p.numa_nodes = count_of(topology, HWLOC_OBJ_NUMANODE);
    if (hwloc_obj_t package = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PACKAGE, 0)) {
      if (const char* model = hwloc_obj_get_info_by_name(package, "CPUModel")) p.cpu_model = model;
    }
    // The size of one cache of each level (the first core's).
    const std::pair<hwloc_obj_type_t, const char*> levels[] = {
        {HWLOC_OBJ_L1CACHE, "L1d"}, {HWLOC_OBJ_L2CACHE, "L2"}, {HWLOC_OBJ_L3CACHE, "L3"}};
    for (const auto& [type, name] : levels) {
      if (hwloc_obj_t cache = hwloc_get_obj_by_type(topology, type, 0))
        p.caches.push_back({name, std::int64_t(cache->attr->cache.size)});
    }
  }
  hwloc_topology_destroy(topology);
  if (p.cpu_model.empty()) p.cpu_model = "unknown";
}

// PRETTY_NAME of /etc/os-release, else the system's name.
std::string os_name(const std::string& fallback) {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string v = line.substr(12);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return fallback;
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

Provenance gather_provenance(std::string command_line) {
  Provenance p;
  read_host(p);
  utsname u{};
  if (uname(&u) == 0) {
    p.kernel = fmt::format("{} {} {} ({})", u.sysname, u.release, u.machine, u.version);
    p.os = os_name(u.sysname);
  }
  p.compiler = MOACERT_COMPILER;
  p.flags = MOACERT_CXX_FLAGS;
  p.git_commit = git_commit();
  p.libraries = {{"MPFR", MOACERT_MPFR_VERSION},      {"MPFI", MOACERT_MPFI_VERSION},
                 {"Boost", MOACERT_BOOST_VERSION},    {"RapidCheck", MOACERT_RAPIDCHECK_VERSION},
                 {"LibTorch", MOACERT_TORCH_VERSION}, {"CUDA", MOACERT_CUDA_VERSION}};
  p.command_line = std::move(command_line);
  p.date = utc_now();
  return p;
}

nlohmann::json to_json(const Provenance& p) {
  nlohmann::json caches = nlohmann::json::object();
  for (const auto& [level, bytes] : p.caches) caches[level] = bytes;
  nlohmann::json libraries = nlohmann::json::object();
  for (const auto& [name, version] : p.libraries) libraries[name] = version;
  return {{"host",
           {{"cpu_model", p.cpu_model},
            {"packages", p.packages},
            {"cores", p.cores},
            {"hardware_threads", p.hardware_threads},
            {"numa_nodes", p.numa_nodes},
            {"cache_bytes", caches},
            {"os", p.os},
            {"kernel", p.kernel}}},
          {"build",
           {{"compiler", p.compiler},
            {"flags", p.flags},
            {"git_commit", p.git_commit},
            {"libraries", libraries}}},
          {"command_line", p.command_line},
          {"date", p.date}};
}

std::string to_markdown(const Provenance& p) {
  std::ostringstream md;
  md << "\n## Provenance\n\n| | |\n| --- | --- |\n";
  md << fmt::format("| CPU | {} ({} packages, {} cores, {} hardware threads, {} NUMA nodes) |\n",
                    p.cpu_model, p.packages, p.cores, p.hardware_threads, p.numa_nodes);
  for (const auto& [level, bytes] : p.caches)
    md << fmt::format("| {} cache | {} KiB |\n", level, bytes / 1024);
  md << fmt::format("| OS | {}; {} |\n| compiler | {} |\n| flags | `{}` |\n| git commit | `{}` |\n",
                    p.os, p.kernel, p.compiler, p.flags, p.git_commit);
  for (const auto& [name, version] : p.libraries) md << fmt::format("| {} | {} |\n", name, version);
  md << fmt::format("| command | `{}` |\n| date | {} |\n", p.command_line, p.date);
  return md.str();
}

}  // namespace moacert::reports
