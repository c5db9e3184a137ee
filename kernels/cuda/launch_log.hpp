// The emulated backend's record of its launches (simt_backend.cpp): per
// launch, the kernel's name and the emulator's counters, as plain numbers,
// so that tests compare them with the cost functions (kernels/cuda/cost.hpp)
// without including the emulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moacert::kernels::simt {

// One device buffer's share of a launch's global traffic, under the name
// the launcher gave it (the op's tensor names, kernels/cuda/scratch.hpp);
// traffic in no buffer goes by moacert::simt::kModuleData's name.
//
// It mirrors moacert::simt::BufferCounters (include/moacert/simt.h) field
// for field, on purpose, as LaunchRecord mirrors simt::Counters: the log's
// readers, the traffic law (traffic_law.*) and the tests that compare the
// counts with the cost functions, are plain host code that does not
// include the emulator's header, which declares CUDA's runtime API
// (cudaMalloc, dim3, ...) in the global namespace for the code it
// emulates. Sharing the type would put it in a header of include/moacert/,
// installed for users, for a record only moacert's own backend reads.
// launch_log.cpp converts one into the other, in one place (note_launch).
struct TensorRecord {
  std::string tensor;
  std::uint64_t loads = 0, load_bytes = 0;
  std::uint64_t stores = 0, store_bytes = 0;
  std::uint64_t atomics = 0;  // atomic function calls into it
  TensorRecord& operator+=(const TensorRecord& o) {
    loads += o.loads;
    load_bytes += o.load_bytes;
    stores += o.stores;
    store_bytes += o.store_bytes;
    atomics += o.atomics;
    return *this;
  }
};

struct LaunchRecord {
  std::string kernel;  // as written at the launch, e.g. "(dv_kernel<T, float, kCausal>)"
  std::uint64_t blocks = 0, barriers = 0;
  std::uint64_t global_loads = 0, global_load_bytes = 0;
  std::uint64_t global_stores = 0, global_store_bytes = 0;
  std::uint64_t atomic_add_global = 0;  // atomicAdd on global memory
  std::uint64_t atomics_other = 0;      // every other atomic, any space
  std::vector<TensorRecord> tensors;    // the buffers it touched, in allocation order
};

// Called after every launch (cuda_compat.cuh's MOACERT_LAUNCH).
void note_launch(const char* kernel);

// The launches since the last call, in order.
std::vector<LaunchRecord> take_launch_log();

// How many launches the log holds, and a copy of those from `first` on (a
// call's own launches, without taking them from the log).
std::size_t launch_log_size();
std::vector<LaunchRecord> launch_log_from(std::size_t first);

// Every launch noted so far, summed (kernel: the count of launches).
LaunchRecord launch_totals();

// The seed of the emulator's block order and interleaving for the next
// launches.
void set_schedule_seed(std::uint64_t seed);

}  // namespace moacert::kernels::simt
