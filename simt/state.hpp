// The emulator's state (not installed): the types of a launch, and the one
// Runtime that holds what lives from launch to launch, shared by the files
// of simt/ (one file per concern, listed in docs/simt.md#the-emulators-files).
// Everything here has hidden visibility: the files call each other directly,
// as functions of one file would, and the library exports only simt.h's API.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/context/fiber.hpp>

#include "include/moacert/splitmix64.hpp"
#include "simt/runtime.hpp"
#include "simt/shadow_size.hpp"

namespace moacert::simt::detail {

#pragma GCC visibility push(hidden)

namespace ctx = boost::context;

// The device's range of addresses (device_memory.cpp reserves it, less
// where the address space is smaller): MOACERT_SIMT_DEVICE_MEMORY's bound.
inline constexpr std::size_t kDeviceRangeBytes = std::size_t(1) << 40;

// ---- settings (settings.cpp): the options, and the schedule's seed; from
// the environment (MOACERT_SIMT_*) until the API sets them.
struct Settings {
  Options options;
  std::uint64_t seed = 0;
  // The emulated device's memory in bytes (MOACERT_SIMT_DEVICE_MEMORY; 0:
  // as much as the host gives): cudaMalloc past it fails with
  // cudaErrorMemoryAllocation, as a GPU's does, so that the worker's
  // handling of a full device is tested without one.
  std::size_t device_memory = 0;
  // "" or why a MOACERT_SIMT_* variable is refused (its value kept as the
  // default's): moacert_simt_settings_error.
  std::string error;
  Settings();
};

// The schedule's seeded, platform-independent stream, and a draw below n.
struct Rng : SplitMix64 {
  std::size_t below(std::size_t n) { return std::size_t(next() % n); }
};

// ---- fiber stacks (stacks.cpp): one mapping per launch size, each stack
// below a guard page, so that an overflow faults on a page the signal
// handler recognises.
struct StackPool {
  char* base = nullptr;
  std::size_t slot_bytes = 0, stack_bytes = 0, count = 0, page = 0;
  void ensure(std::size_t n, std::size_t bytes);
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
// Installs the handler that names a fiber's stack overflow and a host
// access to device memory (once).
void install_fault_handler();

// ---- sites (sites.cpp): source locations of emulator calls, interned so
// that a shadow record holds one word: a return address (tagged 0) or a
// site index (1).
inline constexpr std::uint64_t kSiteTag = 1ull << 63;
std::uint64_t intern(Site s);
// "file:line" of a site or return address (else function+offset).
std::string describe_where(std::uint64_t where);
// The data symbol that holds an address (a static array), from the
// module's symbol table; size 0 when none is found.
struct Symbol {
  std::string name;
  std::uintptr_t lo = 0;
  std::size_t size = 0;
};
Symbol symbol_of(std::uintptr_t a);

// ---- shadow memory: per byte, its last writer and last two readers.
struct Record {
  std::uint32_t thread = 0;  // launch-wide thread number + 1; 0: none
  std::uint32_t epoch = 0;   // the block's barrier interval
  std::uint32_t warp_gen = 0;
  std::uint32_t atomic = 0;
  std::uint64_t where = 0;
};
struct ByteShadow {
  std::uint32_t gen = 0;      // the block (shared) or launch (global) it describes
  std::uint32_t written = 0;  // kWritten, and on a granule's first byte kUniform
  Record writer, reader, other_reader;
};
// `written`'s flags: the block wrote the byte (shared memory's uninitialised
// reads); the granule of kGranule bytes that this entry starts (its index a
// multiple of kGranule) is described by this one record, the others' stale
// (access.cpp, check): an aligned float's access judges one record, not four.
inline constexpr std::uint32_t kWritten = 1, kUniform = 2;
inline constexpr std::size_t kGranule = 4;
static_assert(sizeof(ByteShadow) == kShadowBytesPerByte, "the budget counts the shadow's size");

struct Buffer {
  // The bytes a kernel may touch: the whole allocation, or less when its
  // owner bounded it (moacert_simt_bound_buffer: the worker's guards are
  // its own, not the tensor's).
  std::uintptr_t lo, hi;
  std::uint64_t serial;            // registration order, the order of Counters::buffers
  BufferCounters counts;           // its name, and its traffic in launch `counted_in`
  std::uint32_t counted_in = 0;    // 0: not touched by the current launch
  std::vector<ByteShadow> shadow;  // sized on the first checked access
};

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
  std::uint32_t async_groups = 0;  // cp.async groups committed
};

// A cp.async in flight: issued by `thread` (the block's linear thread
// number), in its group `group` (kUncommitted until cp.async.commit_group).
struct AsyncCopy {
  std::uintptr_t dst, src;
  std::size_t bytes;
  std::uint64_t where;
  std::uint32_t thread, group;
};

struct Warp {
  std::uint32_t gen = 0;       // completed collectives
  std::uint32_t full_gen = 0;  // the last one that included every lane
  unsigned lanes = 0;          // the lanes that exist
  unsigned pending = 0;        // lanes waiting in a collective
  std::uint32_t pair_gen[32][32] = {};
};

// A static __shared__ variable of the launch's module: [lo, hi) in this
// thread's TLS block, and its name (shared_variables.cpp).
struct SharedVariable {
  std::uintptr_t lo, hi;
  std::string name;
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
  // The module's static __shared__ variables, by address; empty where its
  // symbols cannot be read (the TLS block is then checked as a whole).
  std::vector<SharedVariable> shared_variables;
  std::size_t shared_variable_hint = 0;
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
  std::vector<AsyncCopy> copies;  // the block's cp.async in flight (async_copy.cpp)
  // Host memory the launch was handed as a pointer argument into a loaded
  // module's static data (a static array): [lo, hi) and its symbol's name.
  struct HostArgument {
    std::uintptr_t lo, hi;
    std::string name;
    std::size_t argument;
  };
  std::vector<HostArgument> host_arguments;
  Counters counters;
  std::vector<std::size_t> touched;  // the runtime.buffers the launch accessed
  BufferCounters module_data{kModuleData};
  bool failed = false;
  std::string hazard_kind, hazard_message;
  std::exception_ptr kernel_exception;
  Rng schedule{{0}};
};

// ---- the loaded modules (modules.cpp) ------------------------------------
// A loaded module's segment: a kernel may read its static data. A writable
// one holds `__device__`/`__constant__` variables (global memory: counted,
// not checked); a read-only one holds literals and the tables of source
// locations (not memory of the kernel's algorithm: neither counted nor
// checked).
struct Segment {
  std::uintptr_t lo, hi;
  bool writable;
};
// Gathers the loaded modules' segments (at each launch: a plugin may have
// been loaded since).
void gather_segments();
// The static shared memory of the module that holds `kernel`: its TLS block
// [lo, hi), or {0, 0}.
std::pair<std::uintptr_t, std::uintptr_t> static_shared_of(const void* kernel);
// ---- static __shared__ variables (shared_variables.cpp) ------------------
// L.shared_variables from the symbols of `kernel`'s module (L.shared_lo,
// shared_hi and dynamic_lo set).
void find_shared_variables(Launch& L, const void* kernel);
// An access to static shared memory in no one variable: out of bounds, in
// the terms of the nearest variable.
[[noreturn]] void past_shared_variable(std::uintptr_t a, std::size_t bytes, Access kind,
                                       std::uint64_t where);

// ---- device memory (device_memory.cpp): one reserved range of the address
// space from which cudaMalloc allocates, so that whether an address is
// device memory is a comparison.
struct DeviceRange {
  std::uintptr_t lo = 0, hi = 0;               // reserved
  std::uintptr_t used_hi = 0;                  // past the highest allocation yet
  int open = 0;                                // runtime calls and launches in progress
  std::map<std::uintptr_t, std::size_t> free;  // the free extents, by start
  bool holds(std::uintptr_t a) const { return a >= lo && a < hi; }
};
// Device memory is readable and writable only inside a launch or a runtime
// call (PROT_NONE otherwise, so that host code touching it faults, as on a
// GPU): open while one is in progress (nested; under runtime.mutex).
void open_device();
void close_device();
struct DeviceOpen {
  DeviceOpen() { open_device(); }
  ~DeviceOpen() { close_device(); }
  DeviceOpen(const DeviceOpen&) = delete;
  DeviceOpen& operator=(const DeviceOpen&) = delete;
};
// An allocation of `bytes` (rounded up to pages), accessible while the
// device is open, or null when the range is exhausted or cannot be reserved.
void* device_allocate(std::size_t bytes);
// The range's bytes, reserving it first (0 when it cannot be reserved).
std::size_t device_range_bytes();
// Gives an allocation of `bytes` back to the range.
void device_release(void* p, std::size_t bytes);
// The live cudaMalloc allocation that holds [p, p + bytes), or null.
const std::pair<const void* const, std::size_t>* device_allocation_of(const void* p,
                                                                      std::size_t bytes);

// ---- streams and events (streams.cpp): the order CUDA defines between the
// streams' work and the host, kept beside the emulator's eager running (a
// launch or a copy is done when its call returns, on a GPU perhaps not).
// A clock holds, per stream, how many of its works are ordered before a
// point (a vector clock: a stream's tail, an event, what the host waited for).
using Clock = std::vector<std::uint64_t>;
// A span of device memory a work reads or writes, named as its buffer is.
struct Touch {
  std::uintptr_t lo, hi;
  bool write;
  std::string name;
};
struct StreamRecord {
  bool blocking = true;  // ordered with the legacy default stream (cudaStreamDefault)
  std::uint64_t enqueued = 0;
  Clock tail;  // what the next work enqueued on it is ordered after
  // Destroyed, and retired once the host has waited for its whole tail:
  // its tail is then cleared (a worker's streams of many calls cost
  // nothing), since what the host waited for orders every later work.
  bool destroyed = false, retired = false;
};
struct Work {
  std::string what;  // "kernel K (file:line)", "cudaMemcpyAsync of N bytes"
  std::size_t stream;
  std::uint64_t seq;  // its place on its stream, from 1
  std::vector<Touch> touches;
};
struct Order {
  std::vector<StreamRecord> streams{1};                  // [0]: the legacy default stream
  Clock host;                                            // what the host has waited for
  std::vector<Work> pending;                             // work the host has not waited for
  std::map<const void*, std::size_t> streams_by_handle;  // the live cudaStream_t's
  std::set<const void*> events;                          // the live cudaEvent_t's
};
// The index of a live stream's handle (null: 0, the legacy default
// stream), or -1 when it is not one (destroyed, or never created).
long stream_index(const void* stream);
// "the legacy default stream", "stream #N".
std::string stream_name(std::size_t index);
// Enqueues a work on stream `index`: ordered after what CUDA orders it
// after; returns "" or the `stream race` with earlier unordered work that
// wrote what it touches or touched what it writes.
std::string enqueue_work(std::size_t index, std::string what, std::vector<Touch> touches);
// The host waits for a stream's work so far (a synchronous call), or all.
void host_waits_for(std::size_t index);
void host_waits_for_device();
// The span [p, p + bytes) of device memory as a work's touch.
Touch touch_of(const void* p, std::size_t bytes, bool write);
// Keeps a hazard found outside a launch (a runtime call's) for the report.
void report_runtime_hazard(const std::string& kind, const std::string& message);

// ---- the runtime: what lives from launch to launch, once per process ------
struct Runtime {
  Settings settings;
  std::recursive_mutex mutex;  // one launch at a time per process
  Launch* launch = nullptr;
  ctx::fiber scheduler;  // the scheduler's continuation while a fiber runs
  StackPool stacks;
  std::vector<ByteShadow> shared_shadow;
  // Per shared byte: the block (Launch::block_gen) whose cp.async in flight
  // writes it, else another value (async_copy.cpp).
  std::vector<std::uint32_t> shared_in_flight;
  std::vector<Buffer> buffers;  // sorted by lo
  std::size_t buffer_hint = 0;
  // Shadows of unregistered buffers, kept for the next ones (buffers.cpp).
  std::vector<std::vector<ByteShadow>> spare_shadows;
  std::vector<Segment> segments, relro;  // segments sorted by lo
  std::vector<Site> sites;
  std::map<std::pair<const char*, unsigned>, std::uint64_t> site_index;
  struct SiteSlot {  // intern's cache (sites.cpp)
    const char* file = nullptr;
    unsigned line = 0;
    std::uint64_t where = 0;
  };
  static constexpr std::size_t kSiteCache = 256;
  SiteSlot site_cache[kSiteCache];
  std::uint32_t launch_serial = 0, block_serial = 0;
  std::uint64_t malloc_count = 0, buffer_serial = 0;
  DeviceRange device;
  std::map<const void*, std::size_t> device_allocations;  // cudaMalloc's live ones, by size
  std::size_t host_buffers = 0;  // registered buffers outside the device range
  std::size_t device_bytes = 0;  // their sum
  std::set<const void*> freed;   // freed allocations' starts, not allocated since
  cudaError_t last_error = cudaSuccess;
  // The runtime call that failed last with `error_call_code`: its name,
  // arguments and why (moacert_simt_error_call).
  std::string error_call;
  cudaError_t error_call_code = cudaSuccess;
  Order order;  // streams.cpp
  Counters last_counters, report_counters;
  std::uint64_t report_launches = 0;
  std::string report_hazard_kind, report_hazard;
  struct sigaction previous_segv {};
  char fault_message[1024] = {};
};
// The one instance (launch.cpp).
extern Runtime runtime;

// ---- switching fibers -----------------------------------------------------
// Switches from the running fiber to the scheduler; returns when resumed.
inline void switch_out() {
  runtime.scheduler = std::move(runtime.scheduler).resume();
}
inline void make_runnable(Fiber* f) {
  f->state = State::runnable;
  runtime.launch->runnable.push_back(f);
}
// A synchronisation point: another runnable fiber may run first.
inline void yield() {
  make_runnable(tls_current);
  switch_out();
}

// ---- hazards and the names in their messages (hazards.cpp) ---------------
// Thrown where the scheduler itself finds a hazard (no fiber to park).
struct SchedulerHazard {};
// Records the launch's first hazard; the fiber then never runs again (the
// scheduler abandons the block's fibers and throws).
[[noreturn]] void hazard(const std::string& kind, const std::string& message);
std::string xyz(uint3 v);
uint3 unflatten(std::uint32_t i, dim3 d);
std::string hex(unsigned v);
std::string thread_name(std::uint32_t launch_thread);
std::string me_name(const Fiber& f);

// ---- the accesses (access.cpp) and the buffers (buffers.cpp) --------------
Buffer* find_buffer(std::uintptr_t a);
// A shadow of at least `bytes` entries, a spare one if it can.
std::vector<ByteShadow> shadow_for(std::size_t bytes);
// Unregisters the buffers of the allocation [p, p + bytes) (cudaFree).
void unregister_allocation(const void* p, std::size_t bytes);

// ---- cp.async (async_copy.cpp) ---------------------------------------------
// An access to a destination of a cp.async in flight (shared) or a write to
// its source (global) is an `async copy race`; called while any is in flight.
void check_async_copies(std::uintptr_t a, std::size_t bytes, Access kind, bool shared,
                        std::uint64_t where);
// The current thread's write of `bytes` shared bytes at `a` checked and
// recorded, not counted: a cp.async's data landing at its wait.
void record_shared_write(std::uintptr_t a, std::size_t bytes, std::uint64_t where);

// ---- barriers and warps (sync.cpp) -----------------------------------------
// Releases the barrier when every live thread has arrived, or reports the
// threads that exited without reaching it.
void check_barrier_complete();
// Completes a tensor-core collective (tensor_core.cpp): mma or ldmatrix,
// every lane of the warp in `lanes`, at the same instruction.
void complete_tensor_op(WarpOp op, Fiber* const (&lanes)[32]);
// Every live fiber waits: explains why the block cannot go on.
[[noreturn]] void stuck();

// ---- the report (report.cpp) -----------------------------------------------
// Adds a finished launch to the last launch's counters and to the report.
void record_report(Launch& L);

#pragma GCC visibility pop

}  // namespace moacert::simt::detail
