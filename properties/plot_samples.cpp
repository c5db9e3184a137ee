#include "properties/plot_samples.hpp"

#include "include/moacert/splitmix64.hpp"
#include "oracle/ulp.hpp"
#include "properties/check.hpp"

namespace moacert::properties {

namespace {

// The reservoir's key of an item from its identity (splitmix64 hashes), so
// that every grouping of the cases keeps the same items.
std::uint64_t key_of(std::uint64_t kind, std::int64_t ordinal, std::uint64_t a, std::uint64_t b) {
  return splitmix64(splitmix64(splitmix64(kind) ^ std::uint64_t(ordinal)) ^ a) ^ splitmix64(b);
}
constexpr std::uint64_t kCaseKey = 1, kElementKey = 2, kLaunchKey = 3;

// How far a launch's count is from its model, relatively: the worst
// launches are kept whatever the reservoir draws.
double relative_difference(double counted, double model) {
  const double scale = std::max(std::fabs(counted), std::fabs(model));
  return scale == 0 ? 0 : std::fabs(counted - model) / scale;
}

}  // namespace

CasePlot plot_case(int ordinal, const Case& c, const oracle::Answer& exact,
                   const std::vector<AnyTensor>& outputs, const Rule& rule,
                   const std::vector<std::vector<double>>& allowed,
                   const std::vector<std::vector<double>>* bounds,
                   const std::vector<AnyTensor>& torch,
                   const std::vector<kernels::LaunchCounts>& launches) {
  CasePlot p;
  p.errors.ordinal = ordinal;
  for (std::string_view d : dims_of(c.problem.op))
    p.errors.extents.push_back(c.problem.dims.*dim_field(d));
  p.errors.max_ulp.assign(outputs.size(), 0);
  p.errors.max_ratio.assign(outputs.size(), 0);
  p.elements.assign(outputs.size(), {kWorstElements, kReservoirElements});
  for_each_judged_element(
      c, exact, outputs, allowed, rule,
      [&](std::size_t t, std::size_t n, const moa::Index& i, const oracle::DD& x, double, double,
          const ElementJudgement& e) {
        ElementPoint point{ordinal, std::int64_t(n), e.ulps, e.abs_error};
        if (bounds) point.bound = (*bounds)[t][n];
        if (!torch.empty())
          point.torch_ulps = oracle::ulp_error(output_format(c.problem, t), torch[t].get(i), x);
        p.elements[t].add(point, e.margin, key_of(kElementKey, ordinal, t, n));
        // NaN errors count as the largest (std::max would drop them).
        double& worst_ulp = p.errors.max_ulp[t];
        double& worst_ratio = p.errors.max_ratio[t];
        worst_ulp = std::isnan(e.ulps) || e.ulps > worst_ulp ? e.ulps : worst_ulp;
        worst_ratio = e.margin > worst_ratio ? e.margin : worst_ratio;
      });
  for (std::size_t k = 0; k < launches.size(); ++k) {
    const kernels::LaunchCounts& l = launches[k];
    p.launches.add({ordinal, int(k), l.kernel, l.atomics, l.model_atomics, l.bytes, l.model_bytes},
                   std::max(relative_difference(l.atomics, l.model_atomics),
                            relative_difference(l.bytes, l.model_bytes)),
                   key_of(kLaunchKey, ordinal, k, 0));
  }
  return p;
}

PlotSampler::PlotSampler(Op op) {
  for (std::string_view d : dims_of(op)) head_.dims.emplace_back(d);
  for (std::string_view t : info(op).outputs) head_.tensors.emplace_back(t);
  elements_.assign(head_.tensors.size(), {kWorstElements, kReservoirElements});
}

void PlotSampler::add(const CasePlot& p) {
  cases_.add(p.errors, 0, key_of(kCaseKey, p.errors.ordinal, 0, 0));
  for (std::size_t t = 0; t < p.elements.size() && t < elements_.size(); ++t)
    elements_[t].merge(p.elements[t]);
  launches_.merge(p.launches);
}

PlotData PlotSampler::finish() const {
  PlotData d = head_;
  d.cases_seen = int(cases_.seen());
  d.cases = cases_.items();
  std::sort(d.cases.begin(), d.cases.end(),
            [](const CaseErrors& a, const CaseErrors& b) { return a.ordinal < b.ordinal; });
  for (const auto& e : elements_) {
    d.elements_seen.push_back(e.seen());
    d.elements.push_back(e.items());
  }
  d.launches_seen = int(launches_.seen());
  d.launches = launches_.items();
  return d;
}

}  // namespace moacert::properties
