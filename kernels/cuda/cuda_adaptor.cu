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

void register_cuda_kernels(Registry& r) {
  const std::string device = cuda_device_description();
  if (device.empty()) return;  // no GPU: the simt.* variants run the same sources
  cuda::register_onfs(r, "cuda", device);
}

}  // namespace moacert::kernels
