// Plain SIMT CUDA C++ on the host and, unchanged, on the device
// (docs/simt.md). Under nvcc this header is CUDA's own runtime and bf16
// headers plus `moacert_launch`; under a host compiler it declares the
// emulator of libmoacert_simt: the threads of a block are fibers, blocks
// run in a seeded order, and every load and store the compiler instruments
// (moacert-simt-c++ compiles with -fsanitize=thread, without libtsan) is
// checked for races, out-of-bounds and uninitialised shared reads, and
// counted.
//
// The one concession in user code is the launch:
//   moacert_launch(kernel, grid, block, shared_bytes, args...)
// which is `kernel<<<grid, block, shared_bytes>>>(args...)` under nvcc, and
//   moacert_launch_on(kernel, grid, block, shared_bytes, stream, args...)
// on a stream (a `void*` or a cudaStream_t): `kernel<<<grid, block,
// shared_bytes, stream>>>(args...)` under nvcc. The emulator runs a launch
// to its end before it returns, and keeps the order CUDA defines between
// streams, events and the host apart from that (docs/simt.md#streams): work
// that a GPU could still be running when the plugin's call returns, or that
// touches memory another stream's unordered work wrote, is reported.
#pragma once

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define moacert_launch(kernel, grid, block, shared_bytes, ...) \
  kernel<<<(grid), (block), (shared_bytes)>>>(__VA_ARGS__)
#define moacert_launch_on(kernel, grid, block, shared_bytes, stream, ...) \
  kernel<<<(grid), (block), (shared_bytes), static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__)

// A buffer's name is the emulator's (its per-buffer counters); the device
// keeps none, so that a launcher names its allocations unconditionally.
inline void moacert_simt_name_buffer(const void*, const char*) {}

#else  // the host emulator

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ---- the C entry points (stable ABI: moacert's plugin worker looks them up
// with dlsym in a plugin that was built against this header).
extern "C" {
// Out-of-bounds is judged against registered buffers: cudaMalloc registers
// its own; moacert's worker registers every tensor of a plugin call.
void moacert_simt_register_buffer(const void* ptr, std::size_t bytes, const char* name);
void moacert_simt_unregister_buffer(const void* ptr);
// Renames the registered buffer that starts at ptr (cudaMalloc's are
// "cudaMalloc#N"): its traffic is counted under this name
// (Counters::buffers). Does nothing for an address no buffer starts at.
void moacert_simt_name_buffer(const void* ptr, const char* name);
// Bounds the registered buffer that starts at ptr (a cudaMalloc
// allocation) to its `bytes` from `offset`: a kernel's access to the rest
// is out of bounds, while cudaMemcpy and cudaFree still see the whole
// allocation (moacert's worker keeps its guards around a device tensor
// this way). Does nothing for an address no buffer starts at.
void moacert_simt_bound_buffer(const void* ptr, std::size_t offset, std::size_t bytes);
// The seed of block order and fiber interleaving of the following launches.
void moacert_simt_set_schedule_seed(std::uint64_t seed);
// Counters and the first hazard since the last call, as one JSON object;
// returns its length (written truncated, NUL-terminated, into buf).
std::size_t moacert_simt_take_report(char* buf, std::size_t len);
// The message of a fault the emulator recognised in a signal handler (a
// fiber's stack overflow), or "" — async-signal-safe.
const char* moacert_simt_fault_message(void);
// The runtime call that set CUDA error `error` last, with its arguments
// and why (`cudaFree(0x7f…): not a live allocation (freed already)`), or
// "" when the emulator knows none (a launch's error is its hazard's).
const char* moacert_simt_error_call(int error);
// "" or why a MOACERT_SIMT_* setting is refused (not a whole number in its
// range): the worker refuses such a device at load, before any call.
const char* moacert_simt_settings_error(void);
// The emulator's CUDA runtime calls below under C names, for the worker's
// device tensors of a `cuda` plugin (docs/plugins.md#device-tensors). The
// calls themselves keep C++ linkage, so that they never collide with
// CUDA's runtime in a process that links both. (cudaError_t as int.)
int moacert_simt_cudaMalloc(void** ptr, std::size_t bytes);
int moacert_simt_cudaFree(void* ptr);
int moacert_simt_cudaMemcpy(void* dst, const void* src, std::size_t bytes, int kind);
int moacert_simt_cudaDeviceSynchronize(void);
int moacert_simt_cudaMemGetInfo(std::size_t* free, std::size_t* total);
int moacert_simt_cudaGetLastError(void);
const char* moacert_simt_cudaGetErrorString(int error);
// Streams and events (cudaStream_t, cudaEvent_t as void*): the worker's
// stream, and events on the host's clock for bench's timing of a device
// plugin's launches.
int moacert_simt_cudaStreamCreate(void** stream);
int moacert_simt_cudaStreamSynchronize(void* stream);
int moacert_simt_cudaEventCreate(void** event);
int moacert_simt_cudaEventRecord(void* event, void* stream);
int moacert_simt_cudaEventSynchronize(void* event);
int moacert_simt_cudaEventElapsedTime(float* ms, void* start, void* stop);
int moacert_simt_cudaEventDestroy(void* event);
// The plugin's call returns to the worker, which hands it `stream`: work
// enqueued since the last call that neither the host waited for nor
// `stream` is ordered after is an `unsynchronised work` hazard (in the
// report); then everything counts as done, as the worker synchronises.
void moacert_simt_call_returns(void* stream);
}

// ---- CUDA's vocabulary
#define __global__ __attribute__((noinline))
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
// `__shared__ float tile[64][65];` at block scope is a static thread_local:
// one instance for all fibers of a block (they share the launching OS
// thread), which the runtime finds as its module's TLS block, poisons at
// every block start and checks as shared memory. `extern __shared__ T a[];`
// declares the dynamic arena, which moacert-simt-c++ defines.
#define __shared__ thread_local

#if defined(__SANITIZE_THREAD__) || defined(MOACERT_SIMT_UNINSTRUMENTED)
#else
#warning \
    "moacert/simt.h: compile kernels with moacert-simt-c++ (or -fsanitize=thread, compile step only) so that their loads and stores are checked and counted"
#endif

// What the emulator's own helpers are: never instrumented (their accesses
// are reported explicitly) and never inlined, since GCC instruments code
// inlined into an instrumented function regardless of its attributes.
#define MOACERT_SIMT_HELPER __attribute__((no_sanitize("thread"), noinline))

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
      : x(x_), y(y_), z(z_) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};

// CUDA's vector types, aligned as its vector_types.h aligns them: a float4
// is one 16-byte access, at an address a GPU requires to be a multiple of
// 16 (else `misaligned address`), and so does the emulator.
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};
inline float2 make_float2(float x, float y) {
  return {x, y};
}
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
inline int2 make_int2(int x, int y) {
  return {x, y};
}
inline int4 make_int4(int x, int y, int z, int w) {
  return {x, y, z, w};
}
inline uint2 make_uint2(unsigned int x, unsigned int y) {
  return {x, y};
}
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  return {x, y, z, w};
}
inline double2 make_double2(double x, double y) {
  return {x, y};
}

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
using cudaError = cudaError_t;

cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes);
cudaError_t cudaDeviceSynchronize();
// total: MOACERT_SIMT_DEVICE_MEMORY, else the device's range; free: less
// the live allocations' bytes (exact: the worker's leak check reads it).
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);

// Streams and events, as CUDA's runtime declares them: opaque handles, 0
// the legacy default stream (whose work waits for the blocking streams'
// earlier work, and theirs for its).
struct CUstream_st;
struct CUevent_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
constexpr unsigned int cudaStreamDefault = 0x0;
constexpr unsigned int cudaStreamNonBlocking = 0x1;
constexpr unsigned int cudaEventDefault = 0x0;
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);
cudaError_t cudaEventDestroy(cudaEvent_t event);

namespace moacert::simt {

// One buffer's share of a launch's global traffic: the loads, stores and
// atomic function calls of the launch that hit it (docs/simt.md#counters).
struct BufferCounters {
  std::string name;  // as registered (or moacert_simt_name_buffer), or kModuleData
  std::uint64_t loads = 0, load_bytes = 0;
  std::uint64_t stores = 0, store_bytes = 0;
  std::uint64_t atomics = 0;  // atomic function calls, any kind
  BufferCounters& operator+=(const BufferCounters& o);
};
// The name of the global traffic that hits no registered buffer: writable
// module data (`__device__` variables).
inline constexpr const char* kModuleData = "(module data)";

// Per-launch counts of source-level operations (docs/simt.md#counters).
struct Counters {
  enum Atomic { add, max, min, exch, cas, n_atomic_kinds };
  enum Space { global, shared, n_spaces };
  std::uint64_t blocks = 0, threads = 0;
  std::uint64_t barriers = 0;  // completed __syncthreads*, once per block
  std::uint64_t warp_ops = 0;  // completed warp collectives, once per group of lanes
  std::uint64_t global_loads = 0, global_load_bytes = 0;
  std::uint64_t global_stores = 0, global_store_bytes = 0;
  std::uint64_t shared_loads = 0, shared_load_bytes = 0;
  std::uint64_t shared_stores = 0, shared_store_bytes = 0;
  std::uint64_t atomics[n_spaces][n_atomic_kinds] = {};
  // The global loads, stores and atomics above by the buffer they hit: the
  // buffers a launch touched, in the order they were registered, then
  // kModuleData if touched. They sum to global_loads ... global_store_bytes
  // and to the atomics[global] of every kind. operator+= merges them by name.
  std::vector<BufferCounters> buffers;
  Counters& operator+=(const Counters& o);
  // The totals, without `buffers`: moacert_simt_take_report's object, which
  // the plugin worker's reply carries in a fixed 2 KiB (kernels/plugin).
  std::string json() const;
};

// A hazard or a bad launch, as the emulator found it. `kind` is one of
// "shared race", "global race", "divergent barrier", "deadlock",
// "warp mask", "out of bounds", "uninitialised shared read",
// "misaligned access", "async copy race", "stream race" (a launch on a
// stream, unordered with earlier work that touched its memory), "bad
// launch"; "unsynchronised work" is reported by moacert_simt_call_returns.
class Hazard : public std::runtime_error {
 public:
  Hazard(std::string kind, const std::string& message)
      : std::runtime_error(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

struct Options {
  std::size_t stack_bytes = 256 * 1024;          // per fiber, plus a guard page
  std::size_t dynamic_shared_limit = 48 * 1024;  // at most kMaxDynamicShared
  std::uint32_t yield_every_accesses = 0;        // 0: switch at synchronisation points only
  // false: the runtime's own checks and counts of accesses (those of
  // ldmatrix, cp.async and atomics; the compiler's callbacks too) are off.
  // Only for timing the same source built without instrumentation against
  // the emulator (bench/simt_native_bench.cpp); certify never clears it.
  bool check_accesses = true;
};
constexpr std::size_t kMaxDynamicShared = 227 * 1024;
void set_options(const Options& options);
Options options();
void set_schedule_seed(std::uint64_t seed);
// The counters of the most recent launch on this process.
Counters last_launch_counters();

namespace detail {

struct Site {  // a source location of an emulator call
  const char* file;
  unsigned line;
};

struct Module {               // where a launch's kernel lives, for its shared memory
  const void* kernel;         // an address inside the module
  void* (*touch_tls)();       // allocates the module's TLS block on this OS thread
  void* (*dynamic_shared)();  // the module's dynamic arena, or null
};

using Body = void (*)(void* closure);
// `pointers`: each parameter's value if it is a pointer, else null (host
// memory handed to the kernel is told apart from device memory by them).
// `stream`: the stream it is launched on (null: the legacy default stream).
void launch(const char* name, const Module& module, dim3 grid, dim3 block, std::size_t shared_bytes,
            cudaStream_t stream, Body body, void* closure, Site site, const void* const* pointers,
            std::size_t n_pointers);

uint3 thread_idx();
uint3 block_idx();
dim3 block_dim();
dim3 grid_dim();

enum class WarpOp : int {
  sync,
  shfl,
  shfl_up,
  shfl_down,
  shfl_xor,
  ballot,
  any,
  all,
  mma,
  ldmatrix
};
std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width,
                              Site site);
unsigned active_mask();

// Tensor cores (include/moacert/tensor_core.h, docs/simt.md#tensor-cores): the
// warp-collective instructions, each over the 32 lanes' own operands.
enum class MmaInput : int { bf16, f16 };
struct MmaOperands {  // one lane's registers of mma.m16n8k16.row.col, f32 accumulators
  std::uint32_t a[4], b[2];
  float c[4], d[4];
};
void mma_m16n8k16(MmaInput input, MmaOperands* lane, Site site);
// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16: `row` is this
// lane's row address (lanes 0 .. 8*count-1 give one each); out[count].
void ldmatrix(int count, bool trans, const void* row, std::uint32_t* out, Site site);
// cp.async.{ca,cg}.shared.global of `bytes` (4, 8, 16; .cg: 16), its
// commit_group and wait_group (docs/simt.md#tensor-cores).
void async_copy(void* dst, const void* src, int bytes, bool cache_global, Site site);
void async_commit_group(Site site);
void async_wait_group(int pending, Site site);
int block_barrier(int reduce_kind, int predicate, Site site);  // 0 plain, 1 count, 2 and, 3 or
void atomic_access(void* address, std::size_t bytes, Counters::Atomic kind, Site site);
void fence();

template <class T>
std::uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "moacert simt: warp shuffles of types wider than 8 bytes are not emulated");
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}
template <class T>
T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

template <class Kernel, class Params>
struct Closure {
  Kernel kernel;
  Params params;
};
// Not instrumented: the parameters live on the launching host stack, and
// the kernel receives its own copies on its fiber's stack, as on a device.
// (std::apply would be an instrumented function of the user's translation
// unit reading the parameters.)
template <class Kernel, class Params, std::size_t... I>
MOACERT_SIMT_HELPER void call_kernel(Closure<Kernel, Params>* closure, std::index_sequence<I...>) {
  closure->kernel(std::get<I>(closure->params)...);
}
template <class Kernel, class Params>
MOACERT_SIMT_HELPER void run_closure(void* c) {
  call_kernel(static_cast<Closure<Kernel, Params>*>(c),
              std::make_index_sequence<std::tuple_size_v<Params>>());
}

template <class T>
MOACERT_SIMT_HELPER const void* pointer_value(const T& v) {
  if constexpr (std::is_pointer_v<T>)
    return reinterpret_cast<const void*>(v);
  else
    return nullptr;
}
template <class Params, std::size_t... I>
MOACERT_SIMT_HELPER void pointer_values(const Params& params, const void** out,
                                        std::index_sequence<I...>) {
  ((out[I] = pointer_value(std::get<I>(params))), ...);
}

template <class... P, class... A>
MOACERT_SIMT_HELPER void launch_kernel(const char* name, void (*kernel)(P...), const Module& module,
                                       dim3 grid, dim3 block, std::size_t shared_bytes,
                                       cudaStream_t stream, Site site, A&&... args) {
  using Params = std::tuple<std::decay_t<P>...>;
  Closure<void (*)(P...), Params> closure{kernel, Params(std::forward<A>(args)...)};
  const void* pointers[sizeof...(P) + 1] = {};
  pointer_values(closure.params, pointers, std::index_sequence_for<P...>());
  launch(name, module, grid, block, shared_bytes, stream, &run_closure<void (*)(P...), Params>,
         &closure, site, pointers, sizeof...(P));
}

}  // namespace detail
}  // namespace moacert::simt

// Defined by moacert-simt-c++ in a module with `extern __shared__` arrays.
extern "C" __attribute__((weak, visibility("hidden"))) void* moacert_simt_dynamic_shared_(void);
namespace {
// A module's TLS block (its __shared__ arrays) exists on an OS thread only
// after the thread touched it; a launch touches it through this anchor.
thread_local char moacert_simt_tls_anchor_;
MOACERT_SIMT_HELPER inline void* moacert_simt_touch_tls_() {
  return &moacert_simt_tls_anchor_;
}
}  // namespace

#define moacert_launch_on(kernel, grid, block, shared_bytes, stream, ...)                       \
  ::moacert::simt::detail::launch_kernel(                                                       \
      #kernel, kernel,                                                                          \
      ::moacert::simt::detail::Module{reinterpret_cast<const void*>(&kernel),                   \
                                      &moacert_simt_touch_tls_, &moacert_simt_dynamic_shared_}, \
      dim3(grid), dim3(block), std::size_t(shared_bytes), static_cast<cudaStream_t>(stream),    \
      ::moacert::simt::detail::Site{__builtin_FILE(), __builtin_LINE()} __VA_OPT__(, )          \
          __VA_ARGS__)

#define moacert_launch(kernel, grid, block, shared_bytes, ...) \
  moacert_launch_on(kernel, grid, block, shared_bytes, nullptr __VA_OPT__(, ) __VA_ARGS__)

#define threadIdx (::moacert::simt::detail::thread_idx())
#define blockIdx (::moacert::simt::detail::block_idx())
#define blockDim (::moacert::simt::detail::block_dim())
#define gridDim (::moacert::simt::detail::grid_dim())
constexpr int warpSize = 32;

// ---- synchronisation
// The caller's location as two defaulted parameters: constants at the call
// site (reading a std::source_location would be an instrumented load).
#define MOACERT_SIMT_HERE \
  const char *loc_file = __builtin_FILE(), unsigned loc_line = __builtin_LINE()
#define MOACERT_SIMT_SITE         \
  ::moacert::simt::detail::Site { \
    loc_file, loc_line            \
  }

inline void __syncthreads(MOACERT_SIMT_HERE) {
  ::moacert::simt::detail::block_barrier(0, 1, MOACERT_SIMT_SITE);
}
inline int __syncthreads_count(int predicate, MOACERT_SIMT_HERE) {
  return ::moacert::simt::detail::block_barrier(1, predicate, MOACERT_SIMT_SITE);
}
inline int __syncthreads_and(int predicate, MOACERT_SIMT_HERE) {
  return ::moacert::simt::detail::block_barrier(2, predicate, MOACERT_SIMT_SITE);
}
inline int __syncthreads_or(int predicate, MOACERT_SIMT_HERE) {
  return ::moacert::simt::detail::block_barrier(3, predicate, MOACERT_SIMT_SITE);
}
inline void __threadfence() {
  ::moacert::simt::detail::fence();
}
inline void __threadfence_block() {
  ::moacert::simt::detail::fence();
}

inline void __syncwarp(unsigned mask = 0xffffffffu, MOACERT_SIMT_HERE) {
  ::moacert::simt::detail::warp_collective(::moacert::simt::detail::WarpOp::sync, mask, 0, 0, 32,
                                           MOACERT_SIMT_SITE);
}
inline unsigned __activemask() {
  return ::moacert::simt::detail::active_mask();
}

#define MOACERT_SIMT_SHUFFLE(name, op)                                                         \
  template <class T>                                                                           \
  inline T name(unsigned mask, T var, int arg, int width = warpSize, MOACERT_SIMT_HERE) {      \
    return ::moacert::simt::detail::from_bits<T>(::moacert::simt::detail::warp_collective(     \
        op, mask, ::moacert::simt::detail::to_bits(var), int(arg), width, MOACERT_SIMT_SITE)); \
  }
MOACERT_SIMT_SHUFFLE(__shfl_sync, ::moacert::simt::detail::WarpOp::shfl)
MOACERT_SIMT_SHUFFLE(__shfl_up_sync, ::moacert::simt::detail::WarpOp::shfl_up)
MOACERT_SIMT_SHUFFLE(__shfl_down_sync, ::moacert::simt::detail::WarpOp::shfl_down)
MOACERT_SIMT_SHUFFLE(__shfl_xor_sync, ::moacert::simt::detail::WarpOp::shfl_xor)
#undef MOACERT_SIMT_SHUFFLE

inline unsigned __ballot_sync(unsigned mask, int predicate, MOACERT_SIMT_HERE) {
  return unsigned(::moacert::simt::detail::warp_collective(
      ::moacert::simt::detail::WarpOp::ballot, mask, predicate != 0, 0, 32, MOACERT_SIMT_SITE));
}
inline int __any_sync(unsigned mask, int predicate, MOACERT_SIMT_HERE) {
  return int(::moacert::simt::detail::warp_collective(::moacert::simt::detail::WarpOp::any, mask,
                                                      predicate != 0, 0, 32, MOACERT_SIMT_SITE));
}
inline int __all_sync(unsigned mask, int predicate, MOACERT_SIMT_HERE) {
  return int(::moacert::simt::detail::warp_collective(::moacert::simt::detail::WarpOp::all, mask,
                                                      predicate != 0, 0, 32, MOACERT_SIMT_SITE));
}

// ---- atomics: reported to the runtime as atomic accesses (so that two
// atomicAdds are no race), then done by an uninstrumented helper. Fibers
// run on one OS thread, so a plain read-modify-write is atomic here.
namespace moacert::simt::detail {
template <class T, class F>
MOACERT_SIMT_HELPER T atomic_rmw(T* address, Counters::Atomic kind, Site site, F update) {
  atomic_access(address, sizeof(T), kind, site);
  const T old = *address;
  *address = update(old);
  return old;
}
}  // namespace moacert::simt::detail

#define MOACERT_SIMT_ATOMIC(name, kind, T, expr)                                                  \
  inline T name(T* address, T val, MOACERT_SIMT_HERE) {                                           \
    return ::moacert::simt::detail::atomic_rmw(address, ::moacert::simt::Counters::kind,          \
                                               MOACERT_SIMT_SITE, [val](T old) { return expr; }); \
  }
MOACERT_SIMT_ATOMIC(atomicAdd, add, int, old + val)
MOACERT_SIMT_ATOMIC(atomicAdd, add, unsigned int, old + val)
MOACERT_SIMT_ATOMIC(atomicAdd, add, unsigned long long, old + val)
MOACERT_SIMT_ATOMIC(atomicAdd, add, float, old + val)
MOACERT_SIMT_ATOMIC(atomicAdd, add, double, old + val)
MOACERT_SIMT_ATOMIC(atomicMax, max, int, old < val ? val : old)
MOACERT_SIMT_ATOMIC(atomicMax, max, unsigned int, old < val ? val : old)
MOACERT_SIMT_ATOMIC(atomicMax, max, unsigned long long, old < val ? val : old)
MOACERT_SIMT_ATOMIC(atomicMin, min, int, val < old ? val : old)
MOACERT_SIMT_ATOMIC(atomicMin, min, unsigned int, val < old ? val : old)
MOACERT_SIMT_ATOMIC(atomicMin, min, unsigned long long, val < old ? val : old)
MOACERT_SIMT_ATOMIC(atomicExch, exch, int, ((void)old, val))
MOACERT_SIMT_ATOMIC(atomicExch, exch, unsigned int, ((void)old, val))
MOACERT_SIMT_ATOMIC(atomicExch, exch, unsigned long long, ((void)old, val))
MOACERT_SIMT_ATOMIC(atomicExch, exch, float, ((void)old, val))
#undef MOACERT_SIMT_ATOMIC

#define MOACERT_SIMT_ATOMIC_CAS(T)                                                                 \
  inline T atomicCAS(T* address, T compare, T val, MOACERT_SIMT_HERE) {                            \
    return ::moacert::simt::detail::atomic_rmw(address, ::moacert::simt::Counters::cas,            \
                                               MOACERT_SIMT_SITE,                                  \
                                               [=](T old) { return old == compare ? val : old; }); \
  }
MOACERT_SIMT_ATOMIC_CAS(int)
MOACERT_SIMT_ATOMIC_CAS(unsigned int)
MOACERT_SIMT_ATOMIC_CAS(unsigned long long)
#undef MOACERT_SIMT_ATOMIC_CAS

// ---- float math. The host functions are glibc's (correctly rounded or
// within 1 ulp); the device's are within the error bounds of the CUDA C
// Programming Guide, which docs/simt.md#math states and which a
// certificate's bound must cover.
inline float __expf(float x) {
  return std::exp(x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __log2f(float x) {
  return std::log2(x);
}
inline float __powf(float x, float y) {
  return std::pow(x, y);
}
inline float __fdividef(float x, float y) {
  return x / y;
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline int __float_as_int(float x) {
  return std::bit_cast<int>(x);
}
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
inline unsigned __float_as_uint(float x) {
  return std::bit_cast<unsigned>(x);
}
inline float __uint_as_float(unsigned x) {
  return std::bit_cast<float>(x);
}
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(unsigned(x));
}
// expf, exp2f, logf, fmaf, fmaxf, fminf, sqrtf are <cmath>'s (glibc's).

// ---- bf16: conversions round to nearest, ties to even, as cuda_bf16.h's
// __float2bfloat16 does; a NaN stays a (quiet) NaN.
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(from_float(f)) {}
  operator float() const { return std::bit_cast<float>(std::uint32_t(__x) << 16); }
  static unsigned short from_float(float f) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    if (std::isnan(f)) return static_cast<unsigned short>((u >> 16) | 0x40u);
    const std::uint32_t lsb = (u >> 16) & 1u;
    return static_cast<unsigned short>((u + 0x7fffu + lsb) >> 16);
  }
};
using nv_bfloat16 = __nv_bfloat16;
inline __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16(f);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16(f);
}
inline float __bfloat162float(__nv_bfloat16 b) {
  return float(b);
}

// ---- f16 (IEEE binary16): conversions round to nearest, ties to even, as
// cuda_fp16.h's __float2half does, subnormals included; a magnitude from
// 65520 (halfway past the largest finite, 65504) up becomes infinity; a NaN
// stays a quiet NaN.
struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) : __x(from_float(f)) {}
  operator float() const {
    const std::uint32_t sign = std::uint32_t(__x & 0x8000u) << 16;
    const std::uint32_t biased = (__x >> 10) & 0x1fu, fraction = __x & 0x3ffu;
    if (biased == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));
    if (biased == 0) {  // zero or subnormal: fraction 2^-24, exact in f32
      const float magnitude = std::ldexp(float(fraction), -24);
      return sign ? -magnitude : magnitude;
    }
    return std::bit_cast<float>(sign | ((biased + 127 - 15) << 23) | (fraction << 13));
  }
  static unsigned short from_float(float f) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (u >> 16) & 0x8000u, magnitude = u & 0x7fffffffu;
    if (magnitude > 0x7f800000u)  // NaN: quiet, the payload's top bits kept
      return static_cast<unsigned short>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    if (magnitude >= 0x477ff000u) return static_cast<unsigned short>(sign | 0x7c00u);  // >= 65520
    if (magnitude < 0x38800000u) {  // below 2^-14: a multiple of 2^-24, or 0
      if (magnitude <= 0x33000000u) return static_cast<unsigned short>(sign);  // <= 2^-25: tie to 0
      const int shift = 126 - int(magnitude >> 23);  // f32 significand ulp 2^(e-150) -> 2^-24
      const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
      std::uint32_t q = significand >> shift;
      const std::uint32_t rest = significand & ((1u << shift) - 1u), tie = 1u << (shift - 1);
      if (rest > tie || (rest == tie && (q & 1u))) ++q;  // may carry into 2^-14: still right
      return static_cast<unsigned short>(sign | q);
    }
    // normal: rebias the exponent (127 -> 15), drop 13 fraction bits rounding to even
    const std::uint32_t lsb = (magnitude >> 13) & 1u;
    return static_cast<unsigned short>(sign | ((magnitude - 0x38000000u + 0xfffu + lsb) >> 13));
  }
};
inline __half __float2half(float f) {
  return __half(f);
}
inline __half __float2half_rn(float f) {
  return __half(f);
}
inline float __half2float(__half h) {
  return float(h);
}

// ---- out of scope on the host, refused at compile time.
namespace nvcuda::wmma {
struct matrix_a;
struct matrix_b;
struct accumulator;
struct row_major;
struct col_major;
template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M < 0 && M >= 0,
                "moacert simt: tensor-core intrinsics (wmma/mma) cannot run on the host emulator");
};
template <class... T>
void load_matrix_sync(T&&...) {
  static_assert(sizeof...(T) < 0,
                "moacert simt: tensor-core intrinsics (wmma/mma) cannot run on the host emulator");
}
template <class... T>
void mma_sync(T&&...) {
  static_assert(sizeof...(T) < 0,
                "moacert simt: tensor-core intrinsics (wmma/mma) cannot run on the host emulator");
}
}  // namespace nvcuda::wmma
namespace cooperative_groups {
template <class... T>
void this_thread_block(T...) {
  static_assert(sizeof...(T) < 0,
                "moacert simt: cooperative groups are not emulated; use __syncthreads and the "
                "*_sync warp functions");
}
}  // namespace cooperative_groups
   // Inline PTX has no host meaning: any later `asm` is an error whose note
   // points here ("poisoned here"). Host code that needs `asm` uses __asm__.
#pragma GCC poison asm

#endif  // __CUDACC__
