// The property suite on the emulated CUDA variants alone (simt.*): the
// properties of properties/properties.hpp (Agreement, LayoutInvariance,
// Determinism, BackwardConsistency) for each op and format they run, one
// GoogleTest test "simt.<op>.<format>" each. prop_ops runs every
// other variant (its tests exclude simt.*), this binary the emulated ones
// with fewer cases (RC_PARAMS in tests/cuda/CMakeLists.txt), so that the
// emulation's cost in CI stays small.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "properties/properties.hpp"
#include "tests/support/harness.hpp"

namespace {

using namespace moacert;

using test::PropertyTest;

// One test per (op, format) running every property in turn: a process per
// test costs about two seconds of start-up, more than a property here.
void add(Op op, Format f, std::vector<std::function<bool()>> properties) {
  const std::string suite = "simt." + std::string(info(op).name);
  const std::string test(name(f));
  ::testing::RegisterTest(suite.c_str(), test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [properties]() -> ::testing::Test* {
                            return new PropertyTest([properties] {
                              bool all = true;
                              for (const auto& p : properties) all = p() && all;
                              return all;
                            });
                          });
}

}  // namespace

int main(int argc, char** argv) {
  ::setenv("MOACERT_VARIANTS", "simt.", /*overwrite=*/1);
  ::testing::InitGoogleTest(&argc, argv);
  for (const OpInfo& o : all_ops()) {
    const Op op = o.op;
    for (Format f : {Format::f32, Format::bf16}) {
      if (properties::variants_for(op, f).empty()) continue;
      std::vector<std::function<bool()>> props = {
          [=] { return properties::prop_agreement(op, f); },
          [=] { return properties::prop_layout_invariance(op, f); },
          [=] { return properties::prop_determinism(op, f); }};
      if (op == Op::attention_fwdbwd)
        props.push_back([=] { return properties::prop_backward_consistency(f); });
      add(op, f, props);
    }
  }
  return RUN_ALL_TESTS();
}
