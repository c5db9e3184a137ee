// The plugin worker's life: one worker serves every call of a variant, a
// failure kills it and the next call starts a fresh one, and none is left
// once the variant is gone. The CLI tests (tests/plugins/CMakeLists.txt)
// check the outcomes; these check the processes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "kernels/plugin/plugin.hpp"
#include "reference/case.hpp"

namespace moacert::kernels::plugin {
namespace {

struct Call {
  Problem p;
  std::vector<AnyTensor> in, out;
  Call() {
    p.op = Op::rmsnorm;
    p.format = Format::f32;
    p.dims.T = 3;
    p.dims.D = 5;
    for (const moa::Shape& s : input_shapes(p))
      in.emplace_back(DType::f32, moa::Layout::row_major(s));
    for (AnyTensor& t : in)
      for (const moa::Index& i : moa::iota(t.shape())) t.set(i, 0.5);
    out = make_outputs(p);
  }
  void run(const Variant& v) {
    std::vector<TensorRef> ins, outs;
    for (AnyTensor& t : in) ins.push_back(t.ref());
    for (AnyTensor& t : out) outs.push_back(t.ref());
    v.run(p, ins, outs, {});
  }
};

TEST(PluginWorker, OneWorkerServesEveryCallAndDiesWithItsVariant) {
  {
    const Variant v = load(MOACERT_TEST_PLUGIN_NONE);
    EXPECT_EQ(v.name, "plugin:libfaulty_none.so#planted");
    EXPECT_EQ(live_workers(), 0);  // validation's child is gone; no worker until the first call
    Call c;
    c.run(v);
    ASSERT_EQ(live_workers(), 1);
    const std::vector<int> first = live_worker_pids();
    const auto start = std::chrono::steady_clock::now();
    constexpr int calls = 200;
    for (int k = 0; k < calls; ++k) c.run(v);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        calls;
    std::printf("plugin call, rmsnorm 3x5 f32, through the worker: %.1f us\n", us);
    EXPECT_EQ(live_worker_pids(), first);  // the same process throughout
    EXPECT_FLOAT_EQ(float(c.out[0].get({0, 0})), 1.0f / std::sqrt(0.25f + 1e-6f) * 0.5f * 0.5f);
  }
  EXPECT_EQ(live_workers(), 0);
}

TEST(PluginWorker, AFailureKillsTheWorkerAndTheNextCallStartsAnother) {
  const Variant v = load(MOACERT_TEST_PLUGIN_SEGV);
  Call c;
  for (int k = 0; k < 3; ++k) {
    try {
      c.run(v);
      FAIL() << "the planted segfault did not fault";
    } catch (const KernelFault& e) {
      EXPECT_EQ(std::string(e.what()).rfind("SIGSEGV", 0), 0u) << e.what();
      EXPECT_FALSE(e.hang());
    }
    EXPECT_EQ(live_workers(), 0);  // reaped at once, restarted on demand
  }
}

TEST(PluginWorker, AHangIsKilledAtTheTimeout) {
  LoadOptions o;
  o.timeout_s = 0.5;
  const Variant v = load(MOACERT_TEST_PLUGIN_HANG, o);
  Call c;
  const auto start = std::chrono::steady_clock::now();
  try {
    c.run(v);
    FAIL() << "the planted hang returned";
  } catch (const KernelFault& e) {
    EXPECT_STREQ(e.what(), "timeout after 0.5 s");
    EXPECT_TRUE(e.hang());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(live_workers(), 0);
}

TEST(PluginWorker, AnErrorReturnKeepsTheWorker) {
  const Variant v = load(MOACERT_TEST_PLUGIN_ERROR);
  Call c;
  EXPECT_THROW(c.run(v), KernelFault);
  EXPECT_EQ(live_workers(), 1);
}

}  // namespace
}  // namespace moacert::kernels::plugin
