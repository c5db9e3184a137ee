// The growth exponent of an error against an extent: the least-squares fit
// of log(error) = a + p·log(extent) over the cases with a nonzero, finite
// error (docs/design.md, "report.html"). Meaningless over too little
// spread: with fewer than kMinDistinctExtents distinct extents there is no
// fit, and the page says so instead of drawing a line.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace moacert::reports {

constexpr int kMinDistinctExtents = 3;

struct GrowthFit {
  bool fitted = false;
  double a = 0, p = 0;
  double r2 = 0;     // the coefficient of determination of the log-log fit (1 when exact)
  int points = 0;    // cases used: extent >= 1, error finite and > 0
  int distinct = 0;  // distinct extents among them
};

// (extent, error) pairs, one per case.
// @post fitted iff distinct >= kMinDistinctExtents; then error ≈ e^a · extent^p.
GrowthFit fit_growth(const std::vector<std::pair<double, double>>& extent_error);

}  // namespace moacert::reports
