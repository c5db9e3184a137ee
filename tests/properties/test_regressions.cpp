// The regression corpus: every case file in tests/regressions/ (a
// counterexample once found and fixed) is replayed against every variant of
// its op that supports its format, under the a priori rule; and its bounds
// under every arithmetic a kernel may declare are numbers or +inf, never NaN
// (a declared exp of 4096 ulps once gave `bound -nan` on a backward row whose
// rescales compound its error past the row sum, attention-bwd-f32-coarse-exp-unbounded-row).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "oracle/bounds.hpp"
#include "oracle/case_json.hpp"
#include "properties/arithmetic_check.hpp"
#include "reference/arithmetic_spec.hpp"
#include "properties/properties.hpp"

namespace moacert::properties {
namespace {

namespace fs = std::filesystem;

class Regression : public ::testing::Test {
 public:
  explicit Regression(fs::path file) : file_(std::move(file)) {}
  void TestBody() override {
    const Case c = oracle::read_case_file(file_.string());
    const oracle::Answer exact = oracle::evaluate(c);
    const auto bounds = oracle::apriori_bounds(c);
    const auto variants = variants_for(c.problem.op, c.problem.format);
    ASSERT_FALSE(variants.empty()) << "no variant of the case's op and format in this build";
    for (const kernels::Variant* v : variants) {
      const Verdict verdict = judge(c, exact, run_variant(*v, c), Rule{}, &bounds);
      EXPECT_TRUE(verdict.holds) << v->name << ": " << verdict.why;
    }
    for (const Arithmetic& a : candidate_arithmetics(c.problem.op, c.problem.format, {}))
      for (const auto& tensor : oracle::apriori_bounds(c, {.arithmetic = a}))
        for (double b : tensor) ASSERT_TRUE(!std::isnan(b) && b >= 0) << to_string(a) << ": " << b;
  }

 private:
  fs::path file_;
};

}  // namespace
}  // namespace moacert::properties

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // The case files of tests/regressions/, '|'-separated (see CMakeLists).
  std::vector<std::filesystem::path> files;
  const std::string list = MOACERT_REGRESSION_FILES;
  for (std::size_t start = 0; start < list.size();) {
    const std::size_t end = std::min(list.find('|', start), list.size());
    files.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    ::testing::RegisterTest(
        "Regression", f.stem().c_str(), nullptr, nullptr, __FILE__, __LINE__,
        [f]() -> ::testing::Test* { return new moacert::properties::Regression(f); });
  }
  return RUN_ALL_TESTS();
}
