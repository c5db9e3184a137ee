// Google Benchmark programs for attention.bwd (cpu.flash_bwd),
// attention.fwdbwd (cpu.fused), rmsnorm (cpu.fused) and mlp.swiglu
// (cpu.tiled) at the sizes, with the references the targets are
// stated against: a streaming copy (rmsnorm) and OpenBLAS's cblas_sgemm on
// the same GEMMs (mlp.swiglu). Built, not run by CTest; the figures and
// commands are in docs/performance.md ("Backward, fused, RMSNorm and MLP kernels").
//
// Threads: every kernel and OpenBLAS run on --threads (default 2), set by the
// MOACERT_BENCH_THREADS environment variable.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/common/gemm.hpp"
#include "kernels/registry.hpp"
#include "reference/named.hpp"
#include "reference/problem.hpp"
#include "reference/tensor.hpp"

namespace {

using namespace moacert;
using kernels::Registry;
using kernels::Variant;

int bench_threads() {
  const char* s = std::getenv("MOACERT_BENCH_THREADS");
  return s ? std::atoi(s) : 2;
}

// Row-major tensors of the problem's shapes, inputs uniform in [-1, 1].
struct Buffers {
  std::vector<AnyTensor> in, out;
  std::vector<TensorRef> in_refs, out_refs;
};

Buffers make_buffers(const Problem& p, unsigned seed = 1) {
  Buffers b;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (const moa::Shape& s : input_shapes(p)) {
    AnyTensor t(DType::f32, moa::Layout::row_major(s));
    float* x = static_cast<float*>(t.data());
    for (moa::extent_t i = 0; i < t.size(); ++i) x[i] = u(rng);
    b.in.push_back(std::move(t));
  }
  for (const moa::Shape& s : output_shapes(p)) {
    AnyTensor t(DType::f32, moa::Layout::row_major(s));
    std::memset(t.data(), 0, t.storage_bytes());
    b.out.push_back(std::move(t));
  }
  for (const AnyTensor& t : b.in) b.in_refs.push_back(t.ref());
  for (AnyTensor& t : b.out) b.out_refs.push_back(t.ref());
  return b;
}

// attention.bwd needs o and lse consistent with q, k, v: use cpu.fused's.
void fill_bwd_o_lse(const Problem& bwd, Buffers& b) {
  Problem fb = bwd;
  fb.op = Op::attention_fwdbwd;
  Buffers f = make_buffers(fb);
  const auto fused_in = inputs_by_name(fb.op, f.in), fused_out = outputs_by_name(fb.op, f.out);
  const auto bwd_in = inputs_by_name(bwd.op, b.in);
  auto copy = [](AnyTensor& to, const AnyTensor& from) {
    std::memcpy(to.data(), from.data(), from.storage_bytes());
  };
  // q, k, v, do of the fused problem are q, k, v, do of the backward.
  for (std::string_view name : {"q", "k", "v", "do"}) copy(fused_in[name], bwd_in[name]);
  Registry::builtin()
      .find(Op::attention_fwdbwd, "cpu.fused")
      ->run(fb, f.in_refs, f.out_refs, {bench_threads()});
  copy(bwd_in["o"], fused_out["o"]);
  copy(bwd_in["lse"], fused_out["lse"]);
}

void run_variant(benchmark::State& state, const Problem& p, const char* name, Buffers& b) {
  const Variant* v = Registry::builtin().find(p.op, name);
  if (!v) {
    state.SkipWithError("variant not registered");
    return;
  }
  const kernels::Cost cost = v->cost(p);
  for (auto _ : state) v->run(p, b.in_refs, b.out_refs, {bench_threads()});
  state.counters["GFLOP/s"] =
      benchmark::Counter(cost.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter((cost.bytes_read + cost.bytes_written) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_extra_MiB"] = cost.peak_extra_bytes / (1 << 20);
  state.counters["threads"] = bench_threads();
}

Problem attention_problem(Op op, moa::extent_t N, bool causal) {
  Problem p;
  p.op = op;
  p.format = Format::f32;
  p.dims.B = 1;
  p.dims.H = 8;
  p.dims.Hkv = 8;
  p.dims.N = N;
  p.dims.M = N;
  p.dims.D = 64;
  p.params.causal = causal;
  return p;
}

// ---- attention.bwd and attention.fwdbwd: B=1, H=8, N=M=2048, D=64, f32 -----
void BM_attention_bwd_flash_bwd(benchmark::State& state) {
  const Problem p = attention_problem(Op::attention_bwd, 2048, state.range(0) != 0);
  Buffers b = make_buffers(p);
  fill_bwd_o_lse(p, b);
  run_variant(state, p, "cpu.flash_bwd", b);
}
BENCHMARK(BM_attention_bwd_flash_bwd)
    ->ArgName("causal")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

void BM_attention_fwdbwd_fused(benchmark::State& state) {
  const Problem p = attention_problem(Op::attention_fwdbwd, 2048, state.range(0) != 0);
  Buffers b = make_buffers(p);
  run_variant(state, p, "cpu.fused", b);
}
BENCHMARK(BM_attention_fwdbwd_fused)
    ->ArgName("causal")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// Peak extra memory of cpu.fused at N = M = 16384 (B = 1, H = 1, D = 64):
// the growth of the process's peak resident set over one call, after the
// inputs and outputs are allocated and touched. Run it on its own
// (--benchmark_filter=peak), since an earlier, larger benchmark would
// already have raised the peak.
void BM_attention_fwdbwd_fused_peak_memory(benchmark::State& state) {
  Problem p = attention_problem(Op::attention_fwdbwd, 16384, false);
  p.dims.H = p.dims.Hkv = 1;
  Buffers b = make_buffers(p);
  const Variant* v = Registry::builtin().find(p.op, "cpu.fused");
  {  // warm up: start the OpenMP threads and the dispatch table before measuring
    Problem small = p;
    small.dims.N = small.dims.M = 64;
    Buffers s = make_buffers(small);
    v->run(small, s.in_refs, s.out_refs, {bench_threads()});
  }
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  for (auto _ : state) v->run(p, b.in_refs, b.out_refs, {bench_threads()});
  getrusage(RUSAGE_SELF, &after);
  state.counters["measured_peak_growth_KiB"] = double(after.ru_maxrss - before.ru_maxrss);
  state.counters["cost_peak_extra_KiB"] = v->cost(p).peak_extra_bytes / 1024;
  state.counters["io_MiB"] = (v->cost(p).bytes_read + v->cost(p).bytes_written) / (1 << 20);
}
BENCHMARK(BM_attention_fwdbwd_fused_peak_memory)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// ---- rmsnorm: T=8192, D=4096, f32; and a streaming copy of the same bytes ----
void BM_rmsnorm_fused(benchmark::State& state) {
  Problem p;
  p.op = Op::rmsnorm;
  p.format = Format::f32;
  p.dims.T = 8192;
  p.dims.D = 4096;
  Buffers b = make_buffers(p);
  run_variant(state, p, "cpu.fused", b);
}
BENCHMARK(BM_rmsnorm_fused)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// Streaming copy: read T·D floats, write T·D floats, OpenMP over rows with
// the same threads: the bandwidth rmsnorm's read-once, write-once can reach.
void BM_stream_copy(benchmark::State& state) {
  const std::size_t T = 8192, D = 4096;
  std::vector<float> x(T * D, 1.0f), y(T * D, 0.0f);
  const int threads = bench_threads();
  for (auto _ : state) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::size_t t = 0; t < T; ++t) std::memcpy(&y[t * D], &x[t * D], D * sizeof(float));
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * T * D * sizeof(float) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_stream_copy)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// ---- mlp.swiglu: T=512, Dm=1024, F=2816, f32; and OpenBLAS on the same GEMMs
Problem mlp_problem() {
  Problem p;
  p.op = Op::mlp_swiglu;
  p.format = Format::f32;
  p.dims.T = 512;
  p.dims.Dm = 1024;
  p.dims.F = 2816;
  return p;
}

void BM_mlp_swiglu_tiled(benchmark::State& state) {
  const Problem p = mlp_problem();
  Buffers b = make_buffers(p);
  run_variant(state, p, "cpu.tiled", b);
}
BENCHMARK(BM_mlp_swiglu_tiled)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// The three GEMMs of the MLP with cblas_sgemm (row-major): x W1, x W3, H W2;
// silu ∘ mul left out, so this is OpenBLAS's GEMM rate, the target's
// reference. GFLOP/s counts the 6 T Dm F GEMM flops only.
void BM_mlp_gemms_openblas(benchmark::State& state) {
  const Problem p = mlp_problem();
  Buffers b = make_buffers(p);
  const int T = int(p.dims.T), Dm = int(p.dims.Dm), F = int(p.dims.F);
  std::vector<float> g(std::size_t(T) * F), h(std::size_t(T) * F);
  const auto in = inputs_by_name(p.op, b.in);
  const auto* x = static_cast<const float*>(in["x"].data());
  const auto* w1 = static_cast<const float*>(in["w1"].data());
  const auto* w3 = static_cast<const float*>(in["w3"].data());
  const auto* w2 = static_cast<const float*>(in["w2"].data());
  auto* y = static_cast<float*>(outputs_by_name(p.op, b.out)["y"].data());
  openblas_set_num_threads(bench_threads());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, F, Dm, 1.0f, x, Dm, w1, F, 0.0f,
                g.data(), F);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, F, Dm, 1.0f, x, Dm, w3, F, 0.0f,
                h.data(), F);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, Dm, F, 1.0f, h.data(), F, w2, Dm,
                0.0f, y, Dm);
    benchmark::DoNotOptimize(y);
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(6.0 * T * Dm * F * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = bench_threads();
}
BENCHMARK(BM_mlp_gemms_openblas)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// One GEMM of the MLP, x (T,Dm) · W1 (Dm,F): our packed GEMM against
// cblas_sgemm, threads from the argument.
void BM_gemm_x_w1(benchmark::State& state) {
  const bool ours = state.range(0) == 0;
  const int threads = int(state.range(1));
  const int T = 512, Dm = 1024, F = 2816;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(std::size_t(T) * Dm), w(std::size_t(Dm) * F), g(std::size_t(T) * F);
  for (float& e : x) e = u(rng);
  for (float& e : w) e = u(rng);
  const moa::View<const float> xv(x.data(), moa::Layout::row_major({T, Dm}));
  const moa::View<const float> wv(w.data(), moa::Layout::row_major({Dm, F}));
  const moa::View<float> gv(g.data(), moa::Layout::row_major({T, F}));
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    if (ours) {
      kernels::cpu::gemm<float>(xv, wv, gv, threads);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, F, Dm, 1.0f, x.data(), Dm, w.data(),
                  F, 0.0f, g.data(), F);
    }
    benchmark::DoNotOptimize(g.data());
  }
  state.SetLabel(ours ? "ours" : "openblas");
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * T * Dm * F * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_gemm_x_w1)
    ->ArgNames({"openblas", "threads"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
