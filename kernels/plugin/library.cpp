#include "kernels/plugin/library.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "include/moacert/plugin.h"
#include "kernels/isolation/process.hpp"
#include "kernels/plugin/protocol.hpp"

namespace moacert::kernels::plugin {

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using isolation::describe_status;
using isolation::reap;
using isolation::signal_name;
}  // namespace

std::string seconds_text(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::string worker_path(const LoadOptions& o) {
  if (!o.worker.empty()) return o.worker;
  if (const char* env = std::getenv("MOACERT_PLUGIN_WORKER"); env && *env) return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = self.parent_path() / "moacert-plugin-worker";
    if (fs::exists(beside)) return beside.string();
  }
#ifdef MOACERT_PLUGIN_WORKER_BUILD_PATH
  if (fs::exists(MOACERT_PLUGIN_WORKER_BUILD_PATH)) return MOACERT_PLUGIN_WORKER_BUILD_PATH;
#endif
  throw PluginError("cannot find moacert-plugin-worker beside moacert (set MOACERT_PLUGIN_WORKER)");
}

// Starts the worker with `args`; one that cannot be started is bad input.

pid_t spawn(const std::vector<std::string>& args) {
  try {
    return isolation::spawn(args);
  } catch (const std::invalid_argument& e) {
    throw PluginError(e.what());
  }
}

// ---- Validation: the kernel table, as a short-lived child reports it.
std::vector<Entry> list_library(const std::string& lib, const std::string& worker,
                                double timeout_s) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw PluginError("cannot create a pipe");
  fcntl(p[1], F_SETFD, 0);  // the child's end is inherited
  pid_t pid = 0;
  try {
    pid = spawn({worker, "list", std::to_string(p[1]), lib});
  } catch (...) {
    close(p[0]);
    close(p[1]);
    throw;
  }
  close(p[1]);
  std::string text;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd f{p[0], POLLIN, 0};
    const int r = poll(&f, 1, int(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    const ssize_t n = read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < (1u << 20)) text.append(buf, std::size_t(n));
  }
  close(p[0]);
  if (timed_out) kill(pid, SIGKILL);
  const int status = reap(pid, Clock::now() + std::chrono::seconds(2));
  const std::string who = "plugin " + lib;
  if (timed_out) throw PluginError(who + " did not load within " + seconds_text(timeout_s) + " s");
  if (WIFSIGNALED(status))
    throw PluginError(who + " crashed while loading (" + signal_name(WTERMSIG(status)) + ")");
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line))
    throw PluginError(who + ": the loader reported nothing (" + describe_status(status) + ")");
  if (line.rfind("error dlopen ", 0) == 0)
    throw PluginError(who + ": cannot load: " + line.substr(13));
  if (line == "error nosymbol")
    throw PluginError(who + " has no symbol moacert_plugin_kernels (not a moacert plugin)");
  if (line == "error notable")
    throw PluginError(who + ": moacert_plugin_kernels returned no table");
  if (line.rfind("error notable ", 0) == 0)
    throw PluginError(who + ": moacert_plugin_kernels returned no table: " + line.substr(14));
  int abi = 0, count = 0;
  if (std::sscanf(line.c_str(), "abi %d count %d", &abi, &count) != 2)
    throw PluginError(who + ": the loader's report is garbled");
  if (abi < 1 || abi > MOACERT_PLUGIN_ABI)
    throw PluginError(who + " speaks plugin ABI version " + std::to_string(abi) +
                      ", this moacert speaks versions 1 to " + std::to_string(MOACERT_PLUGIN_ABI));
  if (count <= 0)
    throw PluginError(who + " exports no kernels (count " + std::to_string(count) + ")");
  if (count > 1000) throw PluginError(who + " claims " + std::to_string(count) + " kernels");
  std::vector<Entry> table;
  auto garbled = [&] { return PluginError(who + ": the loader's report is garbled"); };
  auto integer = [&](const std::string& cell) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(cell, &used);
    } catch (const std::exception&) {
      throw garbled();
    }
    if (used != cell.size()) throw garbled();
    return std::int64_t(v);
  };
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream cells(line);
    while (std::getline(cells, cell, '\t')) f.push_back(cell);
    if (f.size() == 5 && f[0] == "axis") f.emplace_back();  // an empty value list
    if (f.size() == 6 && f[0] == "axis" && !table.empty()) {
      table.back().axes.push_back(
          {f[1], integer(f[2]), integer(f[3]), integer(f[4]), std::move(f[5])});
      continue;
    }
    if (f.size() == 2 && f[0] == "device") {
      for (Entry& e : table)
        if (e.device == "cuda") e.device_runtime = f[1];
      continue;
    }
    if (f.size() != 15 || f[0] != "kernel") throw garbled();
    Entry e{f[1], f[2], f[3], int(integer(f[4])), f[5] == "1", f[6], int(integer(f[7])), {}};
    e.arithmetic = f[9];
    auto declared = [](const std::string& field) { return field == "(null)" ? "" : field; };
    e.outputs = declared(f[10]);
    e.causal_alignment = declared(f[11]);
    e.params = declared(f[12]);
    e.tensor_formats = declared(f[13]);
    e.deterministic = int(integer(f[14]));
    if (integer(f[8]) > wire::kMaxAxes)
      throw PluginError(who + ": kernel '" + e.name + "' declares " + f[8] + " axes (at most " +
                        std::to_string(wire::kMaxAxes) + ")");
    table.push_back(std::move(e));
  }
  if (int(table.size()) != count) throw PluginError(who + ": the loader's report is garbled");
  return table;
}

}  // namespace moacert::kernels::plugin
