#include "reports/growth_fit.hpp"

#include <algorithm>
#include <cmath>

namespace moacert::reports {

GrowthFit fit_growth(const std::vector<std::pair<double, double>>& extent_error) {
  GrowthFit f;
  std::vector<std::pair<double, double>> logs;  // (log extent, log error)
  std::vector<double> extents;
  for (const auto& [x, y] : extent_error) {
    if (!(x >= 1) || !std::isfinite(x) || !(y > 0) || !std::isfinite(y)) continue;
    logs.push_back({std::log(x), std::log(y)});
    if (std::find(extents.begin(), extents.end(), x) == extents.end()) extents.push_back(x);
  }
  f.points = int(logs.size());
  f.distinct = int(extents.size());
  if (f.distinct < kMinDistinctExtents) return f;
  const double n = double(logs.size());
  double mx = 0, my = 0;
  for (const auto& [lx, ly] : logs) {
    mx += lx / n;
    my += ly / n;
  }
  double sxx = 0, sxy = 0, syy = 0;
  for (const auto& [lx, ly] : logs) {
    sxx += (lx - mx) * (lx - mx);
    sxy += (lx - mx) * (ly - my);
    syy += (ly - my) * (ly - my);
  }
  f.fitted = true;
  f.p = sxy / sxx;  // sxx > 0: at least two distinct extents
  f.a = my - f.p * mx;
  const double residual = std::max(0.0, syy - f.p * sxy);
  f.r2 = syy > 0 ? 1 - residual / syy : 1;
  return f;
}

}  // namespace moacert::reports
