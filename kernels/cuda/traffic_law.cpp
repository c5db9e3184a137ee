#include "kernels/cuda/traffic_law.hpp"

#include <algorithm>

#include "kernels/cuda/cost.hpp"

namespace moacert::kernels::cuda_cost {
namespace {

std::string figure(double x) {
  return std::to_string(static_cast<long long>(x));
}

std::string words(const TensorTraffic& t) {
  return "loads " + figure(t.load_elements) + " (" + figure(t.load_bytes) + " B), stores " +
         figure(t.store_elements) + " (" + figure(t.store_bytes) + " B), atomics " +
         figure(t.atomics);
}

TensorTraffic counted_traffic(const simt::TensorRecord& r) {
  return {r.tensor,         double(r.loads),       double(r.load_bytes),
          double(r.stores), double(r.store_bytes), double(r.atomics)};
}

// The launch's totals as the emulator counted them (atomics: atomicAdd on
// global memory, the only atomic the kernels use; any other is a mismatch).
TensorTraffic counted_total(const simt::LaunchRecord& r) {
  return {"",
          double(r.global_loads),
          double(r.global_load_bytes),
          double(r.global_stores),
          double(r.global_store_bytes),
          double(r.atomic_add_global + r.atomics_other)};
}

bool within(const TensorTraffic& got, const TensorTraffic& least, const TensorTraffic& most) {
  auto in = [](double x, double lo, double hi) { return lo <= x && x <= hi; };
  return in(got.load_elements, least.load_elements, most.load_elements) &&
         in(got.load_bytes, least.load_bytes, most.load_bytes) &&
         in(got.store_elements, least.store_elements, most.store_elements) &&
         in(got.store_bytes, least.store_bytes, most.store_bytes) &&
         in(got.atomics, least.atomics, most.atomics);
}

std::string modelled(const TensorTraffic& least, const TensorTraffic& most) {
  if (within(least, most, most)) return words(most);  // an exact model
  return "between " + words(least) + " and " + words(most);
}

}  // namespace

std::vector<std::string> traffic_mismatches(std::string_view onf, const Problem& p,
                                            const std::vector<std::int64_t>* lens,
                                            const std::vector<simt::LaunchRecord>& counted) {
  const TrafficBounds model = traffic_bounds(onf, p, lens);
  std::vector<std::string> out;
  if (counted.size() != model.most.size()) {
    out.push_back(std::to_string(counted.size()) + " launches counted, the cost function models " +
                  std::to_string(model.most.size()));
    return out;
  }
  for (std::size_t k = 0; k < counted.size(); ++k) {
    const simt::LaunchRecord& got = counted[k];
    const LaunchCost &least = model.least[k], &most = model.most[k];
    const std::string launch = "launch " + std::to_string(k) + " " + got.kernel;
    if (got.kernel.find(most.kernel) == std::string::npos) {
      out.push_back(launch + ": the cost function models " + most.kernel + " here");
      continue;
    }
    if (!within(counted_total(got), least.total(), most.total()))
      out.push_back(launch + ", all tensors: counted " + words(counted_total(got)) +
                    "; the cost function says " + modelled(least.total(), most.total()));
    // Every tensor either side names, the modelled ones first.
    std::vector<std::string> names;
    for (const TensorTraffic& t : most.tensors) names.push_back(t.tensor);
    for (const simt::TensorRecord& r : got.tensors)
      if (std::find(names.begin(), names.end(), r.tensor) == names.end()) names.push_back(r.tensor);
    for (const std::string& name : names) {
      TensorTraffic mine{name};
      for (const simt::TensorRecord& r : got.tensors)
        if (r.tensor == name) mine = counted_traffic(r);
      const TensorTraffic lo = least.of(name), hi = most.of(name);
      if (!within(mine, lo, hi))
        out.push_back(launch + ", tensor " + name + ": counted " + words(mine) +
                      "; the cost function says " + modelled(lo, hi));
    }
  }
  return out;
}

}  // namespace moacert::kernels::cuda_cost
