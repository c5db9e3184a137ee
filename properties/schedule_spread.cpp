#include "properties/schedule_spread.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "oracle/ulp.hpp"

namespace moacert::properties {

std::vector<std::pair<std::string, double>> spread_ulps(
    const std::vector<std::vector<AnyTensor>>& runs, const oracle::Answer& exact,
    const Problem& p) {
  const auto names = info(p.op).outputs;
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t t = 0; t < runs[0].size(); ++t) {
    const Format f = output_format(p, t);
    double spread = 0;
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(runs[0][t].shape())) {
      if (exact.outputs[t].evaluated[n]) {
        double lo = INFINITY, hi = -INFINITY;
        for (const auto& run : runs) {
          lo = std::min(lo, run[t].get(i));
          hi = std::max(hi, run[t].get(i));
        }
        if (hi > lo)
          spread = std::max(spread, (hi - lo) / oracle::ulp(f, exact.outputs[t].exact[n]));
      }
      ++n;
    }
    out.push_back({std::string(names[t]), spread});
  }
  return out;
}

double emulated_accesses(const std::vector<std::pair<std::string, double>>& counts) {
  double n = 0;
  for (const auto& [what, count] : counts)
    if (what == "global loads" || what == "global stores") n += count;
  return n;
}

int spread_schedules(double cases_accesses, double worst_accesses) {
  if (!(worst_accesses > 0)) return kSpreadRuns;
  const double held = std::floor(cases_accesses / worst_accesses);
  return int(std::clamp(held, double(kMinSpreadRuns), double(kSpreadRuns)));
}

void schedule_spread(Certificate& cert, const SpreadCase& w, const kernels::Variant& v,
                     const Rule& rule, int threads, int schedules) {
  std::vector<std::vector<AnyTensor>> runs;
  for (int r = 1; r <= schedules && cert.holds; ++r) {
    v.instrumentation->set_schedule_seed(std::uint64_t(r));
    runs.push_back(run_variant(v, w.c, threads));
    const Verdict verdict =
        judge(w.c, w.exact, runs.back(), rule, w.bounds.empty() ? nullptr : &w.bounds,
              w.torch_errors.empty() ? nullptr : &w.torch_errors);
    if (!verdict.holds) {
      cert.holds = false;
      cert.failure = "schedule " + std::to_string(r) + " of the worst case: " + verdict.why;
      cert.failure_case = "moacert reproduce " + cert.worst_token;
      cert.worst_ratio = INFINITY;
    }
  }
  v.instrumentation->set_schedule_seed(0);
  v.instrumentation->take_counts();
  cert.spread_runs = int(runs.size());
  if (cert.holds) cert.spread_ulps = spread_ulps(runs, w.exact, w.c.problem);
}

}  // namespace moacert::properties
