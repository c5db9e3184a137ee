// A CUDA plugin (rmsnorm, f32) for the SIMT emulator with one planted
// fault, chosen by a macro (tests/plugins/CMakeLists.txt):
//   FAULT_RACE   the block's sum of squares is read before the barrier
//                that orders it: a shared race, a counterexample
//   FAULT_STACK  a register array too large for a fiber's stack: the
//                worker dies, and the emulator's message names the kernel
//   FAULT_SHARED_PAST  the last thread writes its partial sum one element
//                past the static __shared__ array `partial`, into no other
//                variable: out of bounds of `partial`
//   FAULT_NONE   correct (row-major tensors: accepts_strided = 0)
// and, declaring device "cuda" (its tensors in the emulator's device memory,
// docs/plugins.md#device-tensors; each run refuses host tensors):
//   FAULT_DEVICE_NONE     correct
//   FAULT_DEVICE_PAST     writes the 4 bytes just past y (its guard)
//   FAULT_DEVICE_BEFORE   writes the 8 bytes just before y
//   FAULT_DEVICE_INPUT    writes into x
//   FAULT_DEVICE_FAR      writes 4 MiB past y, in no buffer: out of bounds
//   FAULT_DEVICE_HANG     the first thread of each block spins forever
//   FAULT_DEVICE_REFUSES  envelope D in 1..64, refuses an odd D inside it
//   FAULT_DEVICE_OUTSIDE  envelope D in {16, 32}, refuses any other D
//   FAULT_DEVICE_GAPS     correct, strided (accepts_strided = 1), and checks
//                         that the gaps of a padded x are poison (all ones)
// and, device memory as a GPU defines it (issue 47):
//   FAULT_DEVICE_READ_PAST     reads the 4 bytes just past w (its guard)
//   FAULT_DEVICE_HOST_HEAP     hands the kernel w copied into a heap buffer
//   FAULT_DEVICE_HOST_STATIC   hands the kernel w copied into a static array
//   FAULT_DEVICE_FREE_INPUT    cudaFree of x (not an allocation: inside one)
//   FAULT_DEVICE_FREE_TWICE    frees its scratch twice
//   FAULT_DEVICE_COPY_PAST     cudaMemcpy of 1 MiB from x, past its allocation
//   FAULT_DEVICE_MEMSET_PAST   cudaMemset of 1 MiB at y, past its allocation
//   FAULT_DEVICE_HOST_READ     reads w[0] on the host, through its device pointer
//   FAULT_DEVICE_HOST_WRITE    writes y[0] on the host after the launch
//   FAULT_DEVICE_VEC4          correct: w[0..3] loaded as one aligned float4
//   FAULT_DEVICE_MISALIGNED    the same float4 loaded from w + 1: misaligned
//   FAULT_DEVICE_DYNAMIC       correct: the partial sums in dynamic shared
//                              memory, as many bytes as the block needs
//   FAULT_DEVICE_DYNAMIC_PAST  the same launched with half of those bytes
// and, device memory held from call to call:
//   FAULT_DEVICE_LEAK       allocates 256 bytes each call, never freed
//   FAULT_DEVICE_WORKSPACE  correct: 256 bytes allocated on its first call
//                           and kept, a workspace of every later one
//   FAULT_DEVICE_STALE_W    w kept in a device cache allocated on its first
//                           call (envelope D in 1..4096), refreshed only by a
//                           call wider than every call before: right alone,
//                           wrong after a wider call (depends on earlier calls)
//   FAULT_DEVICE_CACHED_W   correct: the same cache, refreshed on every call
// and, rows past a fixed grid (issue 47, item 6):
//   FAULT_DEVICE_FIXED_GRID  a grid of min(T, 1024) blocks, one row each:
//                            rows from 1024 on never written, right below
//                            (the deployment envelope's token counts reach them)
// and, streams and events (values right: the emulator runs eagerly):
//   FAULT_DEVICE_STREAM_UNSYNCED  the kernel on a stream of its own, not
//                                 synchronised before the call returns
//   FAULT_DEVICE_STREAM_SYNCED    correct: the same, cudaStreamSynchronize'd
//   FAULT_DEVICE_STREAM_WAITED    correct: the stream moacert hands waits for
//                                 an event recorded after the kernel
//   FAULT_DEVICE_STREAM_RACE      y copied on a second stream while the
//                                 kernel that writes it is unordered with it
//   FAULT_DEVICE_STREAM_ORDERED   correct: the same copy after the second
//                                 stream waits for the kernel's event
//   FAULT_DEVICE_STREAM_LEGACY    correct: the copy on the legacy default
//                                 stream, which waits for a blocking stream
//   FAULT_DEVICE_STREAM_NONBLOCKING  the same with the kernel on a
//                                 non-blocking stream, which it does not
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "moacert/plugin.h"
#include "moacert/simt.h"

#if defined(FAULT_DEVICE_STREAM_UNSYNCED) || defined(FAULT_DEVICE_STREAM_SYNCED) || \
    defined(FAULT_DEVICE_STREAM_WAITED) || defined(FAULT_DEVICE_STREAM_RACE) ||     \
    defined(FAULT_DEVICE_STREAM_ORDERED) || defined(FAULT_DEVICE_STREAM_LEGACY) ||  \
    defined(FAULT_DEVICE_STREAM_NONBLOCKING)
#define OWN_STREAM 1
#endif
#if defined(FAULT_DEVICE_STALE_W) || defined(FAULT_DEVICE_CACHED_W)
#define CACHE_W 1
constexpr int kCacheFloats = 4096;  // the envelope's widest D
#endif
#if defined(FAULT_DEVICE_NONE) || defined(FAULT_DEVICE_PAST) || defined(FAULT_DEVICE_BEFORE) ||   \
    defined(FAULT_DEVICE_INPUT) || defined(FAULT_DEVICE_FAR) || defined(FAULT_DEVICE_HANG) ||     \
    defined(FAULT_DEVICE_REFUSES) || defined(FAULT_DEVICE_OUTSIDE) ||                             \
    defined(FAULT_DEVICE_GAPS) || defined(FAULT_DEVICE_READ_PAST) ||                              \
    defined(FAULT_DEVICE_HOST_HEAP) || defined(FAULT_DEVICE_HOST_STATIC) ||                       \
    defined(FAULT_DEVICE_FREE_INPUT) || defined(FAULT_DEVICE_FREE_TWICE) ||                       \
    defined(FAULT_DEVICE_COPY_PAST) || defined(FAULT_DEVICE_MEMSET_PAST) ||                       \
    defined(FAULT_DEVICE_VEC4) || defined(FAULT_DEVICE_MISALIGNED) ||                             \
    defined(FAULT_DEVICE_DYNAMIC) || defined(FAULT_DEVICE_DYNAMIC_PAST) ||                        \
    defined(FAULT_DEVICE_HOST_READ) || defined(FAULT_DEVICE_HOST_WRITE) || defined(OWN_STREAM) || \
    defined(FAULT_DEVICE_LEAK) || defined(FAULT_DEVICE_WORKSPACE) || defined(CACHE_W) ||          \
    defined(FAULT_DEVICE_FIXED_GRID)
#define ON_DEVICE 1
#endif
#if defined(FAULT_DEVICE_VEC4) || defined(FAULT_DEVICE_MISALIGNED)
#define VEC4_W 1
#endif
#if defined(FAULT_DEVICE_DYNAMIC) || defined(FAULT_DEVICE_DYNAMIC_PAST)
#define DYNAMIC_PARTIAL 1
#endif

constexpr int THREADS = 32;

#if defined(DYNAMIC_PARTIAL)
// Outside the unnamed namespace: the arena moacert-simt-c++ defines must
// be able to name it (docs/simt.md, limits).
extern __shared__ float dynamic_partial[];  // (THREADS)
#endif

namespace {

// xs, ys: row strides; xd, yd, ws: element strides.
__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, int D, long long xs,
                               long long xd, long long ys, long long yd, long long ws, float eps) {
#if defined(DYNAMIC_PARTIAL)
  float* partial = dynamic_partial;  // (THREADS), as many floats as the launch gave
#else
  __shared__ float partial[THREADS];  // (THREADS)
#endif
  const int t = blockIdx.x;
  float ss = 0.0f;
  for (int d = threadIdx.x; d < D; d += THREADS) {
    const float v = x[t * xs + d * xd];
    ss += v * v;
  }
#if defined(FAULT_RACE)
  // Written once before, so that the planted race is a race in every
  // schedule (not, when a reader runs first, an uninitialised read).
  partial[threadIdx.x] = 0.0f;
  __syncthreads();
  partial[threadIdx.x] = ss;  // planted: no barrier between this and the reads
#elif defined(FAULT_SHARED_PAST)
  // Planted: the last thread one element past `partial` (its index is not
  // a constant, which the compiler would refuse).
  partial[threadIdx.x + (threadIdx.x + 1 == blockDim.x ? 1 : 0)] = ss;
  __syncthreads();
#else
  partial[threadIdx.x] = ss;
  __syncthreads();
#endif
  float total = 0.0f;
  for (int k = 0; k < THREADS; ++k) total += partial[k];
#if defined(FAULT_STACK)
  volatile float spill[1 << 17];  // 512 KiB: beyond the 256 KiB fiber stack
  for (int k = 0; k < (1 << 17); k += 512) spill[k] = total;
  total = spill[threadIdx.x];
#endif
  const float r = rsqrtf(total / float(D) + eps);
#if defined(VEC4_W)
  // w[0..3] as one float4 (w is row-major: accepts_strided = 0), copied whole
  // into shared memory: one 16-byte load, 16-byte aligned at w itself.
  __shared__ float4 w4;
#if defined(FAULT_DEVICE_MISALIGNED)
  const int from = 1;  // planted: w + 1 is 4 bytes past a 16-byte boundary
#else
  const int from = 0;
#endif
  // Written whatever D (GCC may load w4.x before it tests D); w[0..4] exist
  // from D = 5.
  if (threadIdx.x == 0) {
    if (D >= 5)
      w4 = *reinterpret_cast<const float4*>(w + from);
    else
      w4 = make_float4(w[0], 0.0f, 0.0f, 0.0f);
  }
  __syncthreads();
  for (int d = threadIdx.x; d < D; d += THREADS)
    y[t * ys + d * yd] = x[t * xs + d * xd] * r * (d == 0 ? w4.x : w[d * ws]);
#else
  for (int d = threadIdx.x; d < D; d += THREADS)
    y[t * ys + d * yd] = x[t * xs + d * xd] * r * w[d * ws];
#endif
#if defined(FAULT_DEVICE_PAST)
  // Planted: the last row's thread 0 writes one element past y's end.
  if (t == int(gridDim.x) - 1 && threadIdx.x == 0) y[t * ys + D * yd] = 0.0f;
#elif defined(FAULT_DEVICE_BEFORE)
  // Planted: the first row's thread 0 writes two elements before y.
  if (t == 0 && threadIdx.x == 0) y[-2] = y[-1] = 0.0f;
#elif defined(FAULT_DEVICE_INPUT)
  __syncthreads();                                             // every thread has read x
  if (threadIdx.x == 0) const_cast<float*>(x)[t * xs] = 0.0f;  // planted: an input written
#elif defined(FAULT_DEVICE_READ_PAST)
  // Planted: the last row's thread 0 reads the element just past w (its
  // value unused: the read alone is the fault, as on a GPU).
  if (t == int(gridDim.x) - 1 && threadIdx.x == 0 && w[D * ws] == 12345.0f) y[t * ys] = 0.0f;
#elif defined(FAULT_DEVICE_FAR)
  if (threadIdx.x == 0) y[t * ys + (1 << 20)] = 0.0f;  // planted: in no buffer
#elif defined(FAULT_DEVICE_HANG)
  volatile int spin = 0;
  if (threadIdx.x == 0)
    for (;;) (void)spin;            // planted: never returns
#endif
}

#if defined(FAULT_DEVICE_GAPS)
// "" when every gap of a rank-2 f32 tensor is all ones, else where not;
// says once, on stderr, that a padded one was seen.
std::string gaps_not_poison(const DLTensor* t) {
  const long long rows = t->shape[0], cols = t->shape[1];
  if (rows == 0 || cols == 0) return "";
  const long long span = (rows - 1) * t->strides[0] + (cols - 1) * t->strides[1] + 1;
  std::vector<bool> element(static_cast<std::size_t>(span), false);
  for (long long r = 0; r < rows; ++r)
    for (long long c = 0; c < cols; ++c)
      element[static_cast<std::size_t>(r * t->strides[0] + c * t->strides[1])] = true;
  // Device memory is not the host's (a GPU's, and the emulator's outside
  // kernels and runtime calls): the span is copied to the host first.
  std::vector<unsigned char> bytes(static_cast<std::size_t>(span) * 4);
  if (cudaMemcpy(bytes.data(), t->data, bytes.size(), cudaMemcpyDeviceToHost) != cudaSuccess)
    return "cannot copy x to the host";
  long long gaps = 0;
  for (long long k = 0; k < span; ++k) {
    if (element[static_cast<std::size_t>(k)]) continue;
    ++gaps;
    for (int b = 0; b < 4; ++b)
      if (bytes[4 * k + b] != 0xff) return "gap element " + std::to_string(k) + " is not poison";
  }
  static bool said = false;
  if (gaps > 0 && !said) std::fprintf(stderr, "faulty_cuda: a padded x, its gaps poison\n");
  said = said || gaps > 0;
  return "";
}
#endif

int rmsnorm_f32(const DLTensor* const* in, int n_in, DLTensor* const* out, int n_out,
                const char* params, char* err, std::size_t err_len) {
  if (n_in != 2 || n_out != 1) {
    std::snprintf(err, err_len, "rmsnorm: expected 2 inputs and 1 output");
    return 1;
  }
  const DLTensor *x = in[0], *w = in[1];  // row-major contiguous unless kStrided
  DLTensor* y = out[0];
#if defined(ON_DEVICE)
  // A device kernel is handed device tensors and a stream, or fails.
  for (const DLTensor* t : {x, w, static_cast<const DLTensor*>(y)})
    if (t->device.device_type != kDLCUDA) {
      std::snprintf(err, err_len, "rmsnorm: a host tensor handed to a device kernel");
      return 1;
    }
  if (!std::strstr(params, "\"stream\":")) {
    std::snprintf(err, err_len, "rmsnorm: no stream in %s", params);
    return 1;
  }
#endif
#if defined(FAULT_DEVICE_GAPS)
  // Every byte of x's span that no element covers must hold the poison
  // moacert filled it with.
  if (std::string why = gaps_not_poison(x); !why.empty()) {
    std::snprintf(err, err_len, "%s", why.c_str());
    return 1;
  }
#elif defined(FAULT_DEVICE_REFUSES)
  if (x->shape[1] % 2 == 1) {
    std::snprintf(err, err_len, "planted refusal: odd D = %lld", (long long)x->shape[1]);
    return MOACERT_UNSUPPORTED;
  }
#elif defined(FAULT_DEVICE_OUTSIDE)
  if (x->shape[1] != 16 && x->shape[1] != 32) {
    std::snprintf(err, err_len, "D = %lld, built for 16 and 32 only", (long long)x->shape[1]);
    return MOACERT_UNSUPPORTED;
  }
#endif
  const float* w_data = static_cast<const float*>(w->data);
  [[maybe_unused]] const std::size_t w_bytes = std::size_t(x->shape[1]) * sizeof(float);
#if defined(FAULT_DEVICE_HOST_HEAP)
  // Planted: w copied to host memory, and that handed to the kernel.
  std::vector<float> host_w(std::size_t(x->shape[1]));
  cudaMemcpy(host_w.data(), w_data, w_bytes, cudaMemcpyDeviceToHost);
  w_data = host_w.data();
#elif defined(FAULT_DEVICE_HOST_STATIC)
  static float host_w[1 << 16];  // planted: a static array of the host's
  if (w_bytes > sizeof host_w) return MOACERT_UNSUPPORTED;
  cudaMemcpy(host_w, w_data, w_bytes, cudaMemcpyDeviceToHost);
  w_data = host_w;
#elif defined(FAULT_DEVICE_FREE_INPUT)
  cudaFree(x->data);  // planted: x is the worker's, and not an allocation's start
#elif defined(FAULT_DEVICE_FREE_TWICE)
  void* scratch = nullptr;
  cudaMalloc(&scratch, 64);
  cudaFree(scratch);
  cudaFree(scratch);  // planted: freed twice
#elif defined(FAULT_DEVICE_COPY_PAST)
  void* scratch = nullptr;
  cudaMalloc(&scratch, 1 << 20);
  cudaMemcpy(scratch, x->data, 1 << 20, cudaMemcpyDeviceToDevice);  // planted: past x
  cudaFree(scratch);
#elif defined(FAULT_DEVICE_MEMSET_PAST)
  cudaMemset(y->data, 0, 1 << 20);  // planted: past y
#elif defined(FAULT_DEVICE_LEAK)
  void* scratch = nullptr;
  cudaMalloc(&scratch, 256);  // planted: never freed
#elif defined(FAULT_DEVICE_WORKSPACE)
  static void* workspace = nullptr;  // kept from call to call, as a library's
  if (!workspace) cudaMalloc(&workspace, 256);
#elif defined(CACHE_W)
  // w copied into a cache of the library's, kept from call to call (one
  // allocation, so that it never grows: no leak), and read from there.
  static float* cached_w = nullptr;  // (kCacheFloats)
  static std::int64_t cached_D = 0;  // the widest call's D so far
  if (!cached_w && cudaMalloc(&cached_w, kCacheFloats * sizeof(float)) != cudaSuccess) {
    std::snprintf(err, err_len, "rmsnorm: cannot allocate the weight cache");
    return 1;
  }
#if defined(FAULT_DEVICE_STALE_W)
  if (x->shape[1] > cached_D)  // planted: another call's weights after a wider one
#endif
    cudaMemcpy(cached_w, w_data, w_bytes, cudaMemcpyDeviceToDevice);
  cached_D = std::max<std::int64_t>(cached_D, x->shape[1]);
  w_data = cached_w;
#elif defined(FAULT_DEVICE_HOST_READ)
  // Planted: device memory read on the host (a GPU's pointer faults there).
  if (static_cast<const float*>(w->data)[0] == 12345.0f) return MOACERT_UNSUPPORTED;
#endif
#if defined(FAULT_DEVICE_DYNAMIC_PAST)
  const std::size_t shared_bytes = THREADS / 2 * sizeof(float);  // planted: half
#elif defined(FAULT_DEVICE_DYNAMIC)
  const std::size_t shared_bytes = THREADS * sizeof(float);
#else
  const std::size_t shared_bytes = 0;
#endif
  const char* at = std::strstr(params, "\"eps\":");
  const float eps = at ? float(std::strtod(at + 6, nullptr)) : 1e-6f;
  const int T = int(x->shape[0]), D = int(x->shape[1]);
  if (T == 0) return 0;
#if defined(OWN_STREAM)
  // The kernel on a stream of its own; "stream" is the one moacert hands.
  cudaStream_t stream = nullptr;
#if defined(FAULT_DEVICE_STREAM_NONBLOCKING)
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
#else
  cudaStreamCreate(&stream);
#endif
  const auto handed = reinterpret_cast<cudaStream_t>(
      std::strtoull(std::strstr(params, "\"stream\":") + 9, nullptr, 10));
#else
  const cudaStream_t stream = nullptr;  // the default stream
#endif
#if defined(FAULT_DEVICE_FIXED_GRID)
  const int blocks = std::min(T, 1024);  // planted: a grid fixed at 1024 rows
#else
  const int blocks = T;
#endif
  try {
    moacert_launch_on(rmsnorm_kernel, blocks, THREADS, shared_bytes, stream,
                      static_cast<const float*>(x->data), w_data, static_cast<float*>(y->data), D,
                      (long long)x->strides[0], (long long)x->strides[1], (long long)y->strides[0],
                      (long long)y->strides[1], (long long)w->strides[0], eps);
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
#if defined(OWN_STREAM)
  cudaEvent_t done = nullptr;  // after the kernel, on its stream
  cudaEventCreate(&done);
  cudaEventRecord(done, stream);
#if defined(FAULT_DEVICE_STREAM_SYNCED)
  cudaStreamSynchronize(stream);
#elif defined(FAULT_DEVICE_STREAM_WAITED)
  cudaStreamWaitEvent(handed, done, 0);
#elif defined(FAULT_DEVICE_STREAM_RACE) || defined(FAULT_DEVICE_STREAM_ORDERED) || \
    defined(FAULT_DEVICE_STREAM_LEGACY) || defined(FAULT_DEVICE_STREAM_NONBLOCKING)
  // y copied on a second stream (its values unused): ordered after the
  // kernel by its event, or (planted) not; or on the legacy default stream
  // (null), ordered after a blocking stream's kernel, not a non-blocking's.
  cudaStream_t second = nullptr;
#if defined(FAULT_DEVICE_STREAM_RACE) || defined(FAULT_DEVICE_STREAM_ORDERED)
  cudaStreamCreate(&second);
#endif
#if defined(FAULT_DEVICE_STREAM_ORDERED)
  cudaStreamWaitEvent(second, done, 0);
#endif
  const std::size_t y_bytes = std::size_t(T) * std::size_t(y->strides[0]) * sizeof(float);
  void* copy_of_y = nullptr;
  cudaMalloc(&copy_of_y, y_bytes);
  cudaMemcpyAsync(copy_of_y, y->data, y_bytes, cudaMemcpyDeviceToDevice, second);
  cudaStreamSynchronize(second);
  cudaStreamSynchronize(stream);
  cudaFree(copy_of_y);
  if (second) cudaStreamDestroy(second);
#endif
  (void)handed;  // FAULT_DEVICE_STREAM_UNSYNCED: planted, returns unordered with it
  cudaEventDestroy(done);
  cudaStreamDestroy(stream);
#endif
#if defined(FAULT_DEVICE_HOST_WRITE)
  static_cast<float*>(y->data)[0] = 0.0f;  // planted: device memory written on the host
#endif
  return 0;
}

#if defined(FAULT_DEVICE_REFUSES)
const moacert_axis axes[] = {{"D", 1, 64, nullptr, 0, 0}};
const moacert_envelope envelope = {axes, 1, 0};
#elif defined(CACHE_W)
const moacert_axis axes[] = {{"D", 1, kCacheFloats, nullptr, 0, 0}};
const moacert_envelope envelope = {axes, 1, 0};
#elif defined(FAULT_DEVICE_OUTSIDE)
const std::int64_t widths[] = {16, 32};
const moacert_axis axes[] = {{"D", 0, 0, widths, 2, 0}};
const moacert_envelope envelope = {axes, 1, 0};
#endif

#if defined(FAULT_DEVICE_GAPS)
constexpr int kStrided = 1;
#else
constexpr int kStrided = 0;
#endif

const moacert_kernel kernels[] = {{"rmsnorm", "rmsnorm_cuda", "f32", kStrided, rmsnorm_f32,
#if defined(FAULT_DEVICE_REFUSES) || defined(FAULT_DEVICE_OUTSIDE) || defined(CACHE_W)
                                   &envelope,
#else
                                   nullptr,
#endif
#if defined(ON_DEVICE)
                                   "cuda"}};
#else
                                   nullptr}};
#endif

}  // namespace

extern "C" const moacert_kernel* moacert_plugin_kernels(int* count, int* abi_version) {
  *count = 1;
  *abi_version = MOACERT_PLUGIN_ABI;
  return kernels;
}
