// The `simt.<name>` variants: kernels/cuda/'s ONFs on the host emulator
// (include/moacert/simt.h, libmoacert_simt), registered whatever the build,
// with the same cost functions as on the device. A hazard the emulator
// finds (a race, a divergent barrier, an out-of-bounds access) is a
// counterexample (KernelFault) naming the kernel. The kernels themselves
// and the launch log are in libmoacert_cuda_simt.so (launch_log.cpp).
#define MOACERT_SIMT_UNINSTRUMENTED 1  // host glue, not kernel code
#include "kernels/cuda/cuda_compat.cuh"
// after the CUDA language
#include "kernels/cuda/backend_glue.hpp"
#include "kernels/cuda/launch_log.hpp"

#include <atomic>
#include <sstream>
#include <string>

namespace moacert::kernels {
void register_simt_kernels(Registry& r) {
  // The counts a certificate carries: the launches' sums since the last take.
  auto take_counts = [] {
    double atomics = 0, other = 0, loads = 0, load_bytes = 0, stores = 0, store_bytes = 0;
    double launches = 0, barriers = 0;
    for (const simt::LaunchRecord& l : simt::take_launch_log()) {
      ++launches;
      atomics += double(l.atomic_add_global);
      other += double(l.atomics_other);
      loads += double(l.global_loads);
      load_bytes += double(l.global_load_bytes);
      stores += double(l.global_stores);
      store_bytes += double(l.global_store_bytes);
      barriers += double(l.barriers);
    }
    return std::vector<std::pair<std::string, double>>{{"launches", launches},
                                                       {"float atomics", atomics},
                                                       {"other atomics", other},
                                                       {"global loads", loads},
                                                       {"global load bytes", load_bytes},
                                                       {"global stores", stores},
                                                       {"global store bytes", store_bytes},
                                                       {"barriers", barriers}};
  };
  // The schedule: the case's seed (RunOptions::schedule_seed, so that
  // `reproduce` replays it) plus a variation the spread measurements set.
  static std::atomic<std::uint64_t> variation{0};
  auto before_run = [](const RunOptions& opt) {
    simt::set_schedule_seed(opt.schedule_seed + variation.load());
  };
  auto simt_counters = [] {
    const simt::LaunchRecord t = simt::launch_totals();
    std::ostringstream json;
    json << "{\"launches\": \"" << t.kernel << "\", \"blocks\": " << t.blocks
         << ", \"barriers\": " << t.barriers << ", \"global_loads\": " << t.global_loads
         << ", \"global_load_bytes\": " << t.global_load_bytes
         << ", \"global_stores\": " << t.global_stores
         << ", \"global_store_bytes\": " << t.global_store_bytes
         << ", \"atomic_add_global\": " << t.atomic_add_global
         << ", \"atomics_other\": " << t.atomics_other << "}";
    return json.str();
  };
  simt::register_onfs(
      r, "simt", "host emulator",
      {before_run, simt_counters, take_counts, [](std::uint64_t v) { variation.store(v); }});
}

}  // namespace moacert::kernels
