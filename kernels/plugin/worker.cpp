// moacert-plugin-worker: the process in which an untrusted plugin kernel
// runs (docs/plugins.md). moacert starts it; a crash, a hang or a stray
// write here costs this process only, and moacert reports it as a
// counterexample.
//
//   moacert-plugin-worker list FD LIB        writes LIB's kernel table to FD
//   moacert-plugin-worker serve FD PPID LIB  answers wire::Requests on FD
//
// Kept small and free of moacert's libraries: it starts quickly, and after
// a failure it is simply started again.
#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "include/moacert/plugin.h"
#include "kernels/plugin/device_tensors.hpp"
#include "kernels/plugin/protocol.hpp"

namespace wire = moacert::kernels::plugin::wire;
namespace device = moacert::kernels::plugin::device;

namespace {

using KernelsFn = const moacert_kernel* (*)(int*, int*);

// The SIMT emulator's C entry points (include/moacert/simt.h), found in a
// plugin built against it: the call's tensors are its buffers (out of
// bounds is judged against them), the request's seed its schedule, and
// its report (counters, first hazard) goes back in the reply.
struct Simt {
  void (*register_buffer)(const void*, std::size_t, const char*) = nullptr;
  void (*unregister_buffer)(const void*) = nullptr;
  void (*set_schedule_seed)(std::uint64_t) = nullptr;
  std::size_t (*take_report)(char*, std::size_t) = nullptr;
  const char* (*fault_message)() = nullptr;
  void (*call_returns)(void* stream) = nullptr;
};
Simt g_simt;
void* g_handle = nullptr;  // the plugin's, for its CUDA runtime (device tensors)
// That runtime, found on a `cuda` kernel's first call.
device::Runtime g_device;
bool g_device_looked = false;

template <class F>
void find(void* h, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(h, name));
}

// Writes all of `s` to `fd` (a pipe).
void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += std::size_t(n);
  }
}

// A string from the plugin, printable on one line of the table.
std::string field(const char* s) {
  if (!s) return "(null)";
  std::string out;
  for (const char* p = s; *p && out.size() < 200; ++p)
    out += (static_cast<unsigned char>(*p) < 0x20 || *p == 0x7f) ? '?' : *p;
  return out;
}

const moacert_kernel* open_library(const char* lib, int fd_for_errors, int* count, int* abi) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    write_all(fd_for_errors, std::string("error dlopen ") + field(e) + "\n");
    return nullptr;
  }
  g_handle = h;
  dlerror();
  find(h, "moacert_simt_register_buffer", g_simt.register_buffer);
  find(h, "moacert_simt_unregister_buffer", g_simt.unregister_buffer);
  find(h, "moacert_simt_set_schedule_seed", g_simt.set_schedule_seed);
  find(h, "moacert_simt_take_report", g_simt.take_report);
  find(h, "moacert_simt_fault_message", g_simt.fault_message);
  find(h, "moacert_simt_call_returns", g_simt.call_returns);
  dlerror();
  auto fn = reinterpret_cast<KernelsFn>(dlsym(h, "moacert_plugin_kernels"));
  if (!fn) {
    write_all(fd_for_errors, "error nosymbol\n");
    return nullptr;
  }
  *count = -1;
  *abi = -1;
  const moacert_kernel* table = fn(count, abi);
  if (!table && *count != 0) {
    // A library that cannot serve (a dependency of the wrong version, say)
    // may say why through moacert_plugin_error (docs/design.md#plugin-abi).
    using ErrorFn = const char* (*)();
    const auto why = reinterpret_cast<ErrorFn>(dlsym(h, "moacert_plugin_error"));
    const char* reason = why ? why() : nullptr;
    write_all(fd_for_errors,
              std::string("error notable") + (reason && *reason ? " " + field(reason) : "") + "\n");
    return nullptr;
  }
  return table;
}

// One entry of the table, whichever ABI laid it out: ABI 1's has no
// envelope and no device, ABI 2's no arithmetic, ABI 3's no conventions.
struct Kernel {
  const char *op = nullptr, *name = nullptr, *dtype = nullptr;
  int accepts_strided = 0;
  decltype(moacert_kernel::run) run = nullptr;
  const moacert_envelope* envelope = nullptr;
  const char* device = nullptr;
  const char* arithmetic = nullptr;
  const char *outputs = nullptr, *causal_alignment = nullptr, *params = nullptr;
  const char* tensor_formats = nullptr;
  int deterministic = 0;
};

bool speaks(int abi) {
  return abi >= 1 && abi <= MOACERT_PLUGIN_ABI;
}

// Entry i of a table of ABI `abi` (speaks(abi)).
Kernel entry(const void* table, int abi, int i) {
  if (abi == 1) {
    const moacert_kernel_v1& k = static_cast<const moacert_kernel_v1*>(table)[i];
    return {k.op, k.name, k.dtype, k.accepts_strided, k.run};
  }
  if (abi == 2) {
    const moacert_kernel_v2& k = static_cast<const moacert_kernel_v2*>(table)[i];
    return {k.op, k.name, k.dtype, k.accepts_strided, k.run, k.envelope, k.device};
  }
  if (abi == 3) {
    const moacert_kernel_v3& k = static_cast<const moacert_kernel_v3*>(table)[i];
    return {k.op, k.name, k.dtype, k.accepts_strided, k.run, k.envelope, k.device, k.arithmetic};
  }
  const moacert_kernel& k = static_cast<const moacert_kernel*>(table)[i];
  return {k.op,       k.name,           k.dtype,        k.accepts_strided, k.run,
          k.envelope, k.device,         k.arithmetic,   k.outputs,         k.causal_alignment,
          k.params,   k.tensor_formats, k.deterministic};
}

bool is_cuda(const Kernel& k) {
  return k.device && std::strcmp(k.device, "cuda") == 0;
}

constexpr const char* kNoRuntime =
    "its library links no CUDA runtime (neither CUDA's nor, built with moacert-simt-c++, the "
    "emulator's)";

// "ok" when the plugin's CUDA runtime is found and allocates, else why not.
std::string device_probe() {
  const device::Runtime rt = device::find_runtime(g_handle);
  if (!rt.found()) return kNoRuntime;
  if (const char* why = rt.settings_error ? rt.settings_error() : nullptr; why && *why) return why;
  void* p = nullptr;
  if (const int e = rt.malloc(&p, 1); e != 0)
    return "the device cannot allocate: " + rt.error_text(e);
  rt.free(p);
  return "ok";
}

// `list`: the ABI version, then per kernel one line, tab-separated, and
// one line per axis of its envelope:
//   kernel OP NAME DTYPE STRIDED HAS_RUN DEVICE REFUSES N_AXES ARITHMETIC
//          OUTPUTS CAUSAL_ALIGNMENT PARAMS TENSOR_FORMATS   ("(null)" where not
//          declared) DETERMINISTIC
//   axis NAME MIN MAX MULTIPLE V1,V2,...   (a value list, or "-")
// and, when a kernel's device is cuda, last, whether device tensors can be
// had (device_tensors.hpp): "device ok", or "device WHY".
int list(int fd, const char* lib) {
  int count = 0, abi = 0;
  const moacert_kernel* table = open_library(lib, fd, &count, &abi);
  if (!table && count != 0) return 3;
  std::string out = "abi " + std::to_string(abi) + " count " + std::to_string(count) + "\n";
  // The table is only read when the version is one we speak: another
  // version's struct may be laid out differently.
  if (speaks(abi) && count > 0 && count <= 1000) {
    for (int i = 0; i < count; ++i) {
      const Kernel k = entry(table, abi, i);
      const moacert_envelope* e = k.envelope;
      const int n_axes = e && e->axes ? e->n_axes : 0;
      out += "kernel\t" + field(k.op) + "\t" + field(k.name) + "\t" + field(k.dtype) + "\t" +
             std::to_string(k.accepts_strided) + "\t" + (k.run ? "1" : "0") + "\t" +
             (k.device ? field(k.device) : "cpu") + "\t" + std::to_string(e ? e->refuses : 0) +
             "\t" + std::to_string(n_axes) + "\t" +
             (k.arithmetic ? field(k.arithmetic) : "standard") + "\t" + field(k.outputs) + "\t" +
             field(k.causal_alignment) + "\t" + field(k.params) + "\t" + field(k.tensor_formats) +
             "\t" + std::to_string(k.deterministic) + "\n";
      for (int a = 0; a < n_axes && a < wire::kMaxAxes; ++a) {
        const moacert_axis& x = e->axes[a];
        std::string values;
        for (int v = 0; x.values && v < x.n_values && v < wire::kMaxValues; ++v) {
          if (v) values += ',';
          values += std::to_string(x.values[v]);
        }
        // No list: "-"; a list given empty stays "" and one too long is
        // "many" (the loader refuses both).
        if (!x.values) values.assign(1, '-');  // (not = "-": GCC 12 -Wrestrict false positive)
        if (x.values && x.n_values > wire::kMaxValues) values = "many";
        out += "axis\t" + field(x.name) + "\t" + std::to_string(x.min) + "\t" +
               std::to_string(x.max) + "\t" + std::to_string(x.multiple) + "\t" + values + "\n";
      }
    }
  }
  if (speaks(abi) && count > 0 && count <= 1000) {
    bool cuda = false;
    for (int i = 0; i < count; ++i) cuda = cuda || is_cuda(entry(table, abi, i));
    if (cuda) {
      out += "device\t";
      out += field(device_probe().c_str());
      out += '\n';
    }
  }
  write_all(fd, out);
  return 0;
}

// ---- serve: the address ranges of the current call, for the fault handler.
struct Range {
  std::uintptr_t guard_lo = 0, lo = 0, hi = 0, guard_hi = 0;  // guard, mapping, guard
  bool output = false;
};
Range g_ranges[wire::kMaxTensors];
const moacert_kernel* g_table = nullptr;  // the library's, of ABI g_abi
int g_abi = 0;
volatile int g_nranges = 0;
int g_fd = -1;

// Async-signal-safe: classifies the address and sends one Reply, then the
// signal takes its default action (SA_RESETHAND) when the handler returns
// and the instruction faults again, or is re-raised for signals that do
// not repeat.
void on_fault(int signo, siginfo_t* info, void* context) {
  wire::Reply r;
  r.kind = wire::Reply::fault;
  r.signo = signo;
  r.si_code = info ? info->si_code : 0;
  const std::uintptr_t a = info ? reinterpret_cast<std::uintptr_t>(info->si_addr) : 0;
  r.addr = a;
  if (signo == SIGSEGV || signo == SIGBUS) {
#if defined(__x86_64__)
    // Bit 1 of the page fault's error code: the access was a write.
    if (context && signo == SIGSEGV)
      r.write = (static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
    (void)context;
#endif
    for (int i = 0; i < g_nranges; ++i) {
      const Range& g = g_ranges[i];
      if (a >= g.guard_lo && a < g.lo)
        r.where = g.output ? wire::Where::before_output : wire::Where::near_input;
      else if (a >= g.lo && a < g.hi && !g.output)
        r.where = wire::Where::in_input;
      else if (a >= g.hi && a < g.guard_hi)
        r.where = g.output ? wire::Where::past_output : wire::Where::near_input;
      else
        continue;
      r.tensor = i;
      r.offset = std::int64_t(a) - std::int64_t(g.lo);
      break;
    }
  }
  // The emulator's handler ran first (it chains to this one) and may have
  // named the fault: a stack overflow in kernel K, block B, thread T.
  if (g_simt.fault_message) {
    const char* m = g_simt.fault_message();
    if (m && m[0]) std::snprintf(r.message, sizeof r.message, "%s", m);
  }
  if (g_fd >= 0) (void)!send(g_fd, &r, sizeof r, MSG_NOSIGNAL);
  raise(signo);
}

void install_fault_handlers() {
  static char stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = sizeof stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
    sigaction(s, &sa, nullptr);
}

// The bytes a tensor's elements span: 1 + sum (shape - 1) * stride elements.
std::size_t data_bytes(const wire::TensorDesc& t) {
  std::int64_t last = 0;
  for (int k = 0; k < t.ndim; ++k) {
    if (t.shape[k] == 0) return 0;
    last += (t.shape[k] - 1) * t.strides[k];
  }
  return std::size_t(last + 1) * ((t.bits + 7u) / 8u);
}

void reply_bad(int fd, const std::string& why) {
  wire::Reply r;
  r.kind = wire::Reply::bad_request;
  std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
  (void)!send(fd, &r, sizeof r, MSG_NOSIGNAL);
}

// Runs the request's kernel on `host` (its tensors in the memfd's
// mappings) and fills `r`: a `cuda` kernel on device copies of them
// (device_tensors.hpp), checked after the call.
void call(wire::Request& q, DLTensor* host, wire::Reply& r) {
  const Kernel k = entry(g_table, g_abi, q.kernel);
  const int nt = q.n_inputs + q.n_outputs;
  q.params[sizeof q.params - 1] = '\0';
  for (int i = 0; i < nt; ++i) q.tensors[i].name[sizeof q.tensors[i].name - 1] = '\0';
  std::string params = q.params;
  device::Runtime& runtime = g_device;
  std::optional<device::Tensors> on_device;
  DLTensor view[wire::kMaxTensors];
  for (int i = 0; i < nt; ++i) view[i] = host[i];
  if (is_cuda(k)) {
    if (!g_device_looked) runtime = device::find_runtime(g_handle);
    g_device_looked = true;
    if (!runtime.found()) {
      r.kind = wire::Reply::bad_request;
      std::snprintf(r.message, sizeof r.message, "%s: device cuda, but %s", field(k.name).c_str(),
                    kNoRuntime);
      return;
    }
    on_device.emplace(runtime);
    if (const std::string why = on_device->upload(q, host, view); !why.empty()) {
      r.kind =
          on_device->out_of_memory() ? wire::Reply::no_device_memory : wire::Reply::bad_request;
      std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
      return;
    }
    params = device::with_stream(params, runtime);
  }
  const DLTensor* in[wire::kMaxTensors];
  DLTensor* out[wire::kMaxTensors];
  for (int i = 0; i < q.n_inputs; ++i) in[i] = &view[i];
  for (int i = 0; i < q.n_outputs; ++i) out[i] = &view[q.n_inputs + i];
  if (g_simt.register_buffer) {
    if (g_simt.take_report) g_simt.take_report(nullptr, 0);  // forget earlier calls
    if (g_simt.set_schedule_seed) g_simt.set_schedule_seed(q.schedule_seed);
    // Device tensors are the runtime's allocations, registered by it.
    for (int i = 0; i < nt && !on_device; ++i)
      g_simt.register_buffer(view[i].data, data_bytes(q.tensors[i]), q.tensors[i].name);
  }
  g_nranges = nt;
  // bench: the same call repeated on the resident tensors, the last
  // `timed_calls` timed (a `cuda` kernel's launches by its runtime's events,
  // a `cpu` kernel's call by the host clock here, without the copies into
  // and out of the shared memory); the checks below follow the last.
  const bool timing = q.timed_calls > 0;
  const int timed = std::min(q.timed_calls, wire::kMaxTimedCalls);
  const int calls = timing ? std::max(0, q.timed_warmup) + timed : 1;
  std::optional<device::LaunchTimer> timer;
  if (timing && on_device) timer.emplace(runtime);
  using Clock = std::chrono::steady_clock;
  Clock::time_point host_start;
  for (int c = 0; c < calls; ++c) {
    const bool timed_call = timing && c >= calls - timed;
    if (timed_call && timer) timer->start();
    if (timed_call && !timer) host_start = Clock::now();
    r.rc = k.run(in, q.n_inputs, out, q.n_outputs, params.c_str(), r.message, sizeof r.message);
    if (timed_call && r.rc == 0) {
      const double seconds =
          timer ? timer->stop() : std::chrono::duration<double>(Clock::now() - host_start).count();
      if (seconds < 0) break;  // the device's error: finish() below names it
      r.timing.seconds[r.timing.calls++] = seconds;
    }
    if (r.rc != 0) break;
  }
  if (timing)
    std::snprintf(r.timing.clock, sizeof r.timing.clock, "%s",
                  timer ? timer->clock() : "host clock, in the worker");
  g_nranges = 0;
  if (g_simt.register_buffer) {
    for (int i = 0; i < nt && !on_device; ++i)
      if (g_simt.unregister_buffer) g_simt.unregister_buffer(view[i].data);
    // Before the worker synchronises (finish): the call's work must be
    // ordered before this point, on the stream it was handed.
    if (g_simt.call_returns) g_simt.call_returns(on_device ? runtime.stream : nullptr);
    if (g_simt.take_report) g_simt.take_report(r.simt_report, sizeof r.simt_report);
  }
  r.message[sizeof r.message - 1] = '\0';
  r.kind = r.rc == 0 ? wire::Reply::ok : wire::Reply::error_return;
  if (on_device) {
    bool sticky = false;
    if (const std::string why = on_device->finish(q, host, sticky); !why.empty()) {
      r.kind = wire::Reply::device_fault;
      r.ends_worker = sticky ? 1 : 0;
      std::snprintf(r.message, sizeof r.message, "%s", why.c_str());
    }
    if (timing) on_device->add_copy_times(r.timing);
  }
}

// ---- leaks: device memory a `cuda` kernel holds from call to call. The
// emulator counts its live allocations exactly (cudaMemGetInfo); on a GPU
// other processes and the allocator's pools count too, so there the check
// is compute-sanitizer's (--leak-check full), not the worker's.
struct Held {
  bool known = false;
  std::size_t after_first = 0;  // bytes the kernel holds after its first call here
  int calls = 0;                // its calls in this worker
};
Held g_held;

// The live allocations' bytes: the kernel's, once the call's tensors are freed.
std::size_t device_held() {
  std::size_t free = 0, total = 0;
  if (!g_device.mem_get_info || g_device.mem_get_info(&free, &total) != 0) return 0;
  return total - free;
}

// `call`, and for a `cuda` kernel on the emulator the device memory it
// holds after it: more than after its first call in this worker is a
// leak, `device memory grows by N bytes per call`, never the device's
// limit it would end in. A fresh worker runs its first such call twice
// (the first sets what the kernel holds after one call), so that a token
// of a leak replays there, and a workspace kept from call to call holds.
void call_checking_held(wire::Request& q, DLTensor* host, wire::Reply& r) {
  const bool check = is_cuda(entry(g_table, g_abi, q.kernel)) && q.timed_calls == 0;
  if (check && !g_held.known) {
    call(q, host, r);
    if (r.kind != wire::Reply::ok || !g_device.mem_get_info) return;
    g_held = {true, device_held(), 1};
    r = wire::Reply{};
  }
  call(q, host, r);
  if (!check || !g_held.known || r.kind != wire::Reply::ok) return;
  const int call_no = ++g_held.calls;
  const std::size_t now = device_held();
  if (now <= g_held.after_first) return;
  r.kind = wire::Reply::device_fault;  // the worker is stopped: the next call starts afresh
  std::snprintf(r.message, sizeof r.message,
                "device memory grows by %zu bytes per call: the kernel holds %zu bytes after "
                "call %d, %zu after its first (allocated and never freed)",
                (now - g_held.after_first) / std::size_t(call_no - 1), now, call_no,
                g_held.after_first);
}

int serve(int fd, pid_t parent, const char* lib) {
  // A backstop: if moacert dies without killing us, the kernel does.
  // (Tests switch it off, MOACERT_WORKER_NO_DEATHSIG, to prove that moacert
  // itself reaps every worker.)
  if (!std::getenv("MOACERT_WORKER_NO_DEATHSIG")) prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 4;
  dup2(STDERR_FILENO, STDOUT_FILENO);  // a plugin's prints must not mix into moacert's output
  int count = 0, abi = 0;
  const moacert_kernel* table = open_library(lib, STDERR_FILENO, &count, &abi);
  if (!table || !speaks(abi)) return 3;
  g_table = table;
  g_abi = abi;
  g_fd = fd;
  install_fault_handlers();
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  for (;;) {
    wire::Request q;
    char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{&q, sizeof q};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (n == 0) return 0;  // moacert closed the socket: done
    if (n < 0) {
      if (errno == EINTR) continue;
      return 5;
    }
    int memfd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        std::memcpy(&memfd, CMSG_DATA(c), sizeof memfd);
    const int nt = q.n_inputs + q.n_outputs;
    if (std::size_t(n) != sizeof q || q.magic != wire::kRequestMagic || memfd < 0 || q.kernel < 0 ||
        q.kernel >= count || q.n_inputs < 0 || q.n_outputs < 0 || nt > wire::kMaxTensors) {
      if (memfd >= 0) close(memfd);
      reply_bad(fd, "malformed request");
      continue;
    }
    // Map every tensor between two PROT_NONE guard pages.
    DLTensor dl[wire::kMaxTensors];
    void* reserved[wire::kMaxTensors] = {};
    std::size_t reserved_bytes[wire::kMaxTensors] = {};
    bool mapped = true;
    for (int i = 0; i < nt && mapped; ++i) {
      const wire::TensorDesc& t = q.tensors[i];
      if (t.ndim < 0 || t.ndim > wire::kMaxRank || t.region_bytes % page ||
          t.region_offset % page || t.region_offset + t.region_bytes > q.memfd_bytes) {
        mapped = false;
        break;
      }
      reserved_bytes[i] = t.region_bytes + 2 * page;
      void* base = mmap(nullptr, reserved_bytes[i], PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (base == MAP_FAILED) {
        mapped = false;
        break;
      }
      reserved[i] = base;
      char* data = static_cast<char*>(base) + page;
      if (t.region_bytes > 0 &&
          mmap(data, t.region_bytes, t.output ? PROT_READ | PROT_WRITE : PROT_READ,
               MAP_SHARED | MAP_FIXED, memfd, off_t(t.region_offset)) == MAP_FAILED) {
        mapped = false;
        break;
      }
      const auto lo = reinterpret_cast<std::uintptr_t>(data);
      g_ranges[i] = {lo - page, lo, lo + t.region_bytes, lo + t.region_bytes + page, t.output != 0};
      dl[i] = DLTensor{};
      dl[i].data = data + t.data_offset;
      dl[i].device = {kDLCPU, 0};
      dl[i].ndim = t.ndim;
      dl[i].dtype = {t.code, t.bits, 1};
      dl[i].shape = const_cast<std::int64_t*>(t.shape);
      dl[i].strides = const_cast<std::int64_t*>(t.strides);
      dl[i].byte_offset = 0;
    }
    close(memfd);
    wire::Reply r;
    if (!mapped) {
      r.kind = wire::Reply::bad_request;
      std::snprintf(r.message, sizeof r.message, "cannot map the tensors: %s",
                    std::strerror(errno));
    } else {
      call_checking_held(q, dl, r);
    }
    for (int i = 0; i < nt; ++i)
      if (reserved[i]) munmap(reserved[i], reserved_bytes[i]);
    if (send(fd, &r, sizeof r, MSG_NOSIGNAL) != ssize_t(sizeof r)) return 5;
    if (r.ends_worker) return 6;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "list") == 0) {
    const int fd = std::atoi(argv[2]);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    return list(fd, argv[3]);
  }
  if (argc == 5 && std::strcmp(argv[1], "serve") == 0)
    return serve(std::atoi(argv[2]), pid_t(std::atoi(argv[3])), argv[4]);
  std::fprintf(
      stderr, "moacert-plugin-worker: started by moacert only (list FD LIB | serve FD PPID LIB)\n");
  return 2;
}
