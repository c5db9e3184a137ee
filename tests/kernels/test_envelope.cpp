// A kernel's envelope (kernels/envelope.hpp): the extents and options it
// admits, the phrase naming why a problem lies outside, and each kind of
// malformed declaration refused with the kernel and the field named.
#include "kernels/envelope.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace moacert::kernels {
namespace {

Problem attention(moa::extent_t d, bool causal, moa::extent_t h = 4, moa::extent_t hkv = 4) {
  Problem p;
  p.op = Op::attention_fwd;
  p.dims.B = 1;
  p.dims.H = h;
  p.dims.Hkv = hkv;
  p.dims.N = 32;
  p.dims.M = 48;
  p.dims.D = d;
  p.params.causal = causal;
  return p;
}

std::string refusal(const Envelope& e, Op op) {
  try {
    e.check(op, "lib.so#k");
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(Envelope, AxisAdmitsItsRangeValuesAndMultiples) {
  const AxisEnvelope set{.lo = 1, .hi = 256, .values = {64, 128, 256}};
  EXPECT_TRUE(set.admits(128));
  EXPECT_FALSE(set.admits(129));
  EXPECT_FALSE(set.admits(96));
  EXPECT_EQ(set.smallest(2), (std::vector<moa::extent_t>{64, 128}));
  const AxisEnvelope step{.lo = 5, .hi = 64, .multiple = 16};
  EXPECT_FALSE(step.admits(8));
  EXPECT_TRUE(step.admits(48));
  EXPECT_FALSE(step.admits(80));
  EXPECT_EQ(step.smallest(10), (std::vector<moa::extent_t>{16, 32, 48, 64}));
  EXPECT_EQ(step.str(), "5..64, % 16");
}

TEST(Envelope, NamesWhyAProblemLiesOutside) {
  Envelope e;
  e.axes.emplace_back("D", AxisEnvelope{.values = {64, 128}});
  e.causal = false;
  e.grouped_heads = false;
  EXPECT_EQ(e.why_outside(attention(64, false)), "");
  EXPECT_EQ(e.why_outside(attention(129, false)), "D = 129 is not in {64, 128}");
  EXPECT_EQ(e.why_outside(attention(64, true)), "causal masking is not supported");
  EXPECT_EQ(e.why_outside(attention(64, false, 8, 2)),
            "grouped heads (H = 8, Hkv = 2) are not supported");
  EXPECT_FALSE(e.unlimited());
  EXPECT_TRUE(Envelope{}.unlimited());
  EXPECT_EQ(e.str(), "D in {64, 128}; no causal; no GQA/MQA");
}

TEST(Envelope, DecodeNamesItsCacheLengthL) {
  Envelope e;
  e.axes.emplace_back("L", AxisEnvelope{.hi = 4096});
  Problem p;
  p.op = Op::attention_decode;
  p.dims.M = 4097;
  EXPECT_EQ(e.why_outside(p), "L = 4097 is not in 1..4096");
  EXPECT_EQ(refusal(e, Op::attention_decode), "");
}

TEST(Envelope, RefusesEachMalformedDeclarationNamingTheField) {
  auto with_axis = [](const std::string& axis, AxisEnvelope a) {
    Envelope e;
    e.axes.emplace_back(axis, a);
    return e;
  };
  EXPECT_EQ(
      refusal(with_axis("L", {}), Op::attention_fwd),
      "lib.so#k: envelope L: attention.fwd has no dimension L (its dimensions: B H Hkv N M D)");
  EXPECT_EQ(refusal(with_axis("D", {.lo = 9, .hi = 8}), Op::attention_fwd),
            "lib.so#k: envelope D: min 9 is above max 8");
  EXPECT_EQ(refusal(with_axis("D", {.multiple = 0}), Op::attention_fwd),
            "lib.so#k: envelope D: multiple 0 is below 1");
  EXPECT_EQ(refusal(with_axis("D", {.values = {128, 64}}), Op::attention_fwd),
            "lib.so#k: envelope D: values are not strictly ascending");
  EXPECT_EQ(refusal(with_axis("D", {.hi = 100, .values = {64, 128}}), Op::attention_fwd),
            "lib.so#k: envelope D: value 128 lies outside 1..100");
  EXPECT_EQ(refusal(with_axis("N", {.lo = 1, .hi = 15, .multiple = 16}), Op::attention_fwd),
            "lib.so#k: envelope N: 1..15, % 16 admits no extent");
  Envelope twice;
  twice.axes = {{"D", {.hi = 64}}, {"D", {.hi = 128}}};
  EXPECT_EQ(refusal(twice, Op::attention_fwd), "lib.so#k: envelope D: named twice");
  Envelope neither;
  neither.causal = neither.non_causal = false;
  EXPECT_EQ(refusal(neither, Op::attention_bwd),
            "lib.so#k: envelope causal: neither causal nor non-causal attention is supported");
  EXPECT_EQ(refusal(neither, Op::rmsnorm), "");  // the row ops have no mask to support
}

TEST(Envelope, JsonRoundTripsAndRefusesWrongShapes) {
  Envelope e;
  e.axes.emplace_back("D", AxisEnvelope{.values = {64, 128}});
  e.axes.emplace_back("N", AxisEnvelope{.lo = 1, .hi = 32768, .multiple = 16});
  e.grouped_heads = false;
  e.device = Device::cuda;
  const nlohmann::json j = e;
  EXPECT_EQ(envelope_from_json(j), e);
  EXPECT_EQ(j["axes"]["D"], nlohmann::json({{"values", {64, 128}}}));

  auto error = [](const char* text) -> std::string {
    try {
      envelope_from_json(nlohmann::json::parse(text));
    } catch (const std::invalid_argument& refused) {
      return refused.what();
    }
    return "";
  };
  EXPECT_EQ(error(R"({"axes": {"D": {"values": [64, -1]}}})"),
            "envelope D.values: -1 is not a positive integer");
  EXPECT_EQ(error(R"({"axes": {"D": {"step": 16}}})"),
            "envelope D.step: unknown field (min, max, values, multiple)");
  EXPECT_EQ(error(R"({"device": "tpu"})"), R"(envelope device: "tpu" is not "cpu" or "cuda")");
  EXPECT_EQ(error(R"({"causal": 1})"), "envelope causal: 1 is not true or false");
  EXPECT_EQ(error(R"({"gqa": true})"),
            "envelope gqa: unknown member (axes, causal, non_causal, grouped_heads, device)");
}

}  // namespace
}  // namespace moacert::kernels
