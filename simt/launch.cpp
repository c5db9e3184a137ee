// The launch: blocks of a launch run one at a time in a seeded order; the
// threads of a block are Boost.Context fibers on the launching OS thread,
// switched at synchronisation points in a seeded order (docs/simt.md).
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "simt/state.hpp"

namespace moacert::simt::detail {

thread_local constinit Fiber* tls_current __attribute__((tls_model("initial-exec"))) = nullptr;
Runtime runtime;

namespace {

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

void run_block(Body body, void* closure) {
  Launch& L = *runtime.launch;
  ++L.counters.blocks;
  L.counters.threads += L.block_threads;
  L.block_gen = ++runtime.block_serial;
  L.epoch = 0;
  L.arrived = 0;
  L.exited = 0;
  L.live = L.block_threads;
  L.copies.clear();  // a copy never waited for does not outlive its block
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
    f->context =
        ctx::fiber(std::allocator_arg, SlotAllocator{runtime.stacks.lo(i), runtime.stacks.hi(i)},
                   [self, body, closure](ctx::fiber&& scheduler) {
                     runtime.scheduler = std::move(scheduler);
                     try {
                       body(closure);
                     } catch (const ctx::detail::forced_unwind&) {
                       throw;
                     } catch (...) {
                       if (!runtime.launch->kernel_exception)
                         runtime.launch->kernel_exception = std::current_exception();
                       runtime.launch->failed = true;
                     }
                     Launch& launch = *runtime.launch;
                     self->state = State::exited;
                     --launch.live;
                     ++launch.exited;
                     if (!launch.failed) check_barrier_complete();
                     return std::move(runtime.scheduler);
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

// The pointer arguments into a loaded module's static data (a static
// array of the launcher's): host memory, each object's extent from the
// module's symbol table (else the rest of its segment).
void host_arguments(Launch& L, const void* const* pointers, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = reinterpret_cast<std::uintptr_t>(pointers[i]);
    if (!p || find_buffer(p)) continue;
    for (const Segment& seg : runtime.segments)
      if (p >= seg.lo && p < seg.hi) {
        Launch::HostArgument h{p, seg.hi, "static data", i + 1};
        if (const Symbol s = symbol_of(p); s.size && p < s.lo + s.size)
          h = {s.lo, s.lo + s.size, s.name, i + 1};
        L.host_arguments.push_back(h);
      }
  }
}

[[noreturn]] void bad_launch(Launch& L, const std::string& why) {
  L.failed = true;
  L.hazard_kind = "bad launch";
  L.hazard_message = "moacert simt: bad launch of kernel " + std::string(L.kernel) + ": " + why;
  throw Hazard(L.hazard_kind, L.hazard_message);
}

// The launch as a work on its stream (streams.cpp), touching the device
// buffers it read and wrote; a race with unordered earlier work fails it.
void enqueue_launch(Launch& L, std::size_t stream, Site site) {
  std::vector<Touch> touches;
  for (std::size_t i : L.touched) {
    const Buffer& b = runtime.buffers[i];
    if (!runtime.device.holds(b.lo)) continue;  // host memory: refused at the access already
    if (b.counts.loads) touches.push_back({b.lo, b.hi, false, b.counts.name});
    if (b.counts.stores || b.counts.atomics) touches.push_back({b.lo, b.hi, true, b.counts.name});
  }
  const std::string why = enqueue_work(
      stream,
      "kernel " + std::string(L.kernel) + " (launched at " + describe_where(intern(site)) + ")",
      std::move(touches));
  if (why.empty()) return;
  L.failed = true;
  L.hazard_kind = "stream race";
  L.hazard_message = why;
  runtime.last_error = cudaErrorLaunchFailure;
  throw Hazard(L.hazard_kind, L.hazard_message);
}

}  // namespace

// ---- the launch ---------------------------------------------------------
void launch(const char* name, const Module& module, dim3 grid, dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, Body body, void* closure, Site site, const void* const* pointers,
            std::size_t n_pointers) {
  std::lock_guard lock(runtime.mutex);
  if (runtime.launch)
    throw Hazard("bad launch", "moacert simt: kernel " + std::string(name) +
                                   " launched from inside a kernel (dynamic "
                                   "parallelism is not emulated)");
  Launch L;
  L.kernel = name;
  L.grid = grid;
  L.block = block;
  L.shared_bytes = shared_bytes;
  L.launch_gen = ++runtime.launch_serial;
  const Options& opt = runtime.settings.options;
  struct Reset {
    Launch& L;
    bool opened = false;
    ~Reset() {
      if (opened) close_device();
      record_report(L);
      runtime.launch = nullptr;
      tls_current = nullptr;
    }
  } reset{L};
  runtime.launch = &L;
  const std::uint64_t threads = std::uint64_t(block.x) * block.y * block.z;
  const std::uint64_t blocks = std::uint64_t(grid.x) * grid.y * grid.z;
  // A launch that starts leaves the last error as it was (a failed
  // cudaFree before it stays the caller's to read, as on a GPU).
  const cudaError_t earlier = runtime.last_error;
  runtime.last_error = cudaErrorInvalidConfiguration;
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
  const long stream_at = stream_index(stream);
  if (stream_at < 0) {
    runtime.last_error = cudaErrorInvalidResourceHandle;
    char handle[32];
    std::snprintf(handle, sizeof handle, "%p", static_cast<const void*>(stream));
    bad_launch(L, std::string("on stream ") + handle +
                      ", which is no live stream (destroyed, or never created)");
  }
  runtime.last_error = earlier;
  install_fault_handler();
  L.block_threads = std::uint32_t(threads);
  if (module.dynamic_shared)
    L.dynamic_lo = reinterpret_cast<std::uintptr_t>(module.dynamic_shared());
  if (module.touch_tls) module.touch_tls();
  gather_segments();
  std::tie(L.shared_lo, L.shared_hi) = static_shared_of(module.kernel);
  find_shared_variables(L, module.kernel);
  host_arguments(L, pointers, n_pointers);
  if (L.shared_hi - L.shared_lo > runtime.shared_shadow.size())
    runtime.shared_shadow.assign(L.shared_hi - L.shared_lo, ByteShadow{});
  if (L.shared_hi - L.shared_lo > runtime.shared_in_flight.size())
    runtime.shared_in_flight.assign(L.shared_hi - L.shared_lo, 0);
  runtime.stacks.ensure(L.block_threads, opt.stack_bytes);
  L.stacks_lo = reinterpret_cast<std::uintptr_t>(runtime.stacks.base);
  L.stacks_hi = L.stacks_lo + runtime.stacks.slot_bytes * runtime.stacks.count;
  open_device();  // the kernel's device memory, until the launch ends
  reset.opened = true;
  // Blocks in a seeded order; the interleaving stream is seeded from it too.
  Rng order{{runtime.settings.seed ^ 0x5eed0b10c5ull}};
  L.schedule = Rng{{runtime.settings.seed * 0x2545f4914f6cdd1dull + 1}};
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
    runtime.last_error = cudaErrorLaunchFailure;
    std::rethrow_exception(L.kernel_exception);
  }
  if (L.failed) {
    runtime.last_error = cudaErrorLaunchFailure;
    throw Hazard(L.hazard_kind, L.hazard_message);
  }
  enqueue_launch(L, std::size_t(stream_at), site);
}

uint3 thread_idx() {
  return tls_current ? tls_current->tid : uint3{0, 0, 0};
}
uint3 block_idx() {
  return runtime.launch ? runtime.launch->block_idx : uint3{0, 0, 0};
}
dim3 block_dim() {
  return runtime.launch ? runtime.launch->block : dim3();
}
dim3 grid_dim() {
  return runtime.launch ? runtime.launch->grid : dim3();
}

}  // namespace moacert::simt::detail
