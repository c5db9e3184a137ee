// The property suite: each property of properties/properties.hpp, for each
// op and each format its variants support, is one GoogleTest test
// "<op>/<Property>.<format>" and so one CTest test, labelled `property` and
// by op. --op=NAME restricts the binary to one op.
// RapidCheck honours RC_PARAMS (seed, max_success); a failure prints its
// reproduce string and the shrunk case.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "properties/properties.hpp"
#include "tests/support/harness.hpp"

namespace {

using namespace moacert;

using test::PropertyTest;

void add(Op op, const std::string& property, Format f, std::function<bool()> body) {
  const std::string suite = std::string(info(op).name) + "/" + property;
  const std::string test(name(f));
  ::testing::RegisterTest(suite.c_str(), test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [body]() -> ::testing::Test* { return new PropertyTest(body); });
}

void register_properties(Op op) {
  for (Format f : kAllFormats) {
    const auto variants = properties::variants_for(op, f);
    if (variants.empty()) continue;
    add(op, "Agreement", f, [=] { return properties::prop_agreement(op, f); });
    add(op, "LayoutInvariance", f, [=] { return properties::prop_layout_invariance(op, f); });
    add(op, "Determinism", f, [=] { return properties::prop_determinism(op, f); });
    if (op == Op::attention_fwdbwd) {
      add(op, "BackwardConsistency", f, [=] { return properties::prop_backward_consistency(f); });
    }
    // Only in builds with LibTorch, for the formats its adaptor runs.
    if (properties::torch_for(op, f) && !properties::vs_torch_variants_for(op, f).empty())
      add(op, "VsTorch", f, [=] { return properties::prop_vs_torch(op, f); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--op=", 5) != 0) continue;
    const std::optional<Op> op = parse_op(argv[i] + 5);
    if (!op) {
      std::fprintf(stderr, "prop_ops: unknown op '%s'\n", argv[i] + 5);
      return 2;
    }
    register_properties(*op);
    return RUN_ALL_TESTS();
  }
  for (const OpInfo& op : all_ops()) register_properties(op.op);
  return RUN_ALL_TESTS();
}
