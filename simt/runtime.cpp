// The SIMT emulator (docs/simt.md): blocks of a launch run one at a time in
// a seeded order; the threads of a block are Boost.Context fibers on the
// launching OS thread, switched at synchronisation points in a seeded
// order. Every access the compiler instruments comes to on_access, which
// classifies the address (own stack, shared memory, a registered buffer,
// module static data, or nothing: out of bounds), counts it, and checks it
// against a per-byte shadow of the last writer and the last two readers.
#include "simt/runtime.hpp"

#include "include/moacert/splitmix64.hpp"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/context/fiber.hpp>
#if MOACERT_SIMT_HAVE_BACKTRACE
#include <backtrace.h>  // GCC's libbacktrace: file:line from the DWARF of -g
#endif

namespace ctx = boost::context;

namespace moacert::simt {

BufferCounters& BufferCounters::operator+=(const BufferCounters& o) {
  loads += o.loads;
  load_bytes += o.load_bytes;
  stores += o.stores;
  store_bytes += o.store_bytes;
  atomics += o.atomics;
  return *this;
}

Counters& Counters::operator+=(const Counters& o) {
  blocks += o.blocks;
  threads += o.threads;
  barriers += o.barriers;
  warp_ops += o.warp_ops;
  global_loads += o.global_loads;
  global_load_bytes += o.global_load_bytes;
  global_stores += o.global_stores;
  global_store_bytes += o.global_store_bytes;
  shared_loads += o.shared_loads;
  shared_load_bytes += o.shared_load_bytes;
  shared_stores += o.shared_stores;
  shared_store_bytes += o.shared_store_bytes;
  for (int s = 0; s < n_spaces; ++s)
    for (int k = 0; k < n_atomic_kinds; ++k) atomics[s][k] += o.atomics[s][k];
  for (const BufferCounters& b : o.buffers) {
    auto same = std::find_if(buffers.begin(), buffers.end(),
                             [&](const BufferCounters& kept) { return kept.name == b.name; });
    if (same == buffers.end())
      buffers.push_back(b);
    else
      *same += b;
  }
  return *this;
}

std::string Counters::json() const {
  static const char* const kinds[] = {"add", "max", "min", "exch", "cas"};
  std::string out;
  auto field = [&](const char* name, std::uint64_t v) {
    if (!out.empty()) out += ',';
    out += '"';
    out += name;
    out += "\":";
    out += std::to_string(v);
  };
  field("blocks", blocks);
  field("threads", threads);
  field("barriers", barriers);
  field("warp_ops", warp_ops);
  field("global_loads", global_loads);
  field("global_load_bytes", global_load_bytes);
  field("global_stores", global_stores);
  field("global_store_bytes", global_store_bytes);
  field("shared_loads", shared_loads);
  field("shared_load_bytes", shared_load_bytes);
  field("shared_stores", shared_stores);
  field("shared_store_bytes", shared_store_bytes);
  for (int s = 0; s < n_spaces; ++s)
    for (int k = 0; k < n_atomic_kinds; ++k) {
      const std::string name =
          std::string("atomic_") + kinds[k] + (s == global ? "_global" : "_shared");
      field(name.c_str(), atomics[s][k]);
    }
  return "{" + out + "}";
}

namespace detail {

thread_local Fiber* tls_current __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// ---- settings -------------------------------------------------------------
std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return (end && *end == '\0' && n > 0) ? std::size_t(n) : fallback;
}

struct Settings {
  Options options;
  std::uint64_t seed = 0;
  Settings() {
    options.stack_bytes = env_size("MOACERT_SIMT_STACK_BYTES", options.stack_bytes);
    options.dynamic_shared_limit = std::min(
        env_size("MOACERT_SIMT_DYNAMIC_SHARED", options.dynamic_shared_limit), kMaxDynamicShared);
    seed = env_size("MOACERT_SIMT_SEED", 0);
  }
};
Settings& settings() {
  static Settings s;
  return s;
}

// The schedule's seeded, platform-independent stream, and a draw below n.
struct Rng : SplitMix64 {
  std::size_t below(std::size_t n) { return std::size_t(next() % n); }
};

// ---- fiber stacks: one mapping per launch size, each stack below a guard
// page, so that an overflow faults on a page the signal handler recognises.
struct StackPool {
  char* base = nullptr;
  std::size_t slot_bytes = 0, stack_bytes = 0, count = 0, page = 0;
  void ensure(std::size_t n, std::size_t bytes) {
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
  char* lo(std::size_t i) const { return base + i * slot_bytes + page; }
  char* hi(std::size_t i) const { return base + (i + 1) * slot_bytes; }
  // The slot whose guard page holds `a`, or -1 (async-signal-safe).
  long guard_slot(std::uintptr_t a) const {
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    if (!base || a < b || a >= b + slot_bytes * count) return -1;
    const std::size_t i = (a - b) / slot_bytes;
    return (a - b) % slot_bytes < page ? long(i) : -1;
  }
};

// Boost.Context's StackAllocator concept over one slot of the pool.
struct SlotAllocator {
  char* lo;
  char* hi;
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = std::size_t(hi - lo);
    sc.sp = hi;
    return sc;
  }
  void deallocate(ctx::stack_context&) noexcept {}
};

// ---- sites: source locations of emulator calls, interned so that a shadow
// record holds one word: a return address (tagged 0) or a site index (1).
std::vector<Site> g_sites;
std::map<std::pair<const char*, unsigned>, std::uint64_t> g_site_index;
constexpr std::uint64_t kSiteTag = 1ull << 63;
std::uint64_t intern(Site s) {
  auto [it, fresh] = g_site_index.emplace(std::make_pair(s.file, s.line), g_sites.size());
  if (fresh) g_sites.push_back(s);
  return it->second | kSiteTag;
}
std::string describe_where(std::uint64_t w) {
  if (w & kSiteTag) {
    const Site& s = g_sites[w & ~kSiteTag];
    return std::string(s.file) + ":" + std::to_string(s.line);
  }
  const void* pc = reinterpret_cast<const void*>(w - 1);  // inside the call instruction
#if MOACERT_SIMT_HAVE_BACKTRACE
  static backtrace_state* state = backtrace_create_state(nullptr, 0, nullptr, nullptr);
  std::string file_line;
  // The innermost frame: with inlining, the line of the access itself.
  backtrace_pcinfo(
      state, reinterpret_cast<std::uintptr_t>(pc),
      [](void* data, std::uintptr_t, const char* file, int line, const char*) {
        auto* out = static_cast<std::string*>(data);
        if (file && out->empty()) *out = std::string(file) + ":" + std::to_string(line);
        return 1;
      },
      [](void*, const char*, int) {}, &file_line);
  if (!file_line.empty()) return file_line;
#endif
  Dl_info info{};
  if (dladdr(pc, &info) && info.dli_sname)
    return std::string(info.dli_sname) + "+" +
           std::to_string(reinterpret_cast<std::uintptr_t>(pc) -
                          reinterpret_cast<std::uintptr_t>(info.dli_saddr));
  char buf[32];
  std::snprintf(buf, sizeof buf, "pc %p", pc);
  return buf;
}

// ---- shadow memory --------------------------------------------------------
struct Record {
  std::uint32_t thread = 0;  // launch-wide thread number + 1; 0: none
  std::uint32_t epoch = 0;   // the block's barrier interval
  std::uint32_t warp_gen = 0;
  std::uint32_t atomic = 0;
  std::uint64_t where = 0;
};
struct ByteShadow {
  std::uint32_t gen = 0;  // the block (shared) or launch (global) it describes
  std::uint32_t written = 0;
  Record writer, reader, other_reader;
};

struct Buffer {
  std::uintptr_t lo, hi;
  std::uint64_t serial;            // registration order, the order of Counters::buffers
  BufferCounters counts;           // its name, and its traffic in launch `counted_in`
  std::uint32_t counted_in = 0;    // 0: not touched by the current launch
  std::vector<ByteShadow> shadow;  // sized on the first checked access
};

}  // namespace

// ---- the state of a launch ------------------------------------------------
enum class State : std::uint8_t { runnable, barrier, warp, exited };

struct Fiber {
  uint3 tid;
  std::uint32_t linear = 0, warp = 0, lane = 0;
  State state = State::runnable;
  ctx::fiber context;
  // At a barrier or a warp collective: what this thread waits in.
  std::uint64_t wait_where = 0;
  WarpOp op{};
  unsigned mask = 0;
  std::uint64_t value = 0, result = 0;
  int arg = 0, width = 32;
  std::uint32_t accesses = 0;
};

namespace {

struct Warp {
  std::uint32_t gen = 0;       // completed collectives
  std::uint32_t full_gen = 0;  // the last one that included every lane
  unsigned lanes = 0;          // the lanes that exist
  unsigned pending = 0;        // lanes waiting in a collective
  std::uint32_t pair_gen[32][32] = {};
};

struct Launch {
  const char* kernel = "";
  dim3 grid, block;
  std::size_t shared_bytes = 0;
  std::uint32_t block_threads = 0;
  std::uint32_t launch_gen = 0, block_gen = 0;
  uint3 block_idx{};
  std::uint32_t block_linear = 0;
  std::uintptr_t shared_lo = 0, shared_hi = 0;  // the module's TLS block
  std::uintptr_t dynamic_lo = 0;
  std::uintptr_t stacks_lo = 0, stacks_hi = 0;
  std::vector<std::unique_ptr<Fiber>> fibers;
  std::vector<Fiber*> runnable;
  std::vector<Warp> warps;
  std::uint32_t live = 0, exited = 0;
  std::uint32_t epoch = 0;
  // the barrier being gathered
  std::uint32_t arrived = 0;
  int reduce_kind = 0;
  std::int64_t predicate_sum = 0;
  std::uint64_t barrier_where = 0;
  int barrier_result = 0;
  Counters counters;
  std::vector<std::size_t> touched;  // the g_buffers the launch accessed
  BufferCounters module_data{kModuleData};
  bool failed = false;
  std::string hazard_kind, hazard_message;
  std::exception_ptr kernel_exception;
  Rng schedule{{0}};
};

std::recursive_mutex g_mutex;  // one launch at a time per process
Launch* g_launch = nullptr;
ctx::fiber g_scheduler;  // the scheduler's continuation while a fiber runs
StackPool g_stacks;
std::vector<ByteShadow> g_shared_shadow;
std::vector<Buffer> g_buffers;  // sorted by lo
std::size_t g_buffer_hint = 0;
std::uint32_t g_launch_serial = 0, g_block_serial = 0;
cudaError_t g_last_error = cudaSuccess;
Counters g_last_counters, g_report_counters;
std::uint64_t g_report_launches = 0;
std::string g_report_hazard_kind, g_report_hazard;
char g_fault_message[1024];
std::uint64_t g_malloc_count = 0, g_buffer_serial = 0;

std::string xyz(uint3 v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", v.x, v.y, v.z);
  return buf;
}
uint3 unflatten(std::uint32_t i, dim3 d) {
  return {i % d.x, i / d.x % d.y, i / (d.x * d.y)};
}

std::string thread_name(std::uint32_t launch_thread) {
  const Launch& L = *g_launch;
  const std::uint32_t block = launch_thread / L.block_threads;
  return "thread " + xyz(unflatten(launch_thread % L.block_threads, L.block)) + " of block " +
         xyz(unflatten(block, L.grid));
}
std::string me_name(const Fiber& f) {
  return "thread " + xyz(f.tid) + " of block " + xyz(g_launch->block_idx);
}

// Switches from the running fiber to the scheduler; returns when resumed.
void switch_out() {
  g_scheduler = std::move(g_scheduler).resume();
}

// Records the launch's first hazard; the fiber then never runs again (the
// scheduler unwinds the block's fibers and throws).
// Thrown where the scheduler itself finds a hazard (no fiber to park).
struct SchedulerHazard {};
[[noreturn]] void hazard(const std::string& kind, const std::string& message) {
  Launch& L = *g_launch;
  if (!L.failed) {
    L.failed = true;
    L.hazard_kind = kind;
    L.hazard_message = "moacert simt: " + kind + " in kernel " + L.kernel + ": " + message;
  }
  if (!tls_current) throw SchedulerHazard{};
  for (;;) switch_out();
}

void make_runnable(Fiber* f) {
  f->state = State::runnable;
  g_launch->runnable.push_back(f);
}
// A synchronisation point: another runnable fiber may run first.
void yield() {
  make_runnable(tls_current);
  switch_out();
}

// ---- address classification -------------------------------------------
Buffer* find_buffer(std::uintptr_t a) {
  if (g_buffer_hint < g_buffers.size()) {
    Buffer& b = g_buffers[g_buffer_hint];
    if (a >= b.lo && a < b.hi) return &b;
  }
  auto it = std::upper_bound(g_buffers.begin(), g_buffers.end(), a,
                             [](std::uintptr_t x, const Buffer& b) { return x < b.lo; });
  if (it == g_buffers.begin()) return nullptr;
  --it;
  if (a >= it->hi) return nullptr;
  g_buffer_hint = std::size_t(it - g_buffers.begin());
  return &*it;
}

// The loaded modules' segments, gathered at each launch: a kernel may read
// their static data. A writable one holds `__device__`/`__constant__`
// variables (global memory: counted, not checked); a read-only one holds
// literals and the tables of source locations (not memory of the kernel's
// algorithm: neither counted nor checked).
struct Segment {
  std::uintptr_t lo, hi;
  bool writable;
};
std::vector<Segment> g_segments, g_relro;
void gather_segments() {
  g_segments.clear();
  g_relro.clear();
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void*) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD)
            g_segments.push_back({lo, lo + ph.p_memsz, (ph.p_flags & PF_W) != 0});
          else if (ph.p_type == PT_GNU_RELRO)  // read-only once relocated
            g_relro.push_back({lo, lo + ph.p_memsz, false});
        }
        return 0;
      },
      nullptr);
  std::sort(g_segments.begin(), g_segments.end(),
            [](const Segment& x, const Segment& y) { return x.lo < y.lo; });
}
const Segment* find_segment(std::uintptr_t a) {
  auto it = std::upper_bound(g_segments.begin(), g_segments.end(), a,
                             [](std::uintptr_t x, const Segment& s) { return x < s.lo; });
  if (it == g_segments.begin()) return nullptr;
  --it;
  if (a >= it->hi) return nullptr;
  for (const Segment& r : g_relro)
    if (a >= r.lo && a < r.hi) return &r;
  return &*it;
}

// Shadows of unregistered buffers, kept for the next ones: a plugin's
// worker registers fresh tensors for every call, and zeroing 80 bytes of
// shadow per byte each time would cost more than the checks. No clearing is
// needed: an entry is tagged with the launch that wrote it.
std::vector<std::vector<ByteShadow>> g_spare_shadows;
std::vector<ByteShadow> shadow_for(std::size_t bytes) {
  for (auto& spare : g_spare_shadows)
    if (spare.size() >= bytes) {
      std::vector<ByteShadow> s = std::move(spare);
      spare = std::move(g_spare_shadows.back());
      g_spare_shadows.pop_back();
      return s;
    }
  return std::vector<ByteShadow>(bytes);
}
void keep_spare(std::vector<ByteShadow>&& shadow) {
  if (shadow.empty()) return;
  if (g_spare_shadows.size() >= 16) g_spare_shadows.erase(g_spare_shadows.begin());
  g_spare_shadows.push_back(std::move(shadow));
}

std::string buffer_offset(const Buffer& b, std::uintptr_t a) {
  return "'" + b.counts.name + "'+" + std::to_string(a - b.lo);
}
std::string shared_offset(std::uintptr_t a) {
  const Launch& L = *g_launch;
  Dl_info info{};
  if (L.dynamic_lo && a >= L.dynamic_lo && a < L.dynamic_lo + kMaxDynamicShared)
    return "dynamic shared+" + std::to_string(a - L.dynamic_lo);
  std::string name = "static shared";
  if (dladdr(reinterpret_cast<void*>(a), &info) && info.dli_sname && info.dli_saddr)
    return "shared " + std::string(info.dli_sname) + "+" +
           std::to_string(a - reinterpret_cast<std::uintptr_t>(info.dli_saddr));
  return name + "+" + std::to_string(a - L.shared_lo);
}

std::string out_of_bounds_text(std::uintptr_t a) {
  if (g_buffers.empty()) return "no buffer is registered";
  const Buffer* below = nullptr;
  const Buffer* above = nullptr;
  for (const Buffer& b : g_buffers) {
    if (b.hi <= a && (!below || b.hi > below->hi)) below = &b;
    if (b.lo > a && (!above || b.lo < above->lo)) above = &b;
  }
  const std::uint64_t past = below ? a - below->hi : UINT64_MAX;
  const std::uint64_t before = above ? above->lo - a : UINT64_MAX;
  if (past <= before && below)
    return std::to_string(past) + " bytes past the end of '" + below->counts.name + "' (" +
           std::to_string(below->hi - below->lo) + " bytes)";
  return std::to_string(before) + " bytes before '" + above->counts.name + "'";
}

// ---- the race check ------------------------------------------------------
// Whether record r (of another thread) happens before the current access:
// in this block (thread numbers [block_first, block_first + block_threads),
// compared without a division: this is the checker's hot path), before a
// barrier since, or in this warp before a collective of both lanes since.
bool ordered(const Record& r, const Fiber& me, std::uint32_t block_first) {
  const Launch& L = *g_launch;
  const std::uint32_t other_local = r.thread - 1 - block_first;
  if (other_local >= L.block_threads) return false;  // another block
  if (r.epoch != L.epoch) return true;               // a __syncthreads since
  if (other_local / 32 != me.warp) return false;
  const Warp& w = L.warps[me.warp];
  const std::uint32_t common = std::max(w.full_gen, w.pair_gen[other_local % 32][me.lane]);
  return common > r.warp_gen;
}

const char* verb(Access k) {
  return k == Access::read ? "reads" : (k == Access::write ? "writes" : "atomically updates");
}

[[noreturn]] void race(bool shared, std::uintptr_t a, std::size_t bytes, Access kind,
                       std::uint64_t where, const Record& other, bool other_wrote) {
  const Fiber& me = *tls_current;
  std::string msg = me_name(me) + " " + verb(kind) + " " + std::to_string(bytes) + " bytes at " +
                    (shared ? shared_offset(a) : buffer_offset(*find_buffer(a), a)) + " (" +
                    describe_where(where) + "), and " + thread_name(other.thread - 1) + " " +
                    (other.atomic ? "atomically updated" : (other_wrote ? "wrote" : "read")) +
                    " it (" + describe_where(other.where) + ")";
  const std::uint32_t other_block = (other.thread - 1) / g_launch->block_threads;
  msg += other_block == g_launch->block_linear ? " in the same barrier interval"
                                               : ", unordered: blocks of a launch";
  hazard(shared ? "shared race" : "global race", msg);
}

void check(ByteShadow* s, std::size_t bytes, std::uint32_t gen, bool shared, std::uintptr_t a,
           std::size_t access_bytes, Access kind, std::uint64_t where) {
  Fiber& me = *tls_current;
  Launch& L = *g_launch;
  const std::uint32_t block_first = L.block_linear * L.block_threads;
  const std::uint32_t my_thread = block_first + me.linear;
  const Record mine{my_thread + 1, L.epoch, L.warps[me.warp].gen, kind == Access::atomic, where};
  for (std::size_t i = 0; i < bytes; ++i) {
    ByteShadow& b = s[i];
    if (b.gen != gen) b = ByteShadow{gen, 0, {}, {}, {}};
    auto conflicts = [&](const Record& r) {
      return r.thread && r.thread != mine.thread && !(r.atomic && mine.atomic) &&
             !ordered(r, me, block_first);
    };
    if (kind != Access::write && shared && !b.written)
      hazard("uninitialised shared read", me_name(me) + " " + verb(kind) + " " +
                                              std::to_string(access_bytes) + " bytes at " +
                                              shared_offset(a) + " (" + describe_where(where) +
                                              "), never written in this block");
    if (conflicts(b.writer)) race(shared, a, access_bytes, kind, where, b.writer, true);
    if (kind == Access::read) {
      if (!b.reader.thread || b.reader.thread == mine.thread || b.reader.epoch != L.epoch)
        b.reader = mine;
      else
        b.other_reader = mine;
    } else {
      if (conflicts(b.reader)) race(shared, a, access_bytes, kind, where, b.reader, false);
      if (conflicts(b.other_reader))
        race(shared, a, access_bytes, kind, where, b.other_reader, false);
      b.writer = mine;
      b.written = 1;
      b.reader = b.other_reader = Record{};
    }
  }
}

void count(bool shared, Access kind, std::size_t bytes) {
  Counters& c = g_launch->counters;
  if (kind == Access::read) {
    (shared ? c.shared_loads : c.global_loads) += 1;
    (shared ? c.shared_load_bytes : c.global_load_bytes) += bytes;
  } else if (kind == Access::write) {
    (shared ? c.shared_stores : c.global_stores) += 1;
    (shared ? c.shared_store_bytes : c.global_store_bytes) += bytes;
  }
}

// The per-buffer counters of the current launch that `a` hits: a
// registered buffer's (zeroed on its first access in the launch), else the
// module data's. Atomic function calls are counted by atomic_access: their
// access, like a std::atomic one, is neither a load nor a store.
BufferCounters& buffer_counts(Buffer* b) {
  Launch& L = *g_launch;
  if (!b) return L.module_data;
  if (b->counted_in != L.launch_gen) {
    b->counted_in = L.launch_gen;
    const std::string name = std::move(b->counts.name);
    b->counts = BufferCounters{name};
    L.touched.push_back(std::size_t(b - g_buffers.data()));
  }
  return b->counts;
}
void count_in(BufferCounters& c, Access kind, std::size_t bytes) {
  if (kind == Access::read) {
    ++c.loads;
    c.load_bytes += bytes;
  } else if (kind == Access::write) {
    ++c.stores;
    c.store_bytes += bytes;
  }
}

// ---- the module of a kernel: its TLS block is the static shared memory.
struct ModuleTls {
  std::uintptr_t kernel;
  std::uintptr_t lo = 0, hi = 0;
};
int find_tls(dl_phdr_info* info, std::size_t, void* data) {
  auto* m = static_cast<ModuleTls*>(data);
  bool holds_kernel = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && m->kernel >= lo && m->kernel < lo + ph.p_memsz) holds_kernel = true;
  }
  if (!holds_kernel) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_tls_data) {
      m->lo = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
      m->hi = m->lo + info->dlpi_phdr[i].p_memsz;
    }
  return 1;
}

// ---- barriers and warps ------------------------------------------------
void release_barrier() {
  Launch& L = *g_launch;
  int result = 0;
  switch (L.reduce_kind) {
    case 1:
      result = int(L.predicate_sum);
      break;
    case 2:
      result = L.predicate_sum == L.arrived;
      break;
    case 3:
      result = L.predicate_sum != 0;
      break;
    default:
      break;
  }
  L.barrier_result = result;
  L.arrived = 0;
  L.predicate_sum = 0;
  ++L.epoch;
  ++L.counters.barriers;
  for (auto& f : L.fibers)
    if (f->state == State::barrier) make_runnable(f.get());
}

std::string where_text(std::uint64_t w) {
  return describe_where(w);
}

[[noreturn]] void divergent_barrier(const Fiber& missing, const char* why) {
  const Launch& L = *g_launch;
  hazard("divergent barrier", "__syncthreads at " + where_text(L.barrier_where) + " reached by " +
                                  std::to_string(L.arrived) + " of " +
                                  std::to_string(L.block_threads) + " threads of block " +
                                  xyz(L.block_idx) + "; " + me_name(missing) + " " + why);
}

void check_barrier_complete() {
  Launch& L = *g_launch;
  if (L.arrived == 0) return;
  if (L.arrived == L.live && L.exited == 0) {
    release_barrier();
    return;
  }
  if (L.arrived + L.exited == L.block_threads && L.exited > 0)
    for (auto& f : L.fibers)
      if (f->state == State::exited)
        divergent_barrier(*f, "exited without reaching it (a deadlock on the device)");
}

void complete_collective(Warp& w, std::uint32_t warp_index, unsigned mask) {
  Launch& L = *g_launch;
  Fiber* lanes[32] = {};  // the fibers of a warp are consecutive: warp * 32 + lane
  for (int l = 0; l < 32; ++l)
    if (mask >> l & 1u) lanes[l] = L.fibers[warp_index * 32 + std::uint32_t(l)].get();
  Fiber& first = *lanes[__builtin_ctz(mask)];
  std::uint64_t ballot = 0;
  for (int l = 0; l < 32; ++l)
    if (lanes[l]) {
      if (lanes[l]->op != first.op)
        hazard("warp mask", "lanes of warp " + std::to_string(warp_index) + " of block " +
                                xyz(L.block_idx) + " meet with mask " + std::to_string(mask) +
                                " in different warp functions (" + where_text(first.wait_where) +
                                " and " + where_text(lanes[l]->wait_where) + ")");
      if (lanes[l]->value) ballot |= 1ull << l;
    }
  for (int l = 0; l < 32; ++l) {
    Fiber* f = lanes[l];
    if (!f) continue;
    const int width = f->width;
    const int segment = l & ~(width - 1);
    int src = l;
    switch (f->op) {
      case WarpOp::shfl:
        src = segment + (f->arg & (width - 1));
        break;
      case WarpOp::shfl_up:
        src = l - f->arg < segment ? l : l - f->arg;
        break;
      case WarpOp::shfl_down:
        src = l + f->arg >= segment + width ? l : l + f->arg;
        break;
      case WarpOp::shfl_xor:
        src = (l ^ f->arg) >= segment + width ? l : l ^ f->arg;
        break;
      default:
        break;
    }
    switch (f->op) {
      case WarpOp::ballot:
        f->result = ballot;
        break;
      case WarpOp::any:
        f->result = ballot != 0;
        break;
      case WarpOp::all:
        f->result = ballot == (mask & 0xffffffffull);
        break;
      case WarpOp::sync:
        f->result = 0;
        break;
      default:
        if (!lanes[src])
          hazard(
              "warp mask", me_name(*f) + " (lane " + std::to_string(l) + ") shuffles from lane " +
                               std::to_string(src) + ", outside the mask 0x" +
                               [&] {
                                 char b[16];
                                 std::snprintf(b, sizeof b, "%08x", mask);
                                 return std::string(b);
                               }() +
                               " (" + where_text(f->wait_where) + "): its value is undefined");
        f->result = lanes[src]->value;
    }
  }
  ++w.gen;
  if ((mask & w.lanes) == w.lanes)
    w.full_gen = w.gen;
  else
    for (int a = 0; a < 32; ++a)
      if (mask >> a & 1u)
        for (int b = 0; b < 32; ++b)
          if (mask >> b & 1u) w.pair_gen[a][b] = w.gen;
  w.pending &= ~mask;
  ++L.counters.warp_ops;
  for (int l = 0; l < 32; ++l)
    if (lanes[l] && lanes[l] != tls_current) make_runnable(lanes[l]);
}

std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// Every live fiber waits: explain why the block cannot go on.
[[noreturn]] void stuck() {
  Launch& L = *g_launch;
  for (auto& f : L.fibers) {
    if (f->state != State::warp) continue;
    const Warp& w = L.warps[f->warp];
    for (int l = 0; l < 32; ++l) {
      if (!(f->mask >> l & 1u)) continue;
      Fiber* other = nullptr;
      for (auto& g : L.fibers)
        if (g->warp == f->warp && g->lane == std::uint32_t(l)) other = g.get();
      const std::string head = me_name(*f) + " waits in a warp function (" +
                               where_text(f->wait_where) + ") with mask " + hex(f->mask) +
                               " for lane " + std::to_string(l);
      if (!other || !(w.lanes >> l & 1u)) hazard("warp mask", head + ", which does not exist");
      if (other->state == State::exited) hazard("warp mask", head + ", which exited");
      if (other->state == State::barrier)
        hazard("warp mask",
               head + ", which waits at __syncthreads (" + where_text(other->wait_where) + ")");
      if (other->state == State::warp && other->mask != f->mask)
        hazard("warp mask", head + ", which waits with mask " + hex(other->mask) + " (" +
                                where_text(other->wait_where) + ")");
    }
  }
  for (auto& f : L.fibers)
    if (f->state == State::exited)
      divergent_barrier(*f, "exited without reaching it (a deadlock on the device)");
  hazard("deadlock", "every thread of block " + xyz(L.block_idx) + " waits");
}

// ---- running a block ------------------------------------------------------
void run_block(Body body, void* closure) {
  Launch& L = *g_launch;
  ++L.counters.blocks;
  L.counters.threads += L.block_threads;
  L.block_gen = ++g_block_serial;
  L.epoch = 0;
  L.arrived = 0;
  L.exited = 0;
  L.live = L.block_threads;
  // Fresh shared memory: a NaN pattern (0xff bytes are a NaN in f32, f64,
  // bf16 and f16), and a shadow that knows no byte as written.
  if (L.shared_hi > L.shared_lo)
    std::memset(reinterpret_cast<void*>(L.shared_lo), 0xff, L.shared_hi - L.shared_lo);
  L.warps.assign((L.block_threads + 31) / 32, Warp{});
  for (std::uint32_t i = 0; i < L.block_threads; ++i) L.warps[i / 32].lanes |= 1u << (i % 32);
  L.fibers.clear();
  L.runnable.clear();
  for (std::uint32_t i = 0; i < L.block_threads; ++i) {
    auto f = std::make_unique<Fiber>();
    f->tid = unflatten(i, L.block);
    f->linear = i;
    f->warp = i / 32;
    f->lane = i % 32;
    Fiber* self = f.get();
    f->context = ctx::fiber(std::allocator_arg, SlotAllocator{g_stacks.lo(i), g_stacks.hi(i)},
                            [self, body, closure](ctx::fiber&& scheduler) {
                              g_scheduler = std::move(scheduler);
                              try {
                                body(closure);
                              } catch (const ctx::detail::forced_unwind&) {
                                throw;
                              } catch (...) {
                                if (!g_launch->kernel_exception)
                                  g_launch->kernel_exception = std::current_exception();
                                g_launch->failed = true;
                              }
                              Launch& launch = *g_launch;
                              self->state = State::exited;
                              --launch.live;
                              ++launch.exited;
                              if (!launch.failed) check_barrier_complete();
                              return std::move(g_scheduler);
                            });
    L.runnable.push_back(self);
    L.fibers.push_back(std::move(f));
  }
  while (!L.failed && L.live > 0) {
    if (L.runnable.empty()) {
      try {
        stuck();
      } catch (const SchedulerHazard&) {
      }
      break;
    }
    const std::size_t pick = L.schedule.below(L.runnable.size());
    Fiber* f = L.runnable[pick];
    L.runnable[pick] = L.runnable.back();
    L.runnable.pop_back();
    tls_current = f;
    f->context = std::move(f->context).resume();
    tls_current = nullptr;
  }
  // A fiber that did not finish (a hazard) is abandoned, not unwound: it
  // may be parked inside a load/store callback, which GCC declares nothrow,
  // so an unwinding exception through it would terminate the process. Its
  // stack slot is reused by the next block; only its locals' heap memory
  // is lost.
  static auto* abandoned = new std::vector<ctx::fiber>();
  for (auto& f : L.fibers)
    if (f->context) abandoned->push_back(std::move(f->context));
  L.fibers.clear();
}

[[noreturn]] void bad_launch(Launch& L, const std::string& why) {
  L.failed = true;
  L.hazard_kind = "bad launch";
  L.hazard_message = "moacert simt: bad launch of kernel " + std::string(L.kernel) + ": " + why;
  throw Hazard(L.hazard_kind, L.hazard_message);
}

// ---- stack overflow: a fault in a guard page of the pool ---------------
struct sigaction g_previous_segv {};
void on_segv(int signo, siginfo_t* info, void* context) {
  const auto a = reinterpret_cast<std::uintptr_t>(info ? info->si_addr : nullptr);
  if (g_stacks.guard_slot(a) >= 0 && g_launch && tls_current) {
    const Fiber& f = *tls_current;
    const uint3 b = g_launch->block_idx;
    std::snprintf(
        g_fault_message, sizeof g_fault_message,
        "moacert simt: stack overflow in kernel %s (block (%u,%u,%u), thread (%u,%u,%u)): "
        "its fiber stack of %zu bytes is exhausted (set MOACERT_SIMT_STACK_BYTES or "
        "moacert::simt::Options::stack_bytes)",
        g_launch->kernel, b.x, b.y, b.z, f.tid.x, f.tid.y, f.tid.z, g_stacks.stack_bytes);
    const ssize_t n = write(STDERR_FILENO, g_fault_message, std::strlen(g_fault_message));
    (void)n;
    (void)!write(STDERR_FILENO, "\n", 1);
  }
  if (g_previous_segv.sa_flags & SA_SIGINFO) {
    if (g_previous_segv.sa_sigaction) return g_previous_segv.sa_sigaction(signo, info, context);
  } else if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN) {
    return g_previous_segv.sa_handler(signo);
  }
  signal(signo, SIG_DFL);  // the faulting instruction runs again and kills the process
}

void install_overflow_handler() {
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
  sigaction(SIGSEGV, &sa, &g_previous_segv);
}

// The launch's per-buffer counters into its Counters, in registration order.
void gather_buffer_counts(Launch& L) {
  std::vector<const Buffer*> touched;
  for (std::size_t i : L.touched) touched.push_back(&g_buffers[i]);
  std::sort(touched.begin(), touched.end(),
            [](const Buffer* x, const Buffer* y) { return x->serial < y->serial; });
  for (const Buffer* b : touched) L.counters.buffers.push_back(b->counts);
  const BufferCounters& m = L.module_data;
  if (m.loads || m.stores || m.atomics) L.counters.buffers.push_back(m);
}

void record_report(Launch& L) {
  gather_buffer_counts(L);
  g_last_counters = L.counters;
  // The report carries the totals only (Counters::json), so its sum keeps
  // no per-buffer list, which would grow with every unnamed cudaMalloc.
  std::vector<BufferCounters> buffers = std::move(L.counters.buffers);
  g_report_counters += L.counters;
  L.counters.buffers = std::move(buffers);
  ++g_report_launches;
  if (L.failed && g_report_hazard.empty()) {
    g_report_hazard_kind = L.hazard_kind;
    g_report_hazard = L.hazard_message;
  }
}

}  // namespace

// ---- the launch ---------------------------------------------------------
void launch(const char* name, const Module& module, dim3 grid, dim3 block, std::size_t shared_bytes,
            Body body, void* closure, Site site) {
  std::lock_guard lock(g_mutex);
  if (g_launch)
    throw Hazard("bad launch", "moacert simt: kernel " + std::string(name) +
                                   " launched from inside a kernel (dynamic "
                                   "parallelism is not emulated)");
  Launch L;
  L.kernel = name;
  L.grid = grid;
  L.block = block;
  L.shared_bytes = shared_bytes;
  L.launch_gen = ++g_launch_serial;
  const Options& opt = settings().options;
  struct Reset {
    Launch& L;
    ~Reset() {
      record_report(L);
      g_launch = nullptr;
      tls_current = nullptr;
    }
  } reset{L};
  g_launch = &L;
  (void)site;
  const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
  const std::uint64_t blocks = std::uint64_t(grid.x) * grid.y * grid.z;
  g_last_error = cudaErrorInvalidConfiguration;
  if (threads == 0 || threads > 1024)
    bad_launch(L, "a block of " + std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
                      std::to_string(block.z) + " = " + std::to_string(threads) +
                      " threads (1 to 1024 allowed)");
  if (block.z > 64) bad_launch(L, "block.z = " + std::to_string(block.z) + " (at most 64 allowed)");
  if (blocks == 0 || grid.y > 65535 || grid.z > 65535 || blocks > (1ull << 31))
    bad_launch(L, "a grid of " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                      std::to_string(grid.z) +
                      " blocks (each dimension at least 1; a negative size wraps to a huge one)");
  if (shared_bytes > opt.dynamic_shared_limit)
    bad_launch(L, std::to_string(shared_bytes) +
                      " bytes of dynamic shared memory, above the limit "
                      "of " +
                      std::to_string(opt.dynamic_shared_limit) +
                      " bytes (moacert::simt::Options::dynamic_shared_limit, at most " +
                      std::to_string(kMaxDynamicShared) + ")");
  if (shared_bytes > 0 && !module.dynamic_shared)
    bad_launch(L, std::to_string(shared_bytes) +
                      " bytes of dynamic shared memory for a module without `extern __shared__` "
                      "(build it with moacert-simt-c++)");
  g_last_error = cudaSuccess;
  install_overflow_handler();
  L.block_threads = std::uint32_t(threads);
  if (module.dynamic_shared)
    L.dynamic_lo = reinterpret_cast<std::uintptr_t>(module.dynamic_shared());
  if (module.touch_tls) module.touch_tls();
  gather_segments();
  ModuleTls m{reinterpret_cast<std::uintptr_t>(module.kernel)};
  dl_iterate_phdr(find_tls, &m);
  L.shared_lo = m.lo;
  L.shared_hi = m.hi;
  if (L.shared_hi - L.shared_lo > g_shared_shadow.size())
    g_shared_shadow.assign(L.shared_hi - L.shared_lo, ByteShadow{});
  g_stacks.ensure(L.block_threads, opt.stack_bytes);
  L.stacks_lo = reinterpret_cast<std::uintptr_t>(g_stacks.base);
  L.stacks_hi = L.stacks_lo + g_stacks.slot_bytes * g_stacks.count;
  // Blocks in a seeded order; the interleaving stream is seeded from it too.
  Rng order{{settings().seed ^ 0x5eed0b10c5ull}};
  L.schedule = Rng{{settings().seed * 0x2545f4914f6cdd1dull + 1}};
  std::vector<std::uint32_t> permutation(blocks);
  for (std::uint32_t i = 0; i < blocks; ++i) permutation[i] = i;
  for (std::size_t i = blocks; i > 1; --i)
    std::swap(permutation[i - 1], permutation[order.below(i)]);
  for (std::uint32_t b : permutation) {
    L.block_linear = b;
    L.block_idx = unflatten(b, grid);
    run_block(body, closure);
    if (L.failed) break;
  }
  if (L.kernel_exception) {
    g_last_error = cudaErrorLaunchFailure;
    std::rethrow_exception(L.kernel_exception);
  }
  if (L.failed) {
    g_last_error = cudaErrorLaunchFailure;
    throw Hazard(L.hazard_kind, L.hazard_message);
  }
}

uint3 thread_idx() {
  return tls_current ? tls_current->tid : uint3{0, 0, 0};
}
uint3 block_idx() {
  return g_launch ? g_launch->block_idx : uint3{0, 0, 0};
}
dim3 block_dim() {
  return g_launch ? g_launch->block : dim3();
}
dim3 grid_dim() {
  return g_launch ? g_launch->grid : dim3();
}

int block_barrier(int reduce_kind, int predicate, Site site) {
  Fiber* me = tls_current;
  if (!me) return predicate;
  Launch& L = *g_launch;
  const std::uint64_t where = intern(site);
  if (L.arrived == 0) {
    L.barrier_where = where;
    L.reduce_kind = reduce_kind;
  } else if (L.barrier_where != where) {
    hazard("divergent barrier",
           me_name(*me) + " waits at __syncthreads " + where_text(where) + " while " +
               std::to_string(L.arrived) + " threads wait at __syncthreads " +
               where_text(L.barrier_where) + ": threads of a block at different barriers");
  }
  me->state = State::barrier;
  me->wait_where = where;
  ++L.arrived;
  L.predicate_sum += predicate != 0;
  check_barrier_complete();
  switch_out();  // the last to arrive is runnable again, among the others
  return L.barrier_result;
}

std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width,
                              Site site) {
  Fiber* me = tls_current;
  if (!me) return value;
  Launch& L = *g_launch;
  Warp& w = L.warps[me->warp];
  const std::uint64_t where = intern(site);
  if (!(mask >> me->lane & 1u))
    hazard("warp mask", me_name(*me) + " (lane " + std::to_string(me->lane) +
                            ") calls a warp function with mask " + hex(mask) +
                            ", which does not contain its own lane (" + where_text(where) + ")");
  if (width < 1 || width > 32 || (width & (width - 1)))
    hazard("warp mask", me_name(*me) + " shuffles with width " + std::to_string(width) +
                            " (a power of 2 up to 32) (" + where_text(where) + ")");
  if (mask & ~w.lanes)
    hazard("warp mask", me_name(*me) + " calls a warp function with mask " + hex(mask) +
                            " naming lanes beyond the block's last thread (" + where_text(where) +
                            ")");
  me->state = State::warp;
  me->op = op;
  me->mask = mask;
  me->value = value;
  me->arg = arg;
  me->width = width;
  me->wait_where = where;
  w.pending |= 1u << me->lane;
  bool complete = (w.pending & mask) == mask;
  for (int l = 0; complete && l < 32; ++l)
    if ((mask >> l & 1u) && L.fibers[me->warp * 32 + std::uint32_t(l)]->mask != mask)
      complete = false;
  if (complete) {
    complete_collective(w, me->warp, mask);
    yield();
  } else {
    switch_out();
  }
  return me->result;
}

unsigned active_mask() {
  Fiber* me = tls_current;
  if (!me) return 1u;
  const Warp& w = g_launch->warps[me->warp];
  unsigned m = 0;
  for (int l = 0; l < 32; ++l)
    if ((w.lanes >> l & 1u) &&
        g_launch->fibers[me->warp * 32 + std::uint32_t(l)]->state != State::exited)
      m |= 1u << l;
  return m;
}

void atomic_access(void* address, std::size_t bytes, Counters::Atomic kind, Site site) {
  Fiber* me = tls_current;
  if (!me) return;
  Launch& L = *g_launch;
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

void on_access(const void* address, std::size_t bytes, Access kind, const void* pc) {
  Fiber* me = tls_current;
  if (!me) return;
  Launch& L = *g_launch;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  if (a >= L.stacks_lo && a < L.stacks_hi) return;  // a thread's locals
  const auto where = reinterpret_cast<std::uint64_t>(pc);
  if (a >= L.shared_lo && a + bytes <= L.shared_hi) {
    count(true, kind, bytes);
    check(&g_shared_shadow[a - L.shared_lo], bytes, L.block_gen, true, a, bytes, kind, where);
  } else if (Buffer* b = find_buffer(a); b && a + bytes <= b->hi) {
    count(false, kind, bytes);
    count_in(buffer_counts(b), kind, bytes);
    if (b->shadow.size() < b->hi - b->lo) b->shadow = shadow_for(b->hi - b->lo);
    check(&b->shadow[a - b->lo], bytes, L.launch_gen, false, a, bytes, kind, where);
  } else if (const Segment* seg = b ? nullptr : find_segment(a)) {
    if (seg->writable) {
      count(false, kind, bytes);
      count_in(buffer_counts(nullptr), kind, bytes);
    }
  } else {
    hazard(
        "out of bounds",
        me_name(*me) + " " + verb(kind) + " " + std::to_string(bytes) + " bytes at " +
            [&] {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
              return std::string(buf);
            }() +
            " (" + describe_where(where) + "): " + out_of_bounds_text(b ? b->hi : a) +
            ", in no tensor or buffer the launch was given");
  }
  if (settings().options.yield_every_accesses &&
      ++me->accesses % settings().options.yield_every_accesses == 0)
    yield();
}

}  // namespace detail

void set_options(const Options& options) {
  std::lock_guard lock(detail::g_mutex);
  detail::settings().options = options;
  detail::settings().options.dynamic_shared_limit =
      std::min(options.dynamic_shared_limit, kMaxDynamicShared);
}
Options options() {
  return detail::settings().options;
}
void set_schedule_seed(std::uint64_t seed) {
  std::lock_guard lock(detail::g_mutex);
  detail::settings().seed = seed;
}
Counters last_launch_counters() {
  std::lock_guard lock(detail::g_mutex);
  return detail::g_last_counters;
}

}  // namespace moacert::simt

// ---- the C entry points and CUDA's runtime API --------------------------
using namespace moacert::simt;

extern "C" void moacert_simt_register_buffer(const void* ptr, std::size_t bytes, const char* name) {
  std::lock_guard lock(detail::g_mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  auto& bufs = detail::g_buffers;
  auto it = std::lower_bound(bufs.begin(), bufs.end(), lo,
                             [](const detail::Buffer& b, std::uintptr_t x) { return b.lo < x; });
  if (it != bufs.end() && it->lo == lo) {
    detail::keep_spare(std::move(it->shadow));
    bufs.erase(it);
  }
  it = std::lower_bound(bufs.begin(), bufs.end(), lo,
                        [](const detail::Buffer& b, std::uintptr_t x) { return b.lo < x; });
  bufs.insert(it, detail::Buffer{lo,
                                 lo + bytes,
                                 ++detail::g_buffer_serial,
                                 BufferCounters{name ? name : "buffer"},
                                 0,
                                 {}});
  detail::g_buffer_hint = 0;
}

extern "C" void moacert_simt_name_buffer(const void* ptr, const char* name) {
  std::lock_guard lock(detail::g_mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  for (detail::Buffer& b : detail::g_buffers)
    if (b.lo == lo) b.counts.name = name ? name : "buffer";
}

extern "C" void moacert_simt_unregister_buffer(const void* ptr) {
  std::lock_guard lock(detail::g_mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  auto& bufs = detail::g_buffers;
  for (auto it = bufs.begin(); it != bufs.end();)
    if (it->lo == lo) {
      detail::keep_spare(std::move(it->shadow));
      it = bufs.erase(it);
    } else {
      ++it;
    }
  detail::g_buffer_hint = 0;
}

extern "C" void moacert_simt_set_schedule_seed(std::uint64_t seed) {
  set_schedule_seed(seed);
}

namespace {
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

extern "C" std::size_t moacert_simt_take_report(char* buf, std::size_t len) {
  std::lock_guard lock(detail::g_mutex);
  std::string out = "{\"launches\":" + std::to_string(detail::g_report_launches) +
                    ",\"counters\":" + detail::g_report_counters.json() + ",\"hazard\":";
  out += detail::g_report_hazard.empty()
             ? std::string("null")
             : "{\"kind\":" + json_string(detail::g_report_hazard_kind) +
                   ",\"message\":" + json_string(detail::g_report_hazard) + "}";
  out += "}";
  detail::g_report_counters = Counters{};
  detail::g_report_launches = 0;
  detail::g_report_hazard.clear();
  detail::g_report_hazard_kind.clear();
  if (buf && len > 0) {
    const std::size_t n = std::min(len - 1, out.size());
    std::memcpy(buf, out.data(), n);
    buf[n] = '\0';
  }
  return out.size();
}

extern "C" const char* moacert_simt_fault_message(void) {
  return detail::g_fault_message;
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  if (!ptr) return detail::g_last_error = cudaErrorInvalidValue;
  void* p = std::aligned_alloc(256, (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256);
  if (!p) return detail::g_last_error = cudaErrorMemoryAllocation;
  std::memset(p, 0xff, bytes);  // as uninitialised device memory: NaN, not zero
  const std::string name = "cudaMalloc#" + std::to_string(++detail::g_malloc_count);
  moacert_simt_register_buffer(p, bytes, name.c_str());
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  moacert_simt_unregister_buffer(ptr);
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes && (!dst || !src)) return detail::g_last_error = cudaErrorInvalidValue;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  if (bytes && !ptr) return detail::g_last_error = cudaErrorInvalidValue;
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  return detail::g_last_error;
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = detail::g_last_error;
  detail::g_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() {
  return detail::g_last_error;
}
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (a hazard; see the report)";
  }
  return "unknown error";
}
