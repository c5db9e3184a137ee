// The benchmark harness (see harness.hpp).
#include "bench/harness.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace moacert::bench {

std::vector<TensorRef> Inputs::in_refs() const {
  std::vector<TensorRef> r;
  for (const AnyTensor& t : in) r.push_back(t.ref());
  return r;
}
std::vector<TensorRef> Inputs::out_refs() {
  std::vector<TensorRef> r;
  for (AnyTensor& t : out) r.push_back(t.ref());
  return r;
}

namespace {

// Fills a row-major tensor of a float dtype with values uniform in [-1, 1],
// rounded to it, touching memory in the order it is laid out.
void fill(AnyTensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  const std::size_t n = std::size_t(t.layout().cosize());
  switch (t.dtype()) {
    case DType::f64: {
      auto* p = static_cast<double*>(t.data());
      for (std::size_t i = 0; i < n; ++i) p[i] = u(rng);
      break;
    }
    case DType::f32: {
      auto* p = static_cast<float*>(t.data());
      for (std::size_t i = 0; i < n; ++i) p[i] = u(rng);
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<bf16*>(t.data());
      for (std::size_t i = 0; i < n; ++i) p[i] = bf16(u(rng));
      break;
    }
    case DType::f16: {
      auto* p = static_cast<f16*>(t.data());
      for (std::size_t i = 0; i < n; ++i) p[i] = f16(u(rng));
      break;
    }
    case DType::i64:
      break;
  }
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// VmHWM and VmRSS of this process, in bytes (0 when /proc is unavailable).
double status_bytes(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream is(line.substr(std::string(key).size()));
      double kb = 0;
      is >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// Resets the peak RSS (VmHWM) to the current RSS (Linux: "5" to clear_refs).
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  return bool(f);
}

}  // namespace

Inputs make_inputs(const Problem& p, std::uint64_t seed) {
  validate(p);
  std::mt19937_64 rng(seed);
  Inputs x;
  const auto shapes_in = input_shapes(p);
  for (std::size_t k = 0; k < shapes_in.size(); ++k) {
    const bool index = is_index_input(p, int(k));
    x.in.emplace_back(index ? DType::i64 : dtype_of(p.format),
                      moa::Layout::row_major(shapes_in[k]));
    if (index) {
      auto* lens = static_cast<std::int64_t*>(x.in.back().data());
      for (moa::extent_t b = 0; b < shapes_in[k][0]; ++b) lens[b] = p.dims.M;
    } else {
      fill(x.in.back(), rng);
    }
  }
  for (const moa::Shape& s : output_shapes(p))
    x.out.emplace_back(dtype_of(p.format), moa::Layout::row_major(s));
  return x;
}

Result run(const kernels::Variant& v, const Problem& p, Inputs& inputs, const Options& opt) {
  Result r;
  r.variant = v.name;
  const std::vector<TensorRef> in = inputs.in_refs(), out = inputs.out_refs();
  const kernels::RunOptions run_opt{opt.threads};

  // The first call: peak resident growth over it.
  const double rss0 = status_bytes("VmRSS:");
  const bool reset = reset_peak_rss();
  const double hwm0 = reset ? status_bytes("VmHWM:") : rss0;
  if (v.instrumentation) v.instrumentation->take_launch_counts();  // earlier calls' counts
  v.run(p, in, out, run_opt);
  r.measured_extra_bytes = std::max(0.0, status_bytes("VmHWM:") - std::max(hwm0, rss0));
  if (v.instrumentation) r.launches = v.instrumentation->take_launch_counts();

  if (v.time_on_device) {
    const kernels::DeviceTimes t = v.time_on_device(p, in, out, {opt.warmup, opt.repeats});
    r.timed = "launches (" + t.clock + ")";
    r.samples = t.launches;
    r.device = t;
  } else {
    for (int w = 1; w < opt.warmup; ++w) v.run(p, in, out, run_opt);
    for (int k = 0; k < opt.repeats; ++k) {
      const double t0 = now();
      v.run(p, in, out, run_opt);
      r.samples.push_back(now() - t0);
    }
  }
  std::vector<double> sorted = r.samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  r.seconds = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const kernels::Cost c = v.cost(p);
  r.cost_flops = c.flops;
  r.cost_bytes = c.bytes_read + c.bytes_written;
  r.gflops = r.cost_flops / r.seconds / 1e9;
  r.gbps = r.cost_bytes / r.seconds / 1e9;
  r.peak_bytes = c.peak_extra_bytes;
  return r;
}

std::vector<std::string> blas_libraries() {
  std::ifstream f("/proc/self/maps");
  std::set<std::string> libs;
  std::string line;
  while (std::getline(f, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string file = path.substr(path.rfind('/') + 1);
    if (file.find("blas") != std::string::npos || file.find("mkl") != std::string::npos ||
        file.find("blis") != std::string::npos)
      libs.insert(path);
  }
  return {libs.begin(), libs.end()};
}

std::string machine() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  int cpus = 0;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      ++cpus;
      model = line.substr(line.find(':') + 2);
    }
  }
  return model + ", " + std::to_string(cpus) + " CPUs (" + std::to_string(omp_get_num_procs()) +
         " available to OpenMP)";
}

}  // namespace moacert::bench
