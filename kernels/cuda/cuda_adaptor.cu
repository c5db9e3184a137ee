// The `cuda.<name>` variants: kernels/cuda/'s ONFs on the GPU. The one
// translation unit of moacert's host code that includes the CUDA runtime
// (CONTRIBUTING.md, style 10); built only when CMake finds nvcc, and registered only when
// a device is present. The kernels are the same sources as `simt.<name>`'s.
#include "kernels/cuda/cuda_compat.cuh"
// after the CUDA language
#include "kernels/cuda/backend_glue.hpp"

namespace moacert::kernels {
namespace cuda {

void note_launch(const char*) {}

}  // namespace cuda

// "NVIDIA H200 (driver 13.0, sm_90)", or "" without a device.
std::string cuda_device_description() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "";
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return std::string(prop.name) + " (driver " + std::to_string(driver / 1000) + "." +
         std::to_string(driver % 1000 / 10) + ", sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ")";
}

namespace {

// bench's clock on the device: a CUDA event recorded on the launches'
// stream (the default one) before them and one after, so that the time is
// the GPU's from the first launch's start to the last one's end, without
// the host's launch overhead or any copy.
double time_with_events(const std::string& variant, const std::function<void()>& launches) {
  struct Event {
    cudaEvent_t e = nullptr;
    explicit Event(const std::string& variant) {
      cuda::check_cuda(cudaEventCreate(&e), variant, "cudaEventCreate");
    }
    ~Event() { cudaEventDestroy(e); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
  };
  const Event start(variant), stop(variant);
  cuda::check_cuda(cudaEventRecord(start.e), variant, "cudaEventRecord");
  launches();
  cuda::check_cuda(cudaEventRecord(stop.e), variant, "cudaEventRecord");
  cuda::check_cuda(cudaEventSynchronize(stop.e), variant, "kernel");
  float ms = 0;
  cuda::check_cuda(cudaEventElapsedTime(&ms, start.e, stop.e), variant, "cudaEventElapsedTime");
  return double(ms) * 1e-3;
}

}  // namespace

void register_cuda_kernels(Registry& r) {
  const std::string device = cuda_device_description();
  if (device.empty()) return;  // no GPU: the simt.* variants run the same sources
  cuda::BackendHooks hooks;
  hooks.timer = {"CUDA events", &time_with_events};
  cuda::register_onfs(r, "cuda", device, hooks);
}

}  // namespace moacert::kernels
