// The property suite on the emulated CUDA variants alone (simt.*): each
// property of properties/properties.hpp for each op and format they run,
// one GoogleTest test "simt:<op>/<Property>.<format>". prop_ops runs every
// other variant (its tests exclude simt.*), this binary the emulated ones
// with fewer cases (RC_PARAMS in tests/cuda/CMakeLists.txt), so that the
// emulation's cost in CI stays small.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "properties/properties.hpp"

namespace {

using namespace moacert;

class PropertyTest : public ::testing::Test {
 public:
  explicit PropertyTest(std::function<bool()> body) : body_(std::move(body)) {}
  void TestBody() override { EXPECT_TRUE(body_()) << "see RapidCheck's report above"; }

 private:
  std::function<bool()> body_;
};

void add(Op op, const std::string& property, Format f, std::function<bool()> body) {
  const std::string suite = "simt:" + std::string(info(op).name) + "/" + property;
  const std::string test(name(f));
  ::testing::RegisterTest(suite.c_str(), test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [body]() -> ::testing::Test* { return new PropertyTest(body); });
}

}  // namespace

int main(int argc, char** argv) {
  ::setenv("MOACERT_VARIANTS", "simt.", /*overwrite=*/1);
  ::testing::InitGoogleTest(&argc, argv);
  for (const OpInfo& o : all_ops()) {
    const Op op = o.op;
    for (Format f : {Format::f32, Format::bf16}) {
      if (properties::variants_for(op, f).empty()) continue;
      add(op, "Agreement", f, [=] { return properties::prop_agreement(op, f); });
      add(op, "LayoutInvariance", f, [=] { return properties::prop_layout_invariance(op, f); });
      add(op, "Determinism", f, [=] { return properties::prop_determinism(op, f); });
      if (op == Op::attention_fwdbwd)
        add(op, "BackwardConsistency", f, [=] { return properties::prop_backward_consistency(f); });
    }
  }
  return RUN_ALL_TESTS();
}
