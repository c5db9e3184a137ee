// The benchmark harness behind `moacert bench` and the Google Benchmark
// programs: inputs for a problem, timed runs of registry variants (warm-up,
// repeats, median), rates from the variants' cost functions, and the
// machine's own measured peaks (FMA throughput and streaming bandwidth with
// the same thread count), so that "percent of peak" is a measurement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "reference/problem.hpp"
#include "reference/tensor.hpp"

namespace moacert::bench {

struct Peaks {
  double gflops = 0;     // f32 FMA throughput (2 flops per lane per FMA), all threads
  double gbps_read = 0;  // streaming read of a buffer far larger than the caches
  double gbps_copy = 0;  // streaming copy, bytes read + bytes written
  std::string target;    // the Highway target the FMA loop ran on
};

// Best of a few runs of each loop, on `threads` OpenMP threads.
Peaks measure_peaks(int threads);

struct Inputs {
  std::vector<AnyTensor> in, out;
  std::vector<TensorRef> in_refs() const;
  std::vector<TensorRef> out_refs();
};

// Row-major inputs of problem p with values uniform in [-1, 1] rounded to
// the format; decode's lens are all L (the whole cache is read).
Inputs make_inputs(const Problem& p, std::uint64_t seed);

struct Options {
  int threads = 1;
  int warmup = 1;
  int repeats = 5;
};

struct Result {
  std::string variant;
  // What `seconds` times: "call" (the whole call, host clock), or for a
  // device backend "launches (CUDA events)" / "launches (host clock)": the
  // launches alone, inputs resident and outputs allocated once.
  std::string timed = "call";
  double seconds = 0;               // median of the timed repeats
  double cost_flops = 0;            // the cost function's counts of one call
  double cost_bytes = 0;            // cost.bytes_read + cost.bytes_written
  double gflops = 0;                // cost_flops / seconds / 1e9
  double gbps = 0;                  // cost_bytes / seconds / 1e9
  double peak_bytes = 0;            // cost.peak_extra_bytes
  double measured_extra_bytes = 0;  // peak RSS growth over the first call (see run)
  std::vector<double> samples;      // every timed repeat, seconds
  // A device backend's timings as it reported them, its copies timed apart
  // from the launches; none for a host kernel.
  std::optional<kernels::DeviceTimes> device;
  // A counting backend's launches of the first call, counted beside the
  // cost function's model (Variant::take_launch_counts; empty otherwise).
  std::vector<kernels::LaunchCounts> launches;
};

// Times v on p: `warmup` untimed calls, then `repeats` timed ones; a device
// backend (Variant::time_on_device) after one whole call, its launches
// alone, the copies apart. The first call also measures the peak resident
// set growth (Linux VmHWM, reset through /proc/self/clear_refs before the
// call) as measured_extra_bytes, and a counting backend's launch counts.
Result run(const kernels::Variant& v, const Problem& p, Inputs& inputs, const Options& opt);

// The shared libraries mapped into this process whose names mention BLAS
// (what LibTorch resolved libblas.so.3 to), from /proc/self/maps.
std::vector<std::string> blas_libraries();

// "AMD EPYC ..., 2 CPUs" from /proc/cpuinfo.
std::string machine();

}  // namespace moacert::bench
