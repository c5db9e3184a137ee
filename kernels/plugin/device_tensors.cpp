#include "kernels/plugin/device_tensors.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <type_traits>

namespace moacert::kernels::plugin::device {

namespace {

// cudaMemcpyKind
constexpr int kHostToDevice = 1;
constexpr int kDeviceToHost = 2;
// All ones: NaN in every float format, as a host output starts.
constexpr unsigned char kPoison = 0xff;

std::size_t element_bytes(const wire::TensorDesc& t) {
  return (t.bits + 7u) / 8u;
}

// The bytes from a tensor's first element to past its last: 1 + sum
// (shape - 1) * stride elements (0 when it has none).
std::size_t span_bytes(const wire::TensorDesc& t) {
  std::int64_t last = 0;
  for (int k = 0; k < t.ndim; ++k) {
    if (t.shape[k] == 0) return 0;
    last += (t.shape[k] - 1) * t.strides[k];
  }
  return std::size_t(last + 1) * element_bytes(t);
}

// Calls f(byte offset) for each element of `t`, in row-major order of its
// coordinates: the gaps of a padded layout are never visited.
template <class F>
void for_each_element(const wire::TensorDesc& t, F f) {
  if (span_bytes(t) == 0) return;
  const std::size_t e = element_bytes(t);
  std::int64_t index[wire::kMaxRank] = {};
  for (;;) {
    std::int64_t offset = 0;
    for (int k = 0; k < t.ndim; ++k) offset += index[k] * t.strides[k];
    f(std::size_t(offset) * e);
    int k = t.ndim - 1;
    while (k >= 0 && ++index[k] == t.shape[k]) index[k--] = 0;
    if (k < 0) return;
  }
}

std::vector<unsigned char> guard_pattern() {
  std::vector<unsigned char> g(kGuardBytes);
  for (std::size_t k = 0; k < kGuardBytes; ++k) g[k] = wire::canary(k);
  return g;
}

}  // namespace

std::string Runtime::error_text(int e) const {
  const char* s = error_string ? error_string(e) : nullptr;
  return std::string(s ? s : "unknown error") + " (CUDA error " + std::to_string(e) + ")";
}

Runtime find_runtime(void* handle) {
  Runtime rt;
  // The emulator's (its C names: moacert_simt_cudaMalloc, ...), when the
  // plugin was built with moacert-simt-c++; else the CUDA runtime the
  // plugin links; else a shared CUDA runtime (a plugin with the runtime
  // linked statically and its symbols hidden shares the device's primary
  // context with it).
  auto look = [&rt](void* h, const std::string& prefix) {
    Runtime r;
    auto find = [&](const char* name, auto& fn) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(h, (prefix + name).c_str()));
    };
    find("cudaMalloc", r.malloc);
    find("cudaFree", r.free);
    find("cudaMemcpy", r.memcpy);
    find("cudaDeviceSynchronize", r.synchronize);
    find("cudaGetLastError", r.get_last_error);
    find("cudaGetErrorString", r.error_string);
    find("cudaStreamCreate", r.stream_create);
    find("cudaStreamSynchronize", r.stream_synchronize);
    find("cudaEventCreate", r.event_create);
    find("cudaEventRecord", r.event_record);
    find("cudaEventSynchronize", r.event_synchronize);
    find("cudaEventElapsedTime", r.event_elapsed_time);
    find("cudaEventDestroy", r.event_destroy);
    if (r.found()) rt = r;
    return r.found();
  };
  if (!handle) return rt;
  if (look(handle, "moacert_simt_")) {
    rt.name_buffer = reinterpret_cast<void (*)(const void*, const char*)>(
        dlsym(handle, "moacert_simt_name_buffer"));
    rt.bound_buffer = reinterpret_cast<void (*)(const void*, std::size_t, std::size_t)>(
        dlsym(handle, "moacert_simt_bound_buffer"));
    rt.mem_get_info = reinterpret_cast<int (*)(std::size_t*, std::size_t*)>(
        dlsym(handle, "moacert_simt_cudaMemGetInfo"));
    rt.error_call =
        reinterpret_cast<const char* (*)(int)>(dlsym(handle, "moacert_simt_error_call"));
    rt.settings_error =
        reinterpret_cast<const char* (*)()>(dlsym(handle, "moacert_simt_settings_error"));
  } else if (!look(handle, "")) {
    for (const char* lib : {"libcudart.so", "libcudart.so.12", "libcudart.so.13"})
      if (void* shared = dlopen(lib, RTLD_NOW | RTLD_LOCAL); shared && look(shared, "")) break;
  }
  // A stream of the worker's own, on the emulator as on a GPU: work the
  // kernel leaves on a stream of its own, unordered with it, is then a race.
  if (rt.found() && rt.stream_create && rt.stream_create(&rt.stream) != 0) rt.stream = nullptr;
  return rt;
}

std::string with_stream(const std::string& params, const Runtime& rt) {
  const std::string member =
      "\"stream\":" + std::to_string(reinterpret_cast<std::uintptr_t>(rt.stream));
  const std::size_t close = params.rfind('}');
  if (close == std::string::npos) return params;
  const bool empty = params.find_first_not_of(" \t\n{", 0) == close;
  return params.substr(0, close) + (empty ? "" : ",") + member + params.substr(close);
}

Tensors::~Tensors() {
  for (const Buffer& b : buffers_)
    if (b.base) rt_.free(b.base);
}

std::string Tensors::copy(void* dst, const void* src, std::size_t bytes, int kind,
                          const char* what) {
  if (bytes == 0) return "";
  const int e = rt_.memcpy(dst, src, bytes, kind);
  return e == 0 ? "" : std::string("cannot copy ") + what + ": " + rt_.error_text(e);
}

std::string Tensors::timed_copy(void* dst, const void* src, std::size_t bytes, int kind,
                                const char* what, double& seconds, double& counted) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string why = copy(dst, src, bytes, kind, what);
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  counted += double(bytes);
  return why;
}

void Tensors::add_copy_times(wire::Timing& t) const {
  t.copy_to_device_seconds += to_device_seconds_;
  t.copy_to_device_bytes += to_device_bytes_;
  t.copy_from_device_seconds += from_device_seconds_;
  t.copy_from_device_bytes += from_device_bytes_;
}

namespace {
double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

LaunchTimer::LaunchTimer(const Runtime& rt) : rt_(rt) {
  events_ = rt.has_events() && rt.event_create(&start_) == 0 && rt.event_create(&stop_) == 0;
}
LaunchTimer::~LaunchTimer() {
  if (start_) rt_.event_destroy(start_);
  if (stop_) rt_.event_destroy(stop_);
}
void LaunchTimer::start() {
  if (events_) {
    rt_.event_record(start_, rt_.stream);
  } else {
    rt_.synchronize();
    host_start_ = host_seconds();
  }
}
double LaunchTimer::stop() {
  if (!events_) {
    const int e = rt_.stream_synchronize ? rt_.stream_synchronize(rt_.stream) : rt_.synchronize();
    return e == 0 ? host_seconds() - host_start_ : -1;
  }
  float ms = 0;
  if (rt_.event_record(stop_, rt_.stream) != 0 || rt_.event_synchronize(stop_) != 0 ||
      rt_.event_elapsed_time(&ms, start_, stop_) != 0)
    return -1;
  return double(ms) * 1e-3;
}

std::string Tensors::upload(const wire::Request& q, const DLTensor* host, DLTensor* device_view) {
  const int nt = q.n_inputs + q.n_outputs;
  const std::vector<unsigned char> guard = guard_pattern();
  buffers_.assign(std::size_t(nt), Buffer{});
  std::size_t needed = 0;  // every tensor's allocation, for the message
  for (int i = 0; i < nt; ++i) needed += kGuardBytes + span_bytes(q.tensors[i]) + kGuardBytes;
  for (int i = 0; i < nt; ++i) {
    const wire::TensorDesc& t = q.tensors[i];
    Buffer& b = buffers_[std::size_t(i)];
    b.span = span_bytes(t);
    void* p = nullptr;
    if (const int e = rt_.malloc(&p, kGuardBytes + b.span + kGuardBytes); e != 0) {
      out_of_memory_ = e == kOutOfMemory;
      if (out_of_memory_) rt_.get_last_error();  // not sticky: clear it for the next call
      return "cannot allocate " + std::string(t.name) + " on the device (the call's tensors need " +
             std::to_string(needed) + " bytes): " + rt_.error_text(e);
    }
    b.base = static_cast<unsigned char*>(p);
    if (rt_.name_buffer) rt_.name_buffer(b.base, t.name);
    if (rt_.bound_buffer) rt_.bound_buffer(b.base, kGuardBytes, b.span);
    // The span poisoned, then each element of an input copied in.
    std::vector<unsigned char> span(b.span, kPoison);
    if (!t.output) {
      const auto* from = static_cast<const unsigned char*>(host[i].data);
      const std::size_t e = element_bytes(t);
      for_each_element(t, [&](std::size_t at) { std::memcpy(&span[at], from + at, e); });
    }
    struct Piece {
      unsigned char* to;
      const unsigned char* from;
      std::size_t bytes;
    };
    for (const Piece& c : {Piece{b.base, guard.data(), kGuardBytes},
                           Piece{b.base + kGuardBytes + b.span, guard.data(), kGuardBytes}})
      if (std::string why = copy(c.to, c.from, c.bytes, kHostToDevice, t.name); !why.empty())
        return why;
    double poison_seconds = 0, poison_bytes = 0;  // an output's poison is not a copy of data
    if (std::string why = timed_copy(b.base + kGuardBytes, span.data(), b.span, kHostToDevice,
                                     t.name, t.output ? poison_seconds : to_device_seconds_,
                                     t.output ? poison_bytes : to_device_bytes_);
        !why.empty())
      return why;
    if (!t.output) b.before = std::move(span);
    device_view[i] = host[i];
    device_view[i].data = b.base + kGuardBytes;
    device_view[i].device = {kDLCUDA, 0};
  }
  return "";
}

std::string Tensors::finish(const wire::Request& q, const DLTensor* host, bool& sticky) {
  // The device's error first: after one, its memory cannot be trusted.
  sticky = true;
  int e = rt_.stream_synchronize ? rt_.stream_synchronize(rt_.stream) : 0;
  if (e == 0) e = rt_.synchronize();
  if (e == 0) e = rt_.get_last_error();
  if (e != 0) {
    const char* call = rt_.error_call ? rt_.error_call(e) : nullptr;
    return "the device reported " + rt_.error_text(e) + " after the call" +
           (call && *call ? std::string(": ") + call : std::string());
  }
  sticky = false;
  const std::vector<unsigned char> guard = guard_pattern();
  std::vector<unsigned char> seen(kGuardBytes);
  for (int i = 0; i < q.n_inputs + q.n_outputs; ++i) {
    const wire::TensorDesc& t = q.tensors[i];
    const Buffer& b = buffers_[std::size_t(i)];
    const std::string name = t.name;
    // A write before the data: the lowest changed guard byte says how far.
    if (std::string why = copy(seen.data(), b.base, kGuardBytes, kDeviceToHost, t.name);
        !why.empty())
      return why;
    for (std::size_t k = 0; k < kGuardBytes; ++k)
      if (seen[k] != guard[k])
        return "wrote " + std::to_string(kGuardBytes - k) + " bytes before " + name +
               " on the device";
    // A write past the data: the highest changed guard byte.
    if (std::string why =
            copy(seen.data(), b.base + kGuardBytes + b.span, kGuardBytes, kDeviceToHost, t.name);
        !why.empty())
      return why;
    for (std::size_t k = kGuardBytes; k > 0; --k)
      if (seen[k - 1] != guard[k - 1])
        return "wrote " + std::to_string(k) + " bytes past " + name + " on the device";
    std::vector<unsigned char> span(b.span);
    double check_seconds = 0, check_bytes = 0;  // an input's read back is the check's, not data
    if (std::string why = timed_copy(span.data(), b.base + kGuardBytes, b.span, kDeviceToHost,
                                     t.name, t.output ? from_device_seconds_ : check_seconds,
                                     t.output ? from_device_bytes_ : check_bytes);
        !why.empty())
      return why;
    if (!t.output) {
      // Its bytes (gaps included) as uploaded: compared in full, the
      // first change named.
      if (span != b.before) {
        std::size_t k = 0;
        while (span[k] == b.before[k]) ++k;
        return "wrote into input " + name + " on the device (byte " + std::to_string(k) +
               " of its data changed)";
      }
      continue;
    }
    auto* to = static_cast<unsigned char*>(host[i].data);
    const std::size_t eb = element_bytes(t);
    for_each_element(t, [&](std::size_t at) { std::memcpy(to + at, &span[at], eb); });
  }
  return "";
}

}  // namespace moacert::kernels::plugin::device
