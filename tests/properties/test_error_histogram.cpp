// The run's exact statistics (results/error_histogram.hpp): quantiles read
// from the log-spaced histogram against the sorted list of the same values,
// and a mixture where one bad case among many good ones must show in the
// p99 — the 99th percentile of the cases' own p99s hid it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "results/error_histogram.hpp"

namespace moacert::properties {
namespace {

// The bin edges are exp() of the log-spaced grid: a value on an edge may be
// counted in the bin below it by a rounding of the log. Relative slack of a
// few ulps of double covers that.
constexpr double kEdgeSlack = 1e-12;
const double kResolution = std::pow(10.0, 1.0 / kBinsPerDecade);

double exact_quantile(std::vector<double> sorted, double q) {
  std::sort(sorted.begin(), sorted.end());
  const auto rank = std::max<std::size_t>(1, std::size_t(std::ceil(q * double(sorted.size()))));
  return sorted[rank - 1];
}

ErrorHistogram histogram_of(const std::vector<double>& values) {
  ErrorHistogram h = make_error_histogram();
  for (double v : values) h(v);
  return h;
}

// @post for q in {0.5, 0.99, 0.999}: exact <= quantile <= exact * 10^(1/16)
//       (or kLowest when the exact quantile lies below the axis).
TEST(ErrorHistogram, QuantilesBracketTheSortedReference) {
  std::mt19937_64 rng(20261203);
  for (int trial = 0; trial < 50; ++trial) {
    // Errors spread over many decades, with exact zeros and a heavy tail.
    std::lognormal_distribution<double> spread(std::log(0.3), 2.0 + trial % 5);
    std::vector<double> values(1 + rng() % 5000);
    for (double& v : values) v = rng() % 10 == 0 ? 0.0 : spread(rng);
    const double max = *std::max_element(values.begin(), values.end());
    const ErrorHistogram h = histogram_of(values);
    for (double q : {0.5, 0.99, 0.999}) {
      const double exact = exact_quantile(values, q);
      const double read = quantile(h, q, max);
      EXPECT_GE(read * (1 + kEdgeSlack), exact) << "q=" << q << " trial " << trial;
      EXPECT_LE(read, std::max(exact * kResolution * (1 + kEdgeSlack), kLowest))
          << "q=" << q << " trial " << trial;
      EXPECT_LE(read, max);
    }
  }
}

TEST(ErrorHistogram, EmptyAllZeroAndUnboundedErrors) {
  EXPECT_EQ(quantile(make_error_histogram(), 0.99, 0), 0);
  EXPECT_EQ(quantile(histogram_of({0, 0, 0}), 0.5, 0), 0);
  // An infinite error (a NaN or inf output) is the overflow bin: the max.
  EXPECT_EQ(quantile(histogram_of({0.25, INFINITY}), 1.0, INFINITY), INFINITY);
}

// One case of 400 elements at 50 ulp among 200 cases of 100 elements under
// 1 ulp: 2% of the elements are bad, so the p99 over elements is bad, while
// the p99 of the 201 cases' p99s is a good case's.
TEST(ErrorHistogram, OneBadCaseAmongManyGoodShowsInTheP99) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> good(0.0, 0.9);
  ErrorHistogram run = make_error_histogram();
  std::vector<double> all, case_p99s;
  auto add_case = [&](std::vector<double> errors) {
    run += histogram_of(errors);  // merged case by case, as certify does
    case_p99s.push_back(exact_quantile(errors, 0.99));
    all.insert(all.end(), errors.begin(), errors.end());
  };
  for (int c = 0; c < 100; ++c) {
    std::vector<double> e(100);
    for (double& x : e) x = good(rng);
    add_case(e);
  }
  add_case(std::vector<double>(400, 50.0));
  for (int c = 0; c < 100; ++c) {
    std::vector<double> e(100);
    for (double& x : e) x = good(rng);
    add_case(e);
  }
  const double max = *std::max_element(all.begin(), all.end());
  EXPECT_EQ(exact_quantile(all, 0.99), 50.0);
  EXPECT_EQ(quantile(run, 0.99, max), 50.0);  // capped by the exact max
  EXPECT_LT(exact_quantile(case_p99s, 0.99), 1.0) << "the old estimator, for contrast";
  EXPECT_LT(quantile(run, 0.5, max), 1.0);
}

}  // namespace
}  // namespace moacert::properties
