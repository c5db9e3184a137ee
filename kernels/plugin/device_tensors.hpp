// A `cuda` plugin kernel's tensors in device memory (docs/plugins.md,
// "Device tensors"), inside the worker process: each input and output
// allocated with the plugin's own CUDA runtime — the SIMT emulator's, for a
// plugin built with moacert-simt-c++, or CUDA's —, between two guards of
// canary bytes; inputs copied in element by element over a poisoned span
// (the gaps of a padded layout stay poison), outputs poisoned; after the
// call, the device's error, the guards and the inputs checked, and the
// outputs copied back.
//
// No CUDA header here: the runtime's entry points are found by name
// (dlsym), C-linkage in both runtimes, so the worker builds without CUDA
// and serves the emulator's plugins and a GPU's alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "kernels/plugin/protocol.hpp"

namespace moacert::kernels::plugin::device {

// The CUDA runtime calls the worker makes, as a plugin links them
// (cudaError_t is an int-sized enum; 0 is cudaSuccess).
struct Runtime {
  int (*malloc)(void**, std::size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, std::size_t, int kind) = nullptr;
  int (*synchronize)() = nullptr;
  int (*get_last_error)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  // Optional: a stream of the worker's own (else 0, the default stream).
  int (*stream_create)(void**) = nullptr;
  int (*stream_synchronize)(void*) = nullptr;
  // Optional: events, to time launches on the stream (bench).
  int (*event_create)(void**) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_synchronize)(void*) = nullptr;
  int (*event_elapsed_time)(float*, void*, void*) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  // The emulator's: its live allocations' bytes are total - free exactly
  // (on a GPU other processes and the allocator's pools count too).
  int (*mem_get_info)(std::size_t* free, std::size_t* total) = nullptr;
  // The emulator's: the runtime call that set an error, its arguments and
  // why ("" when it knows none), and why its settings are refused ("").
  const char* (*error_call)(int) = nullptr;
  const char* (*settings_error)() = nullptr;
  // The emulator's: names a buffer for its messages and counters.
  void (*name_buffer)(const void*, const char*) = nullptr;
  // The emulator's: a tensor's bounds are its own bytes, the guards around
  // it the worker's (an access to them is out of bounds at the access).
  void (*bound_buffer)(const void*, std::size_t, std::size_t) = nullptr;
  // The stream every call is handed, created on the first (null: the
  // default stream).
  void* stream = nullptr;

  bool found() const {
    return malloc && free && memcpy && synchronize && get_last_error && error_string;
  }
  bool has_events() const {
    return event_create && event_record && event_synchronize && event_elapsed_time && event_destroy;
  }
  std::string error_text(int e) const;
};

// The runtime the plugin `handle` (dlopen's) links, looked up in it and
// its dependencies, else in a CUDA runtime library on the loader's path;
// with its stream when it has streams.
Runtime find_runtime(void* handle);

// `params` (a JSON object) with the stream added: "stream":ADDRESS, an
// integer (0: the default stream).
std::string with_stream(const std::string& params, const Runtime& rt);

// cudaErrorMemoryAllocation, in CUDA's runtime and the emulator's.
constexpr int kOutOfMemory = 2;

// Times one call's launches on the runtime's stream: by CUDA events where
// the runtime has them (the emulator's read the host's clock), else by the
// host's clock around the call and a synchronisation.
class LaunchTimer {
 public:
  explicit LaunchTimer(const Runtime& rt);
  ~LaunchTimer();
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;
  const char* clock() const { return events_ ? "CUDA events" : "host clock"; }
  void start();
  // Seconds since start(), once the launches have ended; negative when the
  // device reported an error.
  double stop();

 private:
  const Runtime& rt_;
  void* start_ = nullptr;
  void* stop_ = nullptr;
  bool events_ = false;
  double host_start_ = 0;
};

// Bytes of guard on each side of a device tensor: cudaMalloc's alignment,
// so that the data keeps it.
constexpr std::size_t kGuardBytes = 256;

// One call's tensors on the device.
class Tensors {
 public:
  explicit Tensors(const Runtime& rt) : rt_(rt) {}
  ~Tensors();
  Tensors(const Tensors&) = delete;
  Tensors& operator=(const Tensors&) = delete;

  // Allocates and fills the device copies of `host` (inputs, then outputs,
  // as `q` describes them), and points `device_view` at them (kDLCUDA).
  // Returns "" or why the device refused (an allocation, a copy);
  // out_of_memory() tells a full device apart.
  std::string upload(const wire::Request& q, const DLTensor* host, DLTensor* device_view);
  bool out_of_memory() const { return out_of_memory_; }

  // After the call: the device's error (sticky: the caller ends the
  // worker), then each tensor's guards and each input's bytes, then the
  // outputs copied back into `host`. Returns "" or the first fault, naming
  // the tensor; `sticky` tells an error of the device from a check's.
  std::string finish(const wire::Request& q, const DLTensor* host, bool& sticky);

  // The host<->device copies of the tensors' data so far (not the guards'
  // or the poison's): seconds and bytes each way, for bench.
  void add_copy_times(wire::Timing& t) const;

 private:
  struct Buffer {
    unsigned char* base = nullptr;      // the allocation: guard, span, guard
    std::size_t span = 0;               // bytes from the first element to past the last
    std::vector<unsigned char> before;  // an input's span as uploaded
  };
  std::string copy(void* dst, const void* src, std::size_t bytes, int kind, const char* what);

  // `copy`, timed into `seconds` and `bytes` (a synchronous cudaMemcpy).
  std::string timed_copy(void* dst, const void* src, std::size_t bytes, int kind, const char* what,
                         double& seconds, double& counted);

  const Runtime& rt_;
  std::vector<Buffer> buffers_;
  bool out_of_memory_ = false;
  double to_device_seconds_ = 0, to_device_bytes_ = 0;
  double from_device_seconds_ = 0, from_device_bytes_ = 0;
};

}  // namespace moacert::kernels::plugin::device
