// The plots' arithmetic and data: the growth fit recovers a power law and
// refuses too little spread; plot_data survives its JSON round trip, which
// `moacert report --from` draws from.
#include <gtest/gtest.h>

#include <cmath>

#include "reports/growth_fit.hpp"
#include "reports/plot_data.hpp"

namespace moacert::reports {
namespace {

TEST(GrowthFit, RecoversTheExponentOfAPowerLaw) {
  for (double p : {0.0, 0.5, 1.0, 2.0}) {
    std::vector<std::pair<double, double>> xy;
    for (double x : {1.0, 3.0, 17.0, 64.0, 300.0}) xy.push_back({x, 0.25 * std::pow(x, p)});
    xy.push_back({5.0, 0.0});  // a zero error: not on a log scale, left out
    const GrowthFit f = fit_growth(xy);
    ASSERT_TRUE(f.fitted);
    EXPECT_NEAR(f.p, p, 1e-12);
    EXPECT_NEAR(std::exp(f.a), 0.25, 1e-12);
    EXPECT_NEAR(f.r2, 1, 1e-12);
    EXPECT_EQ(f.points, 5);
  }
}

TEST(GrowthFit, NoFitOverTooLittleSpread) {
  // Many cases, but two distinct extents among those with a nonzero error.
  const GrowthFit f =
      fit_growth({{8, 1}, {8, 2}, {16, 3}, {16, 1}, {32, 0}, {64, INFINITY}, {128, NAN}});
  EXPECT_FALSE(f.fitted);
  EXPECT_EQ(f.distinct, 2);
  EXPECT_EQ(f.points, 4);
  // Noise lowers R² below 1.
  const GrowthFit noisy = fit_growth({{1, 1}, {2, 3}, {4, 2}, {8, 9}});
  ASSERT_TRUE(noisy.fitted);
  EXPECT_LT(noisy.r2, 1);
  EXPECT_GT(noisy.r2, 0);
}

TEST(PlotData, RoundTripsThroughJson) {
  properties::PlotData d;
  d.dims = {"T", "D"};
  d.tensors = {"y", "z"};
  d.cases_seen = 9;
  d.cases = {{0, {3, 17}, {0.5, INFINITY}, {1e-3, 2}}, {4, {1, 1}, {0, 0.25}, {0, 1e-9}}};
  d.elements_seen = {100, 200};
  d.elements = {{{0, 5, 0.5, 1e-8, 2e-6, NAN}}, {{4, 0, INFINITY, INFINITY, NAN, 0.25}}};
  d.launches_seen = 3;
  d.launches = {{0, 1, "(k<T>)", 0, 0, 4096, 4096}};
  const nlohmann::json j = {{"plot_data", plot_data_json(d)}};
  const properties::PlotData back = plot_data_of(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.dims, d.dims);
  EXPECT_EQ(back.tensors, d.tensors);
  EXPECT_EQ(back.cases_seen, 9);
  ASSERT_EQ(back.cases.size(), 2u);
  EXPECT_EQ(back.cases[0].extents, d.cases[0].extents);
  EXPECT_EQ(back.cases[0].max_ulp[1], INFINITY);
  EXPECT_EQ(back.cases[1].max_ratio[1], 1e-9);
  ASSERT_EQ(back.elements.size(), 2u);
  EXPECT_EQ(back.elements[0][0].bound, 2e-6);
  EXPECT_TRUE(std::isnan(back.elements[0][0].torch_ulps));
  EXPECT_TRUE(std::isnan(back.elements[1][0].bound));
  EXPECT_EQ(back.elements[1][0].ulps, INFINITY);
  EXPECT_EQ(back.elements_seen, d.elements_seen);
  ASSERT_EQ(back.launches.size(), 1u);
  EXPECT_EQ(back.launches[0].kernel, "(k<T>)");
  EXPECT_EQ(back.launches[0].model_bytes, 4096);
  // A certificate from before plot_data: no plots, no error.
  EXPECT_TRUE(plot_data_of(nlohmann::json::object()).cases.empty());
  // A malformed one names the field.
  nlohmann::json bad = j;
  bad["plot_data"]["cases"]["kept"][0]["extents"] = {1};
  try {
    plot_data_of(bad);
    FAIL() << "accepted extents of the wrong length";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "field \"plot_data.cases.kept[].extents\" malformed");
  }
}

}  // namespace
}  // namespace moacert::reports
