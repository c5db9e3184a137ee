// Fiber stacks: one mapping per launch size, each stack below a guard page,
// and the SIGSEGV handler that names a fault in a guard page as the
// overflow of a kernel thread's stack, and one in device memory outside a
// launch or a runtime call as a host access to device memory.
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "simt/state.hpp"

namespace moacert::simt::detail {

void StackPool::ensure(std::size_t n, std::size_t bytes) {
  page = std::size_t(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  if (base && n <= count && bytes == stack_bytes) return;
  if (base) munmap(base, slot_bytes * count);
  stack_bytes = bytes;
  slot_bytes = bytes + page;
  count = std::max(n, count);
  void* p = mmap(nullptr, slot_bytes * count, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base = static_cast<char*>(p);
  for (std::size_t i = 0; i < count; ++i) mprotect(base + i * slot_bytes, page, PROT_NONE);
}

namespace {

// Whether the faulting access wrote (x86-64: the page fault's error code);
// -1 where the platform does not say.
int faulting_write(void* context) {
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  return uc && (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
  (void)context;
  return -1;
#endif
}

// Host code touched device memory (the range is PROT_NONE outside launches
// and runtime calls): names the tensor, from the registered buffers and the
// allocations, reading them only (no allocation in a signal handler).
void host_access(std::uintptr_t a, void* context) {
  const int wrote = faulting_write(context);
  const char* verb = wrote < 0 ? "touches" : (wrote ? "writes" : "reads");
  const Buffer* in = nullptr;
  for (const Buffer& b : runtime.buffers)
    if (a >= b.lo && a < b.hi) in = &b;
  if (in) {
    std::snprintf(runtime.fault_message, sizeof runtime.fault_message,
                  "moacert simt: host access to device memory: host code %s '%s'+%zu, outside "
                  "every kernel and runtime call (a GPU faults: copy it with cudaMemcpy)",
                  verb, in->counts.name.c_str(), std::size_t(a - in->lo));
  } else {
    std::snprintf(runtime.fault_message, sizeof runtime.fault_message,
                  "moacert simt: host access to device memory: host code %s %p, in no tensor or "
                  "buffer, outside every kernel and runtime call (a GPU faults)",
                  verb, reinterpret_cast<void*>(a));
  }
  (void)!write(STDERR_FILENO, runtime.fault_message, std::strlen(runtime.fault_message));
  (void)!write(STDERR_FILENO, "\n", 1);
}

void on_segv(int signo, siginfo_t* info, void* context) {
  const auto a = reinterpret_cast<std::uintptr_t>(info ? info->si_addr : nullptr);
  if (runtime.device.holds(a) && runtime.device.open == 0) host_access(a, context);
  if (runtime.stacks.guard_slot(a) >= 0 && runtime.launch && tls_current) {
    const Fiber& f = *tls_current;
    const uint3 b = runtime.launch->block_idx;
    std::snprintf(
        runtime.fault_message, sizeof runtime.fault_message,
        "moacert simt: stack overflow in kernel %s (block (%u,%u,%u), thread (%u,%u,%u)): "
        "its fiber stack of %zu bytes is exhausted (set MOACERT_SIMT_STACK_BYTES or "
        "moacert::simt::Options::stack_bytes)",
        runtime.launch->kernel, b.x, b.y, b.z, f.tid.x, f.tid.y, f.tid.z,
        runtime.stacks.stack_bytes);
    const ssize_t n =
        write(STDERR_FILENO, runtime.fault_message, std::strlen(runtime.fault_message));
    (void)n;
    (void)!write(STDERR_FILENO, "\n", 1);
  }
  if (runtime.previous_segv.sa_flags & SA_SIGINFO) {
    if (runtime.previous_segv.sa_sigaction)
      return runtime.previous_segv.sa_sigaction(signo, info, context);
  } else if (runtime.previous_segv.sa_handler != SIG_DFL &&
             runtime.previous_segv.sa_handler != SIG_IGN) {
    return runtime.previous_segv.sa_handler(signo);
  }
  signal(signo, SIG_DFL);  // the faulting instruction runs again and kills the process
}

}  // namespace

void install_fault_handler() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    static char alt[1 << 16];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &runtime.previous_segv);
}

}  // namespace moacert::simt::detail
