// The distribution of an error figure (ulps, or error / allowed) over every
// judged element of a run, as a Boost.Histogram over log-spaced bins: exact
// counts, mergeable case by case (`+=`), and small enough to keep in the
// certificate for the plots (docs/certificate.md#statistics).
//
// Resolution: kBinsPerDecade bins per decade from kLowest to kHighest, so a
// quantile read from the histogram is the upper edge of the bin that holds
// it, at most a factor 10^(1/kBinsPerDecade) (about 1.155) above the exact
// quantile and never below it; capped by the exact maximum, which is kept
// beside it. Values below kLowest (0 among them) fall in the underflow bin,
// values above kHighest, infinities and NaN in the overflow bin.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include <boost/histogram/axis/regular.hpp>
#include <boost/histogram/histogram.hpp>
#include <boost/histogram/make_histogram.hpp>
#include <boost/histogram/storage_adaptor.hpp>

namespace moacert::properties {

constexpr int kBinsPerDecade = 16;
constexpr double kLowest = 1e-6, kHighest = 1e12;
constexpr int kDecades = 18;  // log10(kHighest / kLowest)

using ErrorAxis = boost::histogram::axis::regular<double, boost::histogram::axis::transform::log>;
using ErrorHistogram =
    boost::histogram::histogram<std::tuple<ErrorAxis>,
                                boost::histogram::storage_adaptor<std::vector<std::int64_t>>>;

inline ErrorHistogram make_error_histogram() {
  return boost::histogram::make_histogram_with(
      boost::histogram::storage_adaptor<std::vector<std::int64_t>>(),
      ErrorAxis(kBinsPerDecade * kDecades, kLowest, kHighest));
}

// The q-quantile (0 < q <= 1) of the values counted in `h`: the upper edge
// of the bin holding the ceil(q * n)-th smallest value, capped by `max`, the
// exact largest value; 0 when `h` is empty.
// @post quantile >= the exact q-quantile, and <= it times 10^(1/kBinsPerDecade)
//       when the exact quantile is at least kLowest.
inline double quantile(const ErrorHistogram& h, double q, double max) {
  const auto& axis = h.axis();
  std::int64_t n = 0;
  for (int i = -1; i <= axis.size(); ++i) n += h.at(i);
  if (n == 0) return 0;
  const auto rank = std::max<std::int64_t>(1, std::int64_t(std::ceil(q * double(n))));
  std::int64_t below = 0;
  for (int i = -1; i < axis.size(); ++i) {  // underflow, then the bins
    below += h.at(i);
    if (below >= rank) return std::min(max, i < 0 ? kLowest : axis.bin(i).upper());
  }
  return max;  // the overflow bin: past kHighest, inf or NaN
}

}  // namespace moacert::properties
