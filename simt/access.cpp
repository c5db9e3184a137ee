// Every access the compiler instruments comes to on_access, which
// classifies the address (own stack, shared memory, a registered buffer,
// module static data, or nothing: out of bounds), counts it, and checks it
// against a per-byte shadow of the last writer and the last two readers.
// The hot path: its helpers stay in this file.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "simt/shadow_check.hpp"

namespace moacert::simt::detail {

Buffer* find_buffer(std::uintptr_t a) {
  if (runtime.buffer_hint < runtime.buffers.size()) {
    Buffer& b = runtime.buffers[runtime.buffer_hint];
    if (a >= b.lo && a < b.hi) return &b;
  }
  auto it = std::upper_bound(runtime.buffers.begin(), runtime.buffers.end(), a,
                             [](std::uintptr_t x, const Buffer& b) { return x < b.lo; });
  if (it == runtime.buffers.begin()) return nullptr;
  --it;
  if (a >= it->hi) return nullptr;
  runtime.buffer_hint = std::size_t(it - runtime.buffers.begin());
  return &*it;
}

namespace {

const Segment* find_segment(std::uintptr_t a) {
  auto it = std::upper_bound(runtime.segments.begin(), runtime.segments.end(), a,
                             [](std::uintptr_t x, const Segment& s) { return x < s.lo; });
  if (it == runtime.segments.begin()) return nullptr;
  --it;
  if (a >= it->hi) return nullptr;
  for (const Segment& r : runtime.relro)
    if (a >= r.lo && a < r.hi) return &r;
  return &*it;
}
std::string buffer_offset(const Buffer& b, std::uintptr_t a) {
  return "'" + b.counts.name + "'+" + std::to_string(a - b.lo);
}
std::string shared_offset(std::uintptr_t a) {
  const Launch& L = *runtime.launch;
  Dl_info info{};
  if (L.dynamic_lo && a >= L.dynamic_lo && a < L.dynamic_lo + kMaxDynamicShared)
    return "dynamic shared+" + std::to_string(a - L.dynamic_lo);
  std::string name = "static shared";
  // The variable that holds it, by the module's symbols (shared_variables.cpp).
  const std::vector<SharedVariable>& vars = L.shared_variables;
  auto above = std::upper_bound(vars.begin(), vars.end(), a,
                                [](std::uintptr_t x, const SharedVariable& v) { return x < v.lo; });
  if (above != vars.begin() && a < (above - 1)->hi)
    return "shared '" + (above - 1)->name + "'+" + std::to_string(a - (above - 1)->lo);
  if (dladdr(reinterpret_cast<void*>(a), &info) && info.dli_sname && info.dli_saddr)
    return "shared " + std::string(info.dli_sname) + "+" +
           std::to_string(a - reinterpret_cast<std::uintptr_t>(info.dli_saddr));
  return name + "+" + std::to_string(a - L.shared_lo);
}

std::string hex_address(std::uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
  return buf;
}

// An offset from a buffer's first byte, signed: 'y'+4, 'y'-8.
std::string signed_offset(const std::string& name, std::uintptr_t lo, std::uintptr_t a) {
  std::string s = "'";
  s.append(name).append(a >= lo ? "'+" : "'-");
  s.append(std::to_string(a >= lo ? a - lo : lo - a));
  return s;
}

// The buffer nearest to the access [a, a + bytes) (the least gap between
// the two; 0 where they overlap), or null when none is registered.
const Buffer* nearest_buffer(std::uintptr_t a, std::size_t bytes) {
  const Buffer* best = nullptr;
  std::uint64_t best_gap = UINT64_MAX;
  for (const Buffer& b : runtime.buffers) {
    const std::uint64_t gap = a >= b.hi ? a - b.hi : (a + bytes <= b.lo ? b.lo - (a + bytes) : 0);
    if (gap < best_gap) best = &b, best_gap = gap;
  }
  return best;
}

// An access in no buffer, in the terms of the nearest one: its offsets from
// that buffer's first byte and which side of it they lie on. The bounds are
// the buffer's own bytes (a bounded buffer's guards are not its own).
std::string out_of_bounds_text(std::uintptr_t a, std::size_t bytes, const std::string& head,
                               std::uint64_t where) {
  const Buffer* b = nearest_buffer(a, bytes);
  if (!b)
    return head + hex_address(a) + " (" + describe_where(where) +
           "): no buffer is registered, in no tensor or buffer the launch was given";
  const std::string size = "'" + b->counts.name + "' (" + std::to_string(b->hi - b->lo) + " bytes)";
  const std::string side = a >= b->hi           ? "past the end of " + size
                           : a + bytes <= b->lo ? "before the start of " + size
                                                : "across the end of " + size;
  const auto first = std::int64_t(a - b->lo);
  return head + signed_offset(b->counts.name, b->lo, a) + " (" + describe_where(where) +
         "): " + side + ", its bytes " + std::to_string(first) + ".." +
         std::to_string(first + std::int64_t(bytes) - 1) +
         ", in no tensor or buffer the launch was given";
}

// Whether the page of `a` is mapped in this process (mincore fails with
// ENOMEM on an unmapped one).
bool mapped(std::uintptr_t a) {
  static const std::uintptr_t page = std::uintptr_t(sysconf(_SC_PAGESIZE));
  unsigned char resident = 0;
  return mincore(reinterpret_cast<void*>(a & ~(page - 1)), 1, &resident) == 0;
}

const char* verb(Access k) {
  return k == Access::read ? "reads" : (k == Access::write ? "writes" : "atomically updates");
}

// The per-buffer counters of the current launch that `a` hits: a
// registered buffer's (zeroed on its first access in the launch), else the
// module data's. Atomic function calls are counted by atomic_access: their
// access, like a std::atomic one, is neither a load nor a store.
BufferCounters& buffer_counts(Buffer* b) {
  Launch& L = *runtime.launch;
  if (!b) return L.module_data;
  if (b->counted_in != L.launch_gen) {
    b->counted_in = L.launch_gen;
    const std::string name = std::move(b->counts.name);
    b->counts = BufferCounters{name};
    L.touched.push_back(std::size_t(b - runtime.buffers.data()));
  }
  return b->counts;
}
// An access that lands in no buffer, shared memory, stack or module data:
// host memory where the launch works on device memory alone (no buffer of
// host memory is registered, and the address is mapped outside the device's
// range), else out of bounds of the nearest buffer.
[[noreturn]] void outside(std::uintptr_t a, std::size_t bytes, Access kind, std::uint64_t where) {
  const std::string head =
      me_name(*tls_current) + " " + verb(kind) + " " + std::to_string(bytes) + " bytes at ";
  if (!runtime.device.holds(a) && runtime.device.hi && runtime.host_buffers == 0 && mapped(a))
    hazard("host memory", head + hex_address(a) + " (" + describe_where(where) +
                              "): host memory, not device memory (no cudaMalloc allocation "
                              "holds it), which a kernel cannot dereference");
  hazard("out of bounds", out_of_bounds_text(a, bytes, head, where));
}

// Static data of a loaded module handed to the kernel as a pointer: host
// memory, since the emulator has no cudaGetSymbolAddress (a __device__
// variable is reached by its name, never through an argument).
void check_host_arguments(std::uintptr_t a, std::size_t bytes, Access kind, std::uint64_t where) {
  for (const Launch::HostArgument& h : runtime.launch->host_arguments)
    if (a < h.hi && a + bytes > h.lo)
      hazard("host memory",
             me_name(*tls_current) + " " + verb(kind) + " " + std::to_string(bytes) + " bytes at " +
                 signed_offset(h.name, h.lo, a) + " (" + describe_where(where) +
                 "): host memory, not device memory: static data of a loaded module, handed to "
                 "the kernel as its argument " +
                 std::to_string(h.argument) + ", which a kernel cannot dereference");
}

// Dynamic shared memory is the launch's shared_bytes, not the arena the
// module defines (227 KiB, the most any launch may ask for).
[[noreturn]] void past_dynamic_shared(std::uintptr_t a, std::size_t bytes, Access kind,
                                      std::uint64_t where) {
  const Launch& L = *runtime.launch;
  const std::uint64_t first = a - L.dynamic_lo;
  hazard("out of bounds", me_name(*tls_current) + " " + verb(kind) + " " + std::to_string(bytes) +
                              " bytes at dynamic shared+" + std::to_string(first) + " (" +
                              describe_where(where) + "): past the launch's " +
                              std::to_string(L.shared_bytes) +
                              " bytes of dynamic shared memory (its shared_bytes), its bytes " +
                              std::to_string(first) + ".." + std::to_string(first + bytes - 1));
}

// Whether [a, a + bytes) lies inside one of the launch's static __shared__
// variables (the hot path: the last one found is tried first).
bool inside_a_shared_variable(Launch& L, std::uintptr_t a, std::size_t bytes) {
  const std::vector<SharedVariable>& vars = L.shared_variables;
  if (L.shared_variable_hint < vars.size()) {
    const SharedVariable& v = vars[L.shared_variable_hint];
    if (a >= v.lo && a + bytes <= v.hi) return true;
  }
  auto it = std::upper_bound(vars.begin(), vars.end(), a,
                             [](std::uintptr_t x, const SharedVariable& v) { return x < v.lo; });
  if (it == vars.begin()) return false;
  --it;
  L.shared_variable_hint = std::size_t(it - vars.begin());
  return a + bytes <= it->hi;
}

}  // namespace

[[noreturn]] void race(bool shared, std::uintptr_t a, std::size_t bytes, Access kind,
                       std::uint64_t where, const Record& other, bool other_wrote) {
  const Fiber& me = *tls_current;
  std::string msg = me_name(me) + " " + verb(kind) + " " + std::to_string(bytes) + " bytes at " +
                    (shared ? shared_offset(a) : buffer_offset(*find_buffer(a), a)) + " (" +
                    describe_where(where) + "), and " + thread_name(other.thread - 1) + " " +
                    (other.atomic ? "atomically updated" : (other_wrote ? "wrote" : "read")) +
                    " it (" + describe_where(other.where) + ")";
  const std::uint32_t other_block = (other.thread - 1) / runtime.launch->block_threads;
  msg += other_block == runtime.launch->block_linear ? " in the same barrier interval"
                                                     : ", unordered: blocks of a launch";
  hazard(shared ? "shared race" : "global race", msg);
}

[[noreturn]] void uninitialised_read(std::uintptr_t a, std::size_t bytes, Access kind,
                                     std::uint64_t where) {
  hazard("uninitialised shared read",
         me_name(*tls_current) + " " + verb(kind) + " " + std::to_string(bytes) + " bytes at " +
             shared_offset(a) + " (" + describe_where(where) + "), never written in this block");
}

void on_aligned_access(const void* address, std::size_t bytes, Access kind, const void* pc) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  Fiber* me = tls_current;
  if (me && (a & (bytes - 1)) != 0) {
    const Launch& L = *runtime.launch;
    if (a < L.stacks_lo || a >= L.stacks_hi) {
      const bool shared = a >= L.shared_lo && a < L.shared_hi;
      const Buffer* b = shared ? nullptr : find_buffer(a);
      hazard("misaligned access", me_name(*me) + " " + verb(kind) + " " + std::to_string(bytes) +
                                      " bytes at " +
                                      (shared ? shared_offset(a)
                                       : b    ? buffer_offset(*b, a)
                                              : hex_address(a)) +
                                      " (" + describe_where(reinterpret_cast<std::uint64_t>(pc)) +
                                      "): misaligned address, not a multiple of " +
                                      std::to_string(bytes) + " (a GPU requires an access of " +
                                      std::to_string(bytes) + " bytes to be aligned to them)");
    }
  }
  on_access(address, bytes, kind, pc);
}

void atomic_access(void* address, std::size_t bytes, Counters::Atomic kind, Site site) {
  Fiber* me = tls_current;
  if (!me) return;
  Launch& L = *runtime.launch;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  const bool shared = a >= L.shared_lo && a < L.shared_hi;
  ++L.counters.atomics[shared ? Counters::shared : Counters::global][kind];
  if (!shared) {
    Buffer* b = find_buffer(a);
    ++buffer_counts(b && a + bytes <= b->hi ? b : nullptr).atomics;
  }
  on_access(address, bytes, Access::atomic, reinterpret_cast<const void*>(intern(site)));
  yield();
}

void fence() {}

void record_shared_write(std::uintptr_t a, std::size_t bytes, std::uint64_t where) {
  const Launch& L = *runtime.launch;
  check(runtime.shared_shadow.data(), a - L.shared_lo, bytes, L.block_gen, true, a, bytes,
        Access::write, where);
}

void on_access(const void* address, std::size_t bytes, Access kind, const void* pc) {
  Fiber* me = tls_current;
  if (!me || !runtime.settings.options.check_accesses) return;
  Launch& L = *runtime.launch;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  if (a >= L.stacks_lo && a < L.stacks_hi) return;  // a thread's locals
  const auto where = reinterpret_cast<std::uint64_t>(pc);
  if (a >= L.shared_lo && a + bytes <= L.shared_hi) {
    const bool dynamic =
        L.dynamic_lo && a + bytes > L.dynamic_lo && a < L.dynamic_lo + kMaxDynamicShared;
    if (dynamic && a + bytes > L.dynamic_lo + L.shared_bytes)
      past_dynamic_shared(a, bytes, kind, where);
    if (!dynamic && !L.shared_variables.empty() && !inside_a_shared_variable(L, a, bytes))
      past_shared_variable(a, bytes, kind, where);
    if (!L.copies.empty()) check_async_copies(a, bytes, kind, true, where);
    count(true, kind, bytes);
    check(runtime.shared_shadow.data(), a - L.shared_lo, bytes, L.block_gen, true, a, bytes, kind,
          where);
  } else if (Buffer* b = find_buffer(a); b && a + bytes <= b->hi) {
    if (!L.copies.empty() && kind != Access::read) check_async_copies(a, bytes, kind, false, where);
    count(false, kind, bytes);
    count_in(buffer_counts(b), kind, bytes);
    if (b->shadow.size() < b->hi - b->lo) b->shadow = shadow_for(b->hi - b->lo);
    check(b->shadow.data(), a - b->lo, bytes, L.launch_gen, false, a, bytes, kind, where);
  } else if (const Segment* seg = b ? nullptr : find_segment(a)) {
    if (!L.host_arguments.empty()) check_host_arguments(a, bytes, kind, where);
    if (seg->writable) {
      count(false, kind, bytes);
      count_in(buffer_counts(nullptr), kind, bytes);
    }
  } else {
    outside(a, bytes, kind, where);
  }
  if (runtime.settings.options.yield_every_accesses &&
      ++me->accesses % runtime.settings.options.yield_every_accesses == 0)
    yield();
}

}  // namespace moacert::simt::detail
