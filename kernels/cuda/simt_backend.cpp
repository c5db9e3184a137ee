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
#include "kernels/cuda/traffic_law.hpp"
#include "reference/named.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace moacert::kernels {
namespace {

// The most rows T certify draws for the emulated variants where --shape
// leaves them free (BackendHooks::token_reach): the
// deployment envelope's thresholds 1024 and 2048 crossed, 4096 reached.
constexpr moa::extent_t kEmulatorTokenReach = 4096;

// What the emulator counts of the simt.* variants' calls, one state shared
// by all of them (the emulator's launch log is one).
class SimtInstrumentation : public Instrumentation {
 public:
  // The schedule: the case's seed (RunOptions::schedule_seed, so that
  // `reproduce` replays it) plus the variation the spread measurements set.
  void before_run(const RunOptions& opt) {
    simt::set_schedule_seed(opt.schedule_seed + variation_.load());
    call_start_ = simt::launch_log_size();
  }

  // Every call that ran to the end is checked against the traffic law
  // (kernels/cuda/traffic_law.hpp): its own launches, from the log's
  // length when it started; decode's lens read from its input, so that its
  // model is exact. The first difference is kept for take_count_mismatch.
  // Each launch's counts beside the model are kept too, for the
  // certificate's plot (take_launch_counts): paired in launch order, as
  // the law pairs them.
  void after_run(const std::string& onf, const Problem& p, std::span<const TensorRef> in) {
    std::vector<std::int64_t> lens;
    const bool lens_known = p.op == Op::attention_decode;
    if (lens_known) {
      const auto view = inputs_by_name(p.op, in)["lens"].view<const std::int64_t>();
      for (moa::extent_t b = 0; b < p.dims.B; ++b) lens.push_back(view(b));
    }
    const std::vector<std::int64_t>* known_lens = lens_known ? &lens : nullptr;
    const std::vector<simt::LaunchRecord> counted = simt::launch_log_from(call_start_);
    const std::vector<cuda_cost::LaunchCost> model =
        cuda_cost::traffic_bounds(onf, p, known_lens).most;  // exact: the lens are known
    for (std::size_t k = 0; k < std::min(counted.size(), model.size()); ++k) {
      const simt::LaunchRecord& c = counted[k];
      const cuda_cost::TensorTraffic m = model[k].total();
      launch_counts_.push_back({c.kernel, double(c.atomic_add_global + c.atomics_other), m.atomics,
                                double(c.global_load_bytes + c.global_store_bytes),
                                m.load_bytes + m.store_bytes, double(c.global_loads),
                                double(c.global_stores)});
    }
    const auto mismatches = cuda_cost::traffic_mismatches(onf, p, known_lens, counted);
    if (!mismatches.empty() && first_mismatch_.empty())
      first_mismatch_ =
          "simt." + onf + ": " + mismatches.front() +
          (mismatches.size() > 1 ? " (and " + std::to_string(mismatches.size() - 1) + " more)"
                                 : std::string());
  }

  std::string simt_counters() override {
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
  }

  // The counts a certificate carries: the launches' sums since the last
  // take, then each tensor's share of the global traffic (nonzero figures
  // only, in the order the tensors were first met).
  std::optional<Counts> take_counts() override {
    double atomics = 0, other = 0, loads = 0, load_bytes = 0, stores = 0, store_bytes = 0;
    double launches = 0, barriers = 0;
    std::vector<simt::TensorRecord> tensors;
    for (const simt::LaunchRecord& l : simt::take_launch_log()) {
      for (const simt::TensorRecord& t : l.tensors) {
        auto same = std::find_if(tensors.begin(), tensors.end(),
                                 [&](const simt::TensorRecord& k) { return k.tensor == t.tensor; });
        if (same == tensors.end())
          tensors.push_back(t);
        else
          *same += t;
      }
      ++launches;
      atomics += double(l.atomic_add_global);
      other += double(l.atomics_other);
      loads += double(l.global_loads);
      load_bytes += double(l.global_load_bytes);
      stores += double(l.global_stores);
      store_bytes += double(l.global_store_bytes);
      barriers += double(l.barriers);
    }
    Counts counts{{"launches", launches},
                  {"float atomics", atomics},
                  {"other atomics", other},
                  {"global loads", loads},
                  {"global load bytes", load_bytes},
                  {"global stores", stores},
                  {"global store bytes", store_bytes},
                  {"barriers", barriers}};
    for (const simt::TensorRecord& t : tensors) {
      const std::pair<const char*, std::uint64_t> figures[] = {
          {"global loads of ", t.loads},
          {"global load bytes of ", t.load_bytes},
          {"global stores of ", t.stores},
          {"global store bytes of ", t.store_bytes},
          {"atomics into ", t.atomics}};
      for (const auto& [what, n] : figures)
        if (n) counts.emplace_back(what + t.tensor, double(n));
    }
    return counts;
  }

  std::optional<std::string> take_count_mismatch() override {
    return std::exchange(first_mismatch_, std::string());
  }

  bool seeds_schedule() const override { return true; }
  void set_schedule_seed(std::uint64_t variation) override { variation_.store(variation); }

  std::vector<LaunchCounts> take_launch_counts() override {
    return std::exchange(launch_counts_, {});
  }

 private:
  std::size_t call_start_ = 0;
  std::string first_mismatch_;
  std::vector<LaunchCounts> launch_counts_;
  std::atomic<std::uint64_t> variation_{0};
};

}  // namespace

std::string simt_settings_error() {
  const char* why = moacert_simt_settings_error();
  return why ? why : "";
}

void register_simt_kernels(Registry& r) {
  auto counting = std::make_shared<SimtInstrumentation>();
  simt::BackendHooks hooks{
      [counting](const RunOptions& opt) { counting->before_run(opt); },
      [counting](const std::string& onf, const Problem& p, std::span<const TensorRef> in) {
        counting->after_run(onf, p, in);
      },
      counting};
  // The token counts the emulator affords a case (docs/design.md#envelope):
  // simt.rmsnorm's 131072 rows took over a minute a case, its 4096 rows
  // under 2 s.
  hooks.token_reach = kEmulatorTokenReach;
  hooks.token_reach_why = "the SIMT emulator runs some 10^4 blocks a second, so a case of " +
                          std::to_string(kEmulatorTokenReach) +
                          " rows takes seconds, of 131072 minutes";
  simt::register_onfs(r, "simt", "host emulator", hooks);
}

}  // namespace moacert::kernels
