// Google Benchmark programs for the attention kernels: every registered
// variant of attention.fwd but cpu.naive (cpu.flash, torch when built) and
// of attention.decode, with GFLOP and GB rate counters from the variants'
// cost functions. Threads: OMP_NUM_THREADS (LibTorch gets the
// same count). `moacert bench` is the command-line front end with peaks.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <string>

#include "bench/harness.hpp"

namespace {

using moacert::Format;
using moacert::Op;
using moacert::Problem;

Problem fwd(moacert::moa::extent_t n, bool causal) {
  Problem p;
  p.op = Op::attention_fwd;
  p.format = Format::f32;
  p.dims.B = 1;
  p.dims.H = 8;
  p.dims.Hkv = 8;
  p.dims.N = n;
  p.dims.M = n;
  p.dims.D = 64;
  p.params.causal = causal;
  return p;
}

Problem decode() {
  Problem p;
  p.op = Op::attention_decode;
  p.format = Format::f32;
  p.dims.B = 4;
  p.dims.H = 32;
  p.dims.Hkv = 8;
  p.dims.N = 1;
  p.dims.M = 8192;
  p.dims.D = 128;
  return p;
}

void add(const moacert::kernels::Variant& v, const Problem& p, const std::string& label) {
  benchmark::RegisterBenchmark(
      (std::string(moacert::info(p.op).name) + "/" + v.name + "/" + label).c_str(),
      [&v, p](benchmark::State& state) {
        moacert::bench::Inputs x = moacert::bench::make_inputs(p, 1);
        const auto in = x.in_refs();
        const auto out = x.out_refs();
        const moacert::kernels::RunOptions opt{omp_get_max_threads()};
        for (auto _ : state) v.run(p, in, out, opt);
        const moacert::kernels::Cost c = v.cost(p);
        state.counters["GFLOP"] =
            benchmark::Counter(c.flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
        state.counters["GB"] = benchmark::Counter((c.bytes_read + c.bytes_written) / 1e9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
      })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const auto& reg = moacert::kernels::Registry::builtin();
  for (const auto* v : reg.of(Op::attention_fwd)) {
    if (v->name == "cpu.naive") continue;  // a correctness reference, seconds per call
    if (v->backend == "simt") continue;    // the host emulator: minutes per call here
    add(*v, fwd(2048, false), "N=M=2048,D=64");
    add(*v, fwd(2048, true), "N=M=2048,D=64,causal");
  }
  for (const auto* v : reg.of(Op::attention_decode))
    if (v->backend != "simt") add(*v, decode(), "B=4,H=32,Hkv=8,L=8192,D=128");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
