#include "kernels/plugin/exchange.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "include/moacert/plugin.h"
#include "kernels/isolation/process.hpp"
#include "kernels/isolation/socket.hpp"
#include "kernels/plugin/abi.hpp"
#include "kernels/plugin/library.hpp"

namespace moacert::kernels::plugin {

namespace {

using Clock = std::chrono::steady_clock;
using isolation::describe_status;
using isolation::reap;
using isolation::signal_name;
using wire::canary;

}  // namespace

Worker::Worker(std::string worker, std::string lib, double timeout_s,
               std::function<std::string(int)> name_of)
    : name_of_(std::move(name_of)),
      worker_(std::move(worker)),
      lib_(std::move(lib)),
      timeout_s_(timeout_s) {}

Worker::~Worker() {
  stop(/*graceful=*/true);
}

wire::Timing Worker::call(int kernel, const Problem& p, std::span<const TensorRef> inputs,
                          std::span<const TensorRef> outputs, std::uint64_t schedule_seed,
                          Repeats repeats, int threads) {
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
  const std::string params = params_json(p, threads);
  std::snprintf(q.params, sizeof q.params, "%s", params.c_str());
  q.schedule_seed = schedule_seed;
  q.timed_warmup = repeats.untimed;
  q.timed_calls = std::min(repeats.timed, wire::kMaxTimedCalls);

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
  // A device fault (a device tensor's check, or the device's error, which
  // ends the worker: a CUDA error is sticky) stops the worker first, so the
  // next call starts a fresh one, whichever message the call fails with: an
  // emulator's out-of-bounds write is both a hazard and a device error, and
  // a worker left for dead failed the next call (a shrink step) with "the
  // worker exited with status 6 (before the call)" in its place.
  if (r.kind == wire::Reply::device_fault) stop(/*graceful=*/r.ends_worker != 0);
  // A hazard the SIMT emulator found is the call's fault, whatever the
  // plugin's run made of the exception (docs/simt.md#plugins).
  if (r.simt_report[0]) {
    const std::string text(r.simt_report, strnlen(r.simt_report, sizeof r.simt_report));
    const nlohmann::json report = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (report.is_object()) {
      if (report.contains("counters") && report["counters"].is_object())
        add_counters(report["counters"]);
      if (report.contains("hazard") && report["hazard"].is_object())
        throw KernelFault(report["hazard"].value("message", std::string("SIMT hazard")), false);
    }
  }
  // A device tensor's check (a write past it, or into an input), or the
  // device's error (the worker stopped above).
  if (r.kind == wire::Reply::device_fault)
    throw KernelFault(std::string(r.message, strnlen(r.message, sizeof r.message)), false);
  if (r.kind == wire::Reply::error_return && r.rc == MOACERT_UNSUPPORTED)
    throw Unsupported("refused the problem (MOACERT_UNSUPPORTED)" +
                      (r.message[0] ? std::string(": ") + r.message : std::string()));
  if (r.kind == wire::Reply::error_return) {
    throw KernelFault(
        "returned " + std::to_string(r.rc) +
            (r.message[0] ? std::string(": ") + r.message : std::string(" (no message)")),
        false);
  }
  if (r.kind == wire::Reply::no_device_memory)
    throw DeviceOutOfMemory(std::string(r.message, strnlen(r.message, sizeof r.message)) +
                            " (the device's limit, not the kernel's fault)");
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
  return r.timing;
}

// The emulator's counters summed over the calls so far (empty: none).
std::string Worker::simt_counters() {
  std::lock_guard lock(counters_mutex_);
  return counters_.empty() ? std::string() : nlohmann::json(counters_).dump();
}

void Worker::start() {
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
void Worker::stop(bool graceful) {
  // Killed before its socket closes, as a Python worker is
  // (worker/connection.cpp): a dying worker has nothing to say about it.
  if (pid_ > 0 && !graceful) kill(pid_, SIGKILL);
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
  if (pid_ > 0) reap(pid_, Clock::now() + std::chrono::milliseconds(graceful ? 500 : 0));
  pid_ = -1;
}

void Worker::died(const std::string& context, const wire::Reply* fault,
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

wire::Reply Worker::exchange(const wire::Request& q, int memfd) {
  std::vector<std::string> names;
  // Tensor names for messages (inputs then outputs) come from the caller's
  // op; kept generic here as "input i"/"output i" when unknown.
  for (int i = 0; i < q.n_inputs + q.n_outputs; ++i) names.push_back(name_of_(i));
  const ssize_t sent = isolation::send_with_fd(sock_, &q, sizeof q, memfd);
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

void Worker::add_counters(const nlohmann::json& c) {
  std::lock_guard lock(counters_mutex_);
  for (auto it = c.begin(); it != c.end(); ++it)
    if (it.value().is_number_unsigned()) counters_[it.key()] += it.value().get<std::uint64_t>();
}

}  // namespace moacert::kernels::plugin
