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
  // Optional: a stream of the worker's own (the emulator has none: 0, the
  // default stream).
  int (*stream_create)(void**) = nullptr;
  int (*stream_synchronize)(void*) = nullptr;
  // The emulator's: names a buffer for its messages and counters.
  void (*name_buffer)(const void*, const char*) = nullptr;
  // The stream every call is handed, created on the first (null: the
  // default stream).
  void* stream = nullptr;

  bool found() const {
    return malloc && free && memcpy && synchronize && get_last_error && error_string;
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
  // Returns "" or why the device refused (an allocation, a copy).
  std::string upload(const wire::Request& q, const DLTensor* host, DLTensor* device_view);

  // After the call: the device's error (sticky: the caller ends the
  // worker), then each tensor's guards and each input's bytes, then the
  // outputs copied back into `host`. Returns "" or the first fault, naming
  // the tensor; `sticky` tells an error of the device from a check's.
  std::string finish(const wire::Request& q, const DLTensor* host, bool& sticky);

 private:
  struct Buffer {
    unsigned char* base = nullptr;      // the allocation: guard, span, guard
    std::size_t span = 0;               // bytes from the first element to past the last
    std::vector<unsigned char> before;  // an input's span as uploaded
  };
  std::string copy(void* dst, const void* src, std::size_t bytes, int kind, const char* what);

  const Runtime& rt_;
  std::vector<Buffer> buffers_;
};

}  // namespace moacert::kernels::plugin::device
