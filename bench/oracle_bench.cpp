// The oracle's cost on the reference problem of docs/performance.md:
// attention.fwd, B=1, H=1, N=M=128, D=64, f32 target, one thread, inputs
// uniform in [-1, 1) rounded to f32. Built, not run by CTest:
//   build/bench/oracle_bench --benchmark_repetitions=5
// BM_OracleAttentionFwd is the whole oracle (evaluate); BM_FirstPass the
// first pass alone, the vectorised one against the reference (the pass as
// first written), in one run so that their ratio is fair on a noisy machine.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/oracle.hpp"

namespace {

using namespace moacert;

Case reference_case(Format f, bool causal) {
  Case c;
  c.problem.op = Op::attention_fwd;
  c.problem.format = f;
  c.problem.dims = {.B = 1, .H = 1, .Hkv = 1, .N = 128, .M = 128, .D = 64};
  c.problem.params.causal = causal;
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const moa::Shape& s : input_shapes(c.problem)) {
    AnyTensor t(dtype_of(f), moa::Layout::row_major(s));
    for (const moa::Index& i : moa::iota(s)) t.set(i, u(rng));
    c.inputs.push_back(std::move(t));
  }
  return c;
}

void BM_OracleAttentionFwd(benchmark::State& state) {
  const auto f = static_cast<Format>(state.range(0));
  const Case c = reference_case(f, state.range(1) != 0);
  oracle::Answer a;
  for (auto _ : state) {
    a = oracle::evaluate(c, {.threads = 1, .exact_ulp_bits = static_cast<int>(state.range(2))});
    benchmark::DoNotOptimize(a);
  }
  state.counters["decided_first_pct"] = 100.0 * double(a.decided_first) / double(a.elements);
  state.counters["undetermined"] = double(a.undetermined);
  state.counters["max_bits"] = a.max_precision_used;
  state.counters["log2_max_rel_width"] =
      a.max_relative_width > 0 ? std::log2(a.max_relative_width) : -9999;
  state.SetLabel(std::string(name(f)) + (state.range(1) ? " causal" : "") + " exact_ulp_bits " +
                 std::to_string(state.range(2)));
}
BENCHMARK(BM_OracleAttentionFwd)
    // (format, causal, exact_ulp_bits): the default DD accuracy (10), the
    // first pass alone (0), and a stricter DD (12)
    ->Args({static_cast<int>(Format::f32), 0, 10})
    ->Args({static_cast<int>(Format::f32), 0, 0})
    ->Args({static_cast<int>(Format::f32), 0, 12})
    ->Args({static_cast<int>(Format::f32), 1, 10})
    ->Args({static_cast<int>(Format::bf16), 0, 10})
    ->Args({static_cast<int>(Format::f64), 0, 10})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// (format, pass): 0 the vectorised first pass, 1 the reference.
void BM_FirstPass(benchmark::State& state) {
  const auto f = static_cast<Format>(state.range(0));
  const bool reference = state.range(1) != 0;
  const Case c = reference_case(f, /*causal=*/false);
  const auto units = oracle::detail::units_of(c.problem);
  std::vector<double> lo(8320), hi(8320);  // o (128·64) then lse (128)
  const oracle::detail::FastSink sink = [&](std::size_t, int out, moa::extent_t flat, double l,
                                            double h) {
    const auto i = static_cast<std::size_t>(out == 0 ? flat : 128 * 64 + flat);
    lo[i] = l;
    hi[i] = h;
  };
  for (auto _ : state) {
    if (reference) {
      oracle::detail::fast_pass_reference(c, units, 1, sink);
    } else {
      oracle::detail::fast_pass(c, units, 1, sink);
    }
    benchmark::DoNotOptimize(lo.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 8320);
  state.SetLabel(std::string(name(f)) + (reference ? " reference" : " vectorised"));
}
BENCHMARK(BM_FirstPass)
    ->Args({static_cast<int>(Format::f32), 0})
    ->Args({static_cast<int>(Format::f32), 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
