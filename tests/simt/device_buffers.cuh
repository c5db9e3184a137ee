// Device memory for the emulator's test kernels (kernels.cu,
// tensor_core_kernels.cu): copies each way, and buffers freed on every
// path, a hazard's exception included.
#pragma once

#include <cstddef>
#include <vector>

#include <cuda_runtime.h>

namespace simt_test {

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  cudaMalloc(&d, host.size() * sizeof(T));
  cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

template <class T>
std::vector<T> host_copy(const T* d, std::size_t n) {
  std::vector<T> host(n);
  cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return host;
}

struct Buffers {
  std::vector<void*> all;
  template <class T>
  T* add(T* p) {
    all.push_back(p);
    return p;
  }
  template <class T>
  T* zeros(std::size_t n) {
    T* d = nullptr;
    cudaMalloc(&d, n * sizeof(T));
    cudaMemset(d, 0, n * sizeof(T));
    return add(d);
  }
  ~Buffers() {
    for (void* p : all) cudaFree(p);
  }
};

}  // namespace simt_test
