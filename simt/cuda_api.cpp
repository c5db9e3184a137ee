// CUDA's runtime API on the host: allocations are registered buffers, the
// last error is the emulator's, copies and memsets are works on a stream
// (streams.cpp keeps their order; streams and events are there); and the
// message of a fault the signal handler recognised.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "simt/state.hpp"

using namespace moacert::simt;

extern "C" const char* moacert_simt_fault_message(void) {
  return detail::runtime.fault_message;
}

namespace {

// A failed call's error: returned, and kept as the last error, as CUDA's
// runtime does (the worker asks cudaGetLastError after the call), with the
// call, its arguments and why, for the worker's message.
cudaError_t fail(cudaError_t e, std::string call = "") {
  detail::runtime.error_call = std::move(call);
  detail::runtime.error_call_code = e;
  return detail::runtime.last_error = e;
}

// An address as a message names it: in a buffer, 'name'+offset; else hex.
std::string where(const void* p) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%p", p);
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (const detail::Buffer* b = detail::find_buffer(a); b && a >= b->lo && a < b->hi)
    return std::string(hex) + " ('" + b->counts.name + "'+" + std::to_string(a - b->lo) + ")";
  return hex;
}

const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice:
      return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost:
      return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice:
      return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault:
      return "cudaMemcpyDefault";
  }
  return "an unknown kind";
}

// Whether [p, p + bytes) may be the device side of a copy: wholly inside
// one live allocation.
bool device_side(const void* p, std::size_t bytes) {
  return detail::device_allocation_of(p, bytes) != nullptr;
}
// Whether it may be the host side: not in the device's range (a device
// pointer where host memory is declared is refused, as CUDA refuses it).
bool host_side(const void* p) {
  return !detail::runtime.device.holds(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  if (!ptr) return fail(cudaErrorInvalidValue);
  std::lock_guard lock(detail::runtime.mutex);  // the live allocations' sum
  const std::size_t capacity = detail::runtime.settings.device_memory;
  const std::string call = "cudaMalloc(" + std::to_string(bytes) + " bytes)";
  if (capacity && bytes > capacity - std::min(capacity, detail::runtime.device_bytes))
    return fail(cudaErrorMemoryAllocation, call + ": the live allocations hold " +
                                               std::to_string(detail::runtime.device_bytes) +
                                               " of the device's " + std::to_string(capacity) +
                                               " bytes (MOACERT_SIMT_DEVICE_MEMORY)");
  void* p = detail::device_allocate(bytes);
  if (!p) return fail(cudaErrorMemoryAllocation, call + ": the device's range is exhausted");
  detail::runtime.device_allocations[p] = bytes;
  detail::runtime.freed.erase(p);
  detail::runtime.device_bytes += bytes;
  {
    const detail::DeviceOpen open;
    std::memset(p, 0xff, bytes);  // as uninitialised device memory: NaN, not zero
  }
  const std::string name = "cudaMalloc#" + std::to_string(++detail::runtime.malloc_count);
  moacert_simt_register_buffer(p, bytes, name.c_str());
  *ptr = p;
  return cudaSuccess;
}
// A pointer that is not a live allocation (never one, freed already, or
// inside one: a tensor the worker handed over) is cudaErrorInvalidValue,
// as on a GPU, and nothing is freed.
cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  std::lock_guard lock(detail::runtime.mutex);
  const auto it = detail::runtime.device_allocations.find(ptr);
  if (it == detail::runtime.device_allocations.end()) {
    const char* why = detail::device_allocation_of(ptr, 1)  ? "inside one, not its start"
                      : detail::runtime.freed.contains(ptr) ? "freed already"
                                                            : "never allocated";
    return fail(cudaErrorInvalidValue,
                "cudaFree(" + where(ptr) + "): not a live allocation (" + why + ")");
  }
  // cudaFree waits for the device's work first (CUDA's implicit
  // synchronisation), so a kernel still using the memory is not a race.
  detail::host_waits_for_device();
  const std::size_t bytes = it->second;
  detail::runtime.device_bytes -= bytes;
  detail::runtime.device_allocations.erase(it);
  detail::unregister_allocation(ptr, bytes);
  detail::device_release(ptr, bytes);
  detail::runtime.freed.insert(ptr);
  return cudaSuccess;
}
namespace {

// A copy or memset as a work on stream `index`: its device sides as its
// touches; a race with unordered earlier work is kept for the report (a
// GPU reports none: it returns success, and the data may be anything).
void enqueue(std::size_t index, const char* call, std::size_t bytes, const void* dst,
             const void* src) {
  std::vector<detail::Touch> touches;
  if (src && device_side(src, bytes)) touches.push_back(detail::touch_of(src, bytes, false));
  if (device_side(dst, bytes)) touches.push_back(detail::touch_of(dst, bytes, true));
  const std::string why = detail::enqueue_work(
      index, std::string(call) + " of " + std::to_string(bytes) + " bytes", std::move(touches));
  if (!why.empty()) detail::report_runtime_hazard("stream race", why);
}

// Why one side of a copy is not what its kind declares ("" when it is):
// device memory wholly inside one live allocation, or host memory.
std::string side_fault(const char* side, const void* p, std::size_t bytes, bool device) {
  if (device ? device_side(p, bytes) : host_side(p)) return "";
  return device ? std::string(side) + " " + where(p) + " is not " + std::to_string(bytes) +
                      " bytes inside one live allocation"
                : std::string(side) + " " + where(p) + " is device memory, not the host's";
}

// The device sides of a copy must lie in one allocation each; else
// cudaErrorInvalidValue, and nothing is copied (CUDA checks the device
// pointers it knows; a bad host pointer is the caller's, on a GPU too).
cudaError_t copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                 cudaStream_t stream, bool synchronous) {
  if (bytes == 0) return cudaSuccess;
  const char* name = synchronous ? "cudaMemcpy" : "cudaMemcpyAsync";
  const std::string call = std::string(name) + "(" + where(dst) + ", " + where(src) + ", " +
                           std::to_string(bytes) + ", " + kind_name(kind) + ")";
  if (!dst || !src) return fail(cudaErrorInvalidValue, call + ": a null pointer");
  std::lock_guard lock(detail::runtime.mutex);
  const long index = detail::stream_index(stream);
  if (index < 0) return fail(cudaErrorInvalidResourceHandle, call + ": no live stream");
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return fail(cudaErrorInvalidMemcpyDirection, call + ": no such kind");
  // Unified addressing (cudaMemcpyDefault): each side is what its address is.
  const bool dst_device = kind == cudaMemcpyDefault
                              ? !host_side(dst)
                              : kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDefault
                              ? !host_side(src)
                              : kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  std::string why = side_fault("the destination", dst, bytes, dst_device);
  if (why.empty()) why = side_fault("the source", src, bytes, src_device);
  if (!why.empty()) return fail(cudaErrorInvalidValue, call + ": " + why);
  enqueue(std::size_t(index), synchronous ? "cudaMemcpy" : "cudaMemcpyAsync", bytes, dst, src);
  {
    const detail::DeviceOpen open;
    std::memmove(dst, src, bytes);
  }
  // cudaMemcpy returns when the copy is done, but one between two device
  // buffers returns at once (CUDA's API synchronisation behaviour).
  const bool host_side_copy =
      kind != cudaMemcpyDeviceToDevice && !(device_side(dst, bytes) && device_side(src, bytes));
  if (synchronous && host_side_copy) detail::host_waits_for(std::size_t(index));
  return cudaSuccess;
}
// cudaMemset returns before the device has set the bytes, as on a GPU.
cudaError_t set(void* ptr, int value, std::size_t bytes, cudaStream_t stream, bool synchronous) {
  if (bytes == 0) return cudaSuccess;
  std::lock_guard lock(detail::runtime.mutex);
  const long index = detail::stream_index(stream);
  const char* name = synchronous ? "cudaMemset" : "cudaMemsetAsync";
  const std::string call = std::string(name) + "(" + where(ptr) + ", " + std::to_string(value) +
                           ", " + std::to_string(bytes) + ")";
  if (index < 0) return fail(cudaErrorInvalidResourceHandle, call + ": no live stream");
  if (!device_side(ptr, bytes))
    return fail(cudaErrorInvalidValue,
                call + ": not " + std::to_string(bytes) + " bytes inside one live allocation");
  enqueue(std::size_t(index), name, bytes, ptr, nullptr);
  const detail::DeviceOpen open;
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  return copy(dst, src, bytes, kind, nullptr, /*synchronous=*/true);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return copy(dst, src, bytes, kind, stream, /*synchronous=*/false);
}
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  return set(ptr, value, bytes, nullptr, /*synchronous=*/true);
}
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream) {
  return set(ptr, value, bytes, stream, /*synchronous=*/false);
}
cudaError_t cudaDeviceSynchronize() {
  std::lock_guard lock(detail::runtime.mutex);
  detail::host_waits_for_device();
  return detail::runtime.last_error;
}
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  if (!free || !total) return fail(cudaErrorInvalidValue);
  std::lock_guard lock(detail::runtime.mutex);
  const std::size_t capacity = detail::runtime.settings.device_memory;
  *total = capacity ? capacity : detail::device_range_bytes();
  *free = *total - std::min(*total, detail::runtime.device_bytes);
  return cudaSuccess;
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = detail::runtime.last_error;
  detail::runtime.last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() {
  return detail::runtime.last_error;
}
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (a hazard; see the report)";
  }
  return "unknown error";
}

// The calls above under C names, for moacert's plugin worker.
extern "C" const char* moacert_simt_error_call(int error) {
  const detail::Runtime& r = detail::runtime;
  return r.error_call_code == error ? r.error_call.c_str() : "";
}
extern "C" int moacert_simt_cudaMalloc(void** ptr, std::size_t bytes) {
  return cudaMalloc(ptr, bytes);
}
extern "C" int moacert_simt_cudaFree(void* ptr) {
  return cudaFree(ptr);
}
extern "C" int moacert_simt_cudaMemcpy(void* dst, const void* src, std::size_t bytes, int kind) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyKind(kind));
}
extern "C" int moacert_simt_cudaDeviceSynchronize(void) {
  return cudaDeviceSynchronize();
}
extern "C" int moacert_simt_cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  return cudaMemGetInfo(free, total);
}
extern "C" int moacert_simt_cudaGetLastError(void) {
  return cudaGetLastError();
}
extern "C" const char* moacert_simt_cudaGetErrorString(int error) {
  return cudaGetErrorString(cudaError_t(error));
}
