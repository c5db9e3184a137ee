// The schedule spread's budget (docs/design.md#schedule-spread): as many
// runs of the worst case as the judged cases' emulated global accesses
// hold, at most kSpreadRuns and at least kMinSpreadRuns; all of them where
// the worst case counted nothing to bound by.
#include <gtest/gtest.h>

#include "properties/schedule_spread.hpp"

namespace moacert::properties {
namespace {

TEST(ScheduleSpread, RunsAsManySchedulesAsTheCasesAccessesHold) {
  EXPECT_EQ(spread_schedules(1000, 10), kSpreadRuns);  // 100 runs held: the promise, 20
  EXPECT_EQ(spread_schedules(200, 10), kSpreadRuns);   // exactly 20
  EXPECT_EQ(spread_schedules(199, 10), 19);
  EXPECT_EQ(spread_schedules(75, 10), 7);
  EXPECT_EQ(spread_schedules(25, 10), kMinSpreadRuns);  // 2 held
  EXPECT_EQ(spread_schedules(12, 10), kMinSpreadRuns);  // 1 held: a spread needs two
  EXPECT_EQ(spread_schedules(10, 0), kSpreadRuns);      // nothing counted to bound by
  EXPECT_EQ(spread_schedules(0, 0), kSpreadRuns);
}

TEST(ScheduleSpread, CountsTheGlobalLoadsAndStoresAlone) {
  const std::vector<std::pair<std::string, double>> counts = {
      {"launches", 3},        {"float atomics", 40},
      {"global loads", 1000}, {"global load bytes", 4000},
      {"global stores", 250}, {"global loads of q", 500},
      {"barriers", 7}};
  EXPECT_EQ(emulated_accesses(counts), 1250);
  EXPECT_EQ(emulated_accesses({}), 0);
}

}  // namespace
}  // namespace moacert::properties
