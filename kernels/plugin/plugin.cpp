#include "kernels/plugin/plugin.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include <dlpack/dlpack.h>
#include <nlohmann/json.hpp>

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
struct Entry {
  std::string op, name, dtype;
  int accepts_strided = 0;
  bool has_run = true;
};

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
  int abi = 0, count = 0;
  if (std::sscanf(line.c_str(), "abi %d count %d", &abi, &count) != 2)
    throw PluginError(who + ": the loader's report is garbled");
  if (abi != MOACERT_PLUGIN_ABI)
    throw PluginError(who + " speaks plugin ABI version " + std::to_string(abi) +
                      ", this moacert speaks version " + std::to_string(MOACERT_PLUGIN_ABI));
  if (count <= 0)
    throw PluginError(who + " exports no kernels (count " + std::to_string(count) + ")");
  if (count > 1000) throw PluginError(who + " claims " + std::to_string(count) + " kernels");
  std::vector<Entry> table;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream cells(line);
    while (std::getline(cells, cell, '\t')) f.push_back(cell);
    if (f.size() != 6 || f[0] != "kernel")
      throw PluginError(who + ": the loader's report is garbled");
    table.push_back({f[1], f[2], f[3], std::atoi(f[4].c_str()), f[5] == "1"});
  }
  if (int(table.size()) != count) throw PluginError(who + ": the loader's report is garbled");
  return table;
}

// ---- The worker of one library.
DLDataType dl_type(DType t) {
  switch (t) {
    case DType::f64:
      return {kDLFloat, 64, 1};
    case DType::f32:
      return {kDLFloat, 32, 1};
    case DType::bf16:
      return {kDLBfloat, 16, 1};
    case DType::f16:
      return {kDLFloat, 16, 1};
    case DType::i64:
      return {kDLInt, 64, 1};
  }
  return {kDLFloat, 32, 1};
}

std::string params_json(const Problem& p) {
  char buf[256];
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      std::snprintf(buf, sizeof buf, "{\"scale\":%.17g,\"causal\":%s}", p.scale(),
                    p.causal() ? "true" : "false");
      break;
    case Op::attention_decode:
      std::snprintf(buf, sizeof buf, "{\"scale\":%.17g}", p.scale());
      break;
    case Op::rmsnorm:
      std::snprintf(buf, sizeof buf, "{\"eps\":%.17g}", p.params.eps);
      break;
    case Op::mlp_swiglu:
      std::snprintf(buf, sizeof buf, "{}");
      break;
    case Op::block:
      std::snprintf(buf, sizeof buf, "{\"heads\":%lld,\"kv_heads\":%lld,\"eps\":%.17g}",
                    static_cast<long long>(p.dims.H), static_cast<long long>(p.dims.Hkv),
                    p.params.eps);
      break;
  }
  return buf;
}

std::uint8_t canary(std::uint64_t i) {
  return std::uint8_t(0xA5 ^ ((i * 0x3B) & 0xff));
}

class Worker {
 public:
  Worker(std::string worker, std::string lib, double timeout_s)
      : worker_(std::move(worker)), lib_(std::move(lib)), timeout_s_(timeout_s) {}
  ~Worker() { stop(/*graceful=*/true); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void call(int kernel, const Problem& p, std::span<const TensorRef> inputs,
            std::span<const TensorRef> outputs, std::uint64_t schedule_seed) {
    std::lock_guard lock(mutex_);
    const auto out_names = info(p.op).outputs;
    const int nt = int(inputs.size() + outputs.size());
    if (nt > wire::kMaxTensors) throw std::invalid_argument("plugin: too many tensors");
    // Lay the tensors out in one memfd: each region page-aligned, an
    // output's data 64-byte aligned and within 64 bytes of its region's end.
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    auto round_up = [&](std::size_t x) { return (x + page - 1) / page * page; };
    wire::Request q;
    q.kernel = kernel;
    q.n_inputs = int(inputs.size());
    q.n_outputs = int(outputs.size());
    std::vector<std::size_t> bytes(static_cast<std::size_t>(nt), 0);
    std::size_t total = 0;
    for (int i = 0; i < nt; ++i) {
      const bool out = i >= q.n_inputs;
      const TensorRef& t = out ? outputs[std::size_t(i - q.n_inputs)] : inputs[std::size_t(i)];
      wire::TensorDesc& d = q.tensors[i];
      const DLDataType dt = dl_type(t.dtype);
      d.code = dt.code;
      d.bits = dt.bits;
      d.output = out;
      std::snprintf(d.name, sizeof d.name, "%s", name_of_(i).c_str());
      const moa::Shape s = t.layout.shape();
      const moa::Strides st = t.layout.strides();
      d.ndim = int(s.rank());
      if (d.ndim > wire::kMaxRank) throw std::invalid_argument("plugin: rank over 8");
      for (int k = 0; k < d.ndim; ++k) {
        d.shape[k] = s[std::size_t(k)];
        d.strides[k] = st[std::size_t(k)];
      }
      bytes[std::size_t(i)] = std::size_t(t.layout.cosize()) * std::size_t(dtype_bytes(t.dtype));
      d.region_offset = total;
      // An output keeps 64 to 127 canary bytes on each side: a small
      // overrun is measured to the byte, a larger one faults in a guard page.
      d.region_bytes = out ? round_up(bytes[std::size_t(i)] + 128)
                           : std::max(page, round_up(bytes[std::size_t(i)]));
      d.data_offset = out ? (d.region_bytes - 64 - bytes[std::size_t(i)]) / 64 * 64 : 0;
      total += d.region_bytes;
    }
    q.memfd_bytes = total;
    const std::string params = params_json(p);
    std::snprintf(q.params, sizeof q.params, "%s", params.c_str());
    q.schedule_seed = schedule_seed;

    const int memfd = memfd_create("moacert-plugin-tensors", MFD_CLOEXEC);
    if (memfd < 0)
      throw std::runtime_error(std::string("plugin: memfd_create: ") + std::strerror(errno));
    struct Closer {
      int fd;
      void* map = MAP_FAILED;
      std::size_t len = 0;
      ~Closer() {
        if (map != MAP_FAILED) munmap(map, len);
        close(fd);
      }
    } guard{memfd};
    if (ftruncate(memfd, off_t(total)) != 0)
      throw std::runtime_error(std::string("plugin: cannot size the tensors: ") +
                               std::strerror(errno));
    guard.map = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    guard.len = total;
    if (guard.map == MAP_FAILED)
      throw std::runtime_error(std::string("plugin: cannot map the tensors: ") +
                               std::strerror(errno));
    auto* base = static_cast<unsigned char*>(guard.map);
    for (int i = 0; i < nt; ++i) {
      const wire::TensorDesc& d = q.tensors[i];
      unsigned char* region = base + d.region_offset;
      if (!d.output) {
        std::memcpy(region, inputs[std::size_t(i)].data, bytes[std::size_t(i)]);
      } else {
        for (std::uint64_t k = 0; k < d.region_bytes; ++k) region[k] = canary(k);
        // All ones: NaN in every float format, so an output element the
        // kernel never writes cannot pass.
        std::memset(region + d.data_offset, 0xff, bytes[std::size_t(i)]);
      }
    }

    if (pid_ <= 0) start();
    request_ = q;
    data_bytes_ = bytes;
    const wire::Reply r = exchange(q, memfd);
    // A hazard the SIMT emulator found is the call's fault, whatever the
    // plugin's run made of the exception (docs/simt.md#plugins).
    if (r.simt_report[0]) {
      const std::string text(r.simt_report, strnlen(r.simt_report, sizeof r.simt_report));
      const nlohmann::json report =
          nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (report.is_object()) {
        if (report.contains("counters") && report["counters"].is_object())
          add_counters(report["counters"]);
        if (report.contains("hazard") && report["hazard"].is_object())
          throw KernelFault(report["hazard"].value("message", std::string("SIMT hazard")), false);
      }
    }
    if (r.kind == wire::Reply::error_return) {
      throw KernelFault(
          "returned " + std::to_string(r.rc) +
              (r.message[0] ? std::string(": ") + r.message : std::string(" (no message)")),
          false);
    }
    if (r.kind == wire::Reply::bad_request) {
      stop(false);
      throw std::runtime_error(std::string("plugin worker: ") + r.message);
    }
    // Canary: a write into an output's slack did not fault.
    for (int i = q.n_inputs; i < nt; ++i) {
      const wire::TensorDesc& d = q.tensors[i];
      const unsigned char* region = base + d.region_offset;
      const std::string& nm = std::string(out_names[std::size_t(i - q.n_inputs)]);
      for (std::uint64_t k = 0; k < d.data_offset; ++k) {
        if (region[k] != canary(k)) {
          stop(false);
          throw KernelFault("wrote " + std::to_string(d.data_offset - k) + " bytes before " + nm,
                            false);
        }
      }
      const std::uint64_t end = d.data_offset + bytes[std::size_t(i)];
      for (std::uint64_t k = d.region_bytes; k > end; --k) {
        if (region[k - 1] != canary(k - 1)) {
          stop(false);
          throw KernelFault("wrote " + std::to_string(k - end) + " bytes past " + nm, false);
        }
      }
    }
    for (int i = q.n_inputs; i < nt; ++i) {
      const wire::TensorDesc& d = q.tensors[i];
      std::memcpy(outputs[std::size_t(i - q.n_inputs)].data, base + d.region_offset + d.data_offset,
                  bytes[std::size_t(i)]);
    }
  }

  pid_t pid() const { return pid_; }

  // The emulator's counters summed over the calls so far (empty: none).
  std::string simt_counters() {
    std::lock_guard lock(counters_mutex_);
    return counters_.empty() ? std::string() : nlohmann::json(counters_).dump();
  }

 private:
  void start() {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error("plugin: cannot create a socket");
    fcntl(sv[1], F_SETFD, 0);
    try {
      pid_ = spawn({worker_, "serve", std::to_string(sv[1]), std::to_string(getpid()), lib_});
    } catch (...) {
      close(sv[0]);
      close(sv[1]);
      throw;
    }
    close(sv[1]);
    sock_ = sv[0];
  }

  // Kills (or, when graceful, lets exit) and reaps the worker.
  void stop(bool graceful) {
    if (sock_ >= 0) close(sock_);
    sock_ = -1;
    if (pid_ > 0) {
      if (!graceful) kill(pid_, SIGKILL);
      reap(pid_, Clock::now() + std::chrono::milliseconds(graceful ? 500 : 0));
    }
    pid_ = -1;
  }

  [[noreturn]] void died(const std::string& context, const wire::Reply* fault,
                         const std::vector<std::string>& names) {
    const pid_t pid = pid_;
    if (sock_ >= 0) close(sock_);
    sock_ = -1;
    pid_ = -1;
    const int status = reap(pid, Clock::now() + std::chrono::seconds(2));
    std::string why = describe_status(status);
    if (fault && fault->signo && fault->message[0]) {
      // The SIMT emulator named the fault (a fiber's stack overflow).
      why = std::string(fault->message, strnlen(fault->message, sizeof fault->message)) + " (" +
            signal_name(fault->signo) + ")";
    } else if (fault && fault->signo) {
      why = signal_name(fault->signo);
      const std::string t = fault->tensor >= 0 && std::size_t(fault->tensor) < names.size()
                                ? names[std::size_t(fault->tensor)]
                                : "";
      const wire::TensorDesc* d = fault->tensor >= 0 && fault->tensor < wire::kMaxTensors
                                      ? &request_.tensors[fault->tensor]
                                      : nullptr;
      const std::string access = fault->write == 1   ? "wrote"
                                 : fault->write == 0 ? "read"
                                                     : "accessed";
      switch (fault->where) {
        case wire::Where::past_output: {
          // Byte k past the end (k = 1: the first byte after the last element).
          const std::int64_t k =
              d ? fault->offset -
                      std::int64_t(d->data_offset + data_bytes_[std::size_t(fault->tensor)]) + 1
                : 0;
          why += ": " + access + " byte " + std::to_string(k) + " past the end of " + t +
                 " (its guard page)";
          break;
        }
        case wire::Where::before_output: {
          const std::int64_t k = d ? std::int64_t(d->data_offset) - fault->offset : 0;
          why += ": " + access + " byte " + std::to_string(k) + " before the start of " + t +
                 " (its guard page)";
          break;
        }
        case wire::Where::in_input:
          why += ": wrote into input " + t + " (mapped read-only)";
          break;
        case wire::Where::near_input:
          why += ": " + access + " outside input " + t + " (its guard page)";
          break;
        case wire::Where::unknown:
          break;
      }
    }
    throw KernelFault(why + context, false);
  }

  wire::Reply exchange(const wire::Request& q, int memfd) {
    std::vector<std::string> names;
    // Tensor names for messages (inputs then outputs) come from the caller's
    // op; kept generic here as "input i"/"output i" when unknown.
    for (int i = 0; i < q.n_inputs + q.n_outputs; ++i) names.push_back(name_of_(i));
    char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{const_cast<wire::Request*>(&q), sizeof q};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &memfd, sizeof memfd);
    ssize_t sent;
    do sent = sendmsg(sock_, &m, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    if (sent != ssize_t(sizeof q)) died(" (before the call)", nullptr, names);

    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s_));
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        kill(pid_, SIGKILL);
        stop(false);
        throw KernelFault("timeout after " + seconds_text(timeout_s_) + " s", true);
      }
      pollfd f{sock_, POLLIN, 0};
      const int r = poll(&f, 1, int(std::min<long long>(left, 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      wire::Reply reply;
      const ssize_t n = recv(sock_, &reply, sizeof reply, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n != ssize_t(sizeof reply) || reply.magic != wire::kReplyMagic) died("", nullptr, names);
      if (reply.kind == wire::Reply::fault) died("", &reply, names);
      return reply;
    }
  }

 public:
  std::function<std::string(int)> name_of_ = [](int i) { return "tensor " + std::to_string(i); };

 private:
  void add_counters(const nlohmann::json& c) {
    std::lock_guard lock(counters_mutex_);
    for (auto it = c.begin(); it != c.end(); ++it)
      if (it.value().is_number_unsigned()) counters_[it.key()] += it.value().get<std::uint64_t>();
  }

  std::mutex mutex_, counters_mutex_;
  std::map<std::string, std::uint64_t> counters_;
  wire::Request request_;                // the call in flight, for fault messages
  std::vector<std::size_t> data_bytes_;  // its tensors' data bytes
  std::string worker_, lib_;
  double timeout_s_;
  pid_t pid_ = -1;
  int sock_ = -1;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string kernel_name_of(const std::string& variant) {
  if (variant.rfind("plugin:", 0) != 0) return {};
  const auto hash = variant.rfind('#');
  return hash == std::string::npos ? std::string() : variant.substr(hash + 1);
}

Variant load(const std::string& spec, const LoadOptions& options, const std::string& default_name) {
  if (!(options.timeout_s > 0) || !std::isfinite(options.timeout_s))
    throw PluginError("--timeout must be a positive number of seconds");
  std::string lib = spec, wanted;
  if (const auto hash = spec.rfind('#'); hash != std::string::npos) {
    lib = spec.substr(0, hash);
    wanted = spec.substr(hash + 1);
    if (wanted.empty()) throw PluginError("plugin " + spec + ": empty kernel name after '#'");
  }
  std::error_code ec;
  if (!fs::is_regular_file(lib, ec)) throw PluginError("plugin " + lib + ": no such file");
  const std::string path = fs::absolute(lib, ec).string();
  const std::string worker = worker_path(options);
  const std::vector<Entry> table = list_library(path, worker, std::max(10.0, options.timeout_s));
  const std::string who = "plugin " + lib;

  // Every entry must name a known op and dtype; a name is one op.
  std::vector<std::string> names;
  std::map<std::string, Op> op_of;
  for (const Entry& e : table) {
    if (e.name == "(null)" || e.name.empty()) throw PluginError(who + ": a kernel has no name");
    const auto op = parse_op(e.op);
    if (!op) throw PluginError(who + ": kernel '" + e.name + "' has unknown op '" + e.op + "'");
    if (!parse_format(e.dtype))
      throw PluginError(who + ": kernel '" + e.name + "' has unknown dtype '" + e.dtype +
                        "' (f64, f32, bf16, f16)");
    if (!e.has_run) throw PluginError(who + ": kernel '" + e.name + "' has no run function");
    const auto [it, fresh] = op_of.emplace(e.name, *op);
    if (fresh)
      names.push_back(e.name);
    else if (it->second != *op)
      throw PluginError(who + ": kernel name '" + e.name + "' is used for two ops");
  }
  if (wanted.empty()) {
    if (names.size() == 1)
      wanted = names.front();
    else if (!default_name.empty() && op_of.count(default_name))
      wanted = default_name;
    else
      throw PluginError(who + " holds several kernels (" + join(names) + "): name one as " + lib +
                        "#NAME");
  }
  if (!op_of.count(wanted))
    throw PluginError(who + " has no kernel '" + wanted + "' (it has: " + join(names) + ")");

  Variant v;
  v.op = op_of[wanted];
  v.name = "plugin:" + fs::path(lib).filename().string() + "#" + wanted;
  v.backend = "plugin";
  v.role = Role::plugin;
  v.accepts_strided = true;
  v.deterministic = false;
  v.summary = "plugin kernel '" + wanted + "' of " + path + ", run in an isolated worker";
  std::map<Format, int> index_of;
  for (std::size_t i = 0; i < table.size(); ++i) {
    const Entry& e = table[i];
    if (e.name != wanted) continue;
    const Format f = *parse_format(e.dtype);
    if (index_of.count(f))
      throw PluginError(who + ": kernel '" + wanted + "' is listed twice for " + e.dtype);
    index_of[f] = int(i);
    v.formats.push_back(f);
    v.accepts_strided = v.accepts_strided && e.accepts_strided != 0;
  }
  std::sort(v.formats.begin(), v.formats.end());
  if (const Variant* dnf = Registry::builtin().find_role(v.op, Role::dnf)) v.cost = dnf->cost;
  auto w = std::make_shared<Worker>(worker, path, options.timeout_s);
  w->name_of_ = [op = v.op](int i) {
    const OpInfo& oi = info(op);
    return std::size_t(i) < oi.inputs.size()
               ? std::string(oi.inputs[std::size_t(i)])
               : std::string(oi.outputs[std::size_t(i) - oi.inputs.size()]);
  };
  v.run = [w, index_of](const Problem& p, std::span<const TensorRef> in,
                        std::span<const TensorRef> out, const RunOptions& run_options) {
    const auto it = index_of.find(p.format);
    if (it == index_of.end())
      throw std::invalid_argument("plugin kernel does not run " + std::string(name(p.format)));
    w->call(it->second, p, in, out, run_options.schedule_seed);
  };
  v.simt_counters = [w] { return w->simt_counters(); };
  return v;
}

}  // namespace moacert::kernels::plugin
