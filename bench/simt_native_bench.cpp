// The emulator's cost per simt.* variant (docs/performance.md#simt-variants,
// issue #51): each variant's launches timed three ways in one process, as
// `moacert bench` times them (bench::run: warm-up, then the median of the
// repeats; the simt launches alone, inputs resident):
//   simt    the emulated launch, every check on (kernels/cuda/ built with
//           GCC's -fsanitize=thread callbacks, libmoacert_cuda_simt);
//   native  the same source built for the host without instrumentation
//           (simt_native_kernels), on the same runtime with its own
//           checks off (Options::check_accesses): fibers, barriers, warp
//           collectives and the tensor-core model are still the emulator's;
//   cpu     the CPU ONF of the same op, on one thread.
// Prints a Markdown table with simt/native and simt/cpu per variant.
//
//   simt_native_bench [--repeats R] [--attention B=1,H=1,N=128,M=128,D=64]
//                     [--only ONF,ONF,...]
#define MOACERT_SIMT_UNINSTRUMENTED 1  // this driver is host code
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "bench/named_dims.hpp"
#include "moacert/simt.h"

namespace moacert::bench {
void register_native_kernels(kernels::Registry& r);  // simt_native_glue.cpp
}

using namespace moacert;

namespace {

struct Row {
  const char* onf;
  Op op;
  const char* cpu;  // the CPU ONF of the same op
  Format format;    // a tensor-core ONF's storage is bf16, the others' f32
  // The CPU ONF's: f32 where it has no bf16 (cpu.flash_bwd, cpu.fused).
  Format cpu_format;
};

const Row kRows[] = {
    {"flash", Op::attention_fwd, "cpu.flash", Format::f32, Format::f32},
    {"flash_tc", Op::attention_fwd, "cpu.flash", Format::bf16, Format::bf16},
    {"bwd_atomic", Op::attention_bwd, "cpu.flash_bwd", Format::f32, Format::f32},
    {"bwd_fa2", Op::attention_bwd, "cpu.flash_bwd", Format::f32, Format::f32},
    {"bwd_tc", Op::attention_bwd, "cpu.flash_bwd", Format::bf16, Format::f32},
    {"fused_v1", Op::attention_fwdbwd, "cpu.fused", Format::f32, Format::f32},
    {"fused_v3", Op::attention_fwdbwd, "cpu.fused", Format::f32, Format::f32},
    {"fused_det", Op::attention_fwdbwd, "cpu.fused", Format::f32, Format::f32},
    {"fused_v1_tc", Op::attention_fwdbwd, "cpu.fused", Format::bf16, Format::f32},
    {"fused_v3_tc", Op::attention_fwdbwd, "cpu.fused", Format::bf16, Format::f32},
    {"fused_det_tc", Op::attention_fwdbwd, "cpu.fused", Format::bf16, Format::f32},
    {"decode", Op::attention_decode, "cpu.split", Format::f32, Format::f32},
    {"rmsnorm", Op::rmsnorm, "cpu.fused", Format::f32, Format::f32},
    {"swiglu", Op::mlp_swiglu, "cpu.tiled", Format::f32, Format::f32},
};

struct Args {
  int repeats = 3;
  std::string attention = "B=1,H=1,N=128,M=128,D=64";
  std::string only;
};

std::optional<Args> parse(int argc, char** argv) {
  Args a;
  for (int k = 1; k < argc; ++k) {
    const std::string s = argv[k];
    if (k + 1 >= argc) return std::nullopt;
    if (s == "--repeats")
      a.repeats = std::atoi(argv[++k]);
    else if (s == "--attention")
      a.attention = argv[++k];
    else if (s == "--only")
      a.only = argv[++k];
    else
      return std::nullopt;
  }
  if (a.repeats < 1) return std::nullopt;
  return a;
}

// The problem of a row: the attention shape given (decode's L is its M),
// rmsnorm and mlp.swiglu at fixed small sizes.
std::optional<Problem> problem_of(const Row& row, const Args& a) {
  Problem p;
  p.op = row.op;
  p.format = row.format;
  if (is_attention(row.op)) {
    if (!bench::parse_named_dims(a.attention, p.dims)) return std::nullopt;
    if (row.op == Op::attention_decode) p.dims.N = 1;
  } else if (row.op == Op::rmsnorm) {
    p.dims.T = 64;
    p.dims.D = 1024;
  } else {
    p.dims.T = 32;
    p.dims.Dm = 128;
    p.dims.F = 256;
  }
  if (p.dims.Hkv == 0 || (is_attention(row.op) && p.dims.Hkv > p.dims.H)) p.dims.Hkv = p.dims.H;
  validate(p);
  return p;
}

// "B=1,H=1,Hkv=1,N=128,M=128,D=64", over the op's own dims (as cli's
// shape_text writes a shape).
std::string shape_text(const Problem& p) {
  std::ostringstream s;
  for (std::string_view dim : dims_of(p.op))
    s << (s.tellp() > 0 ? "," : "") << dim << "=" << extent_of(p.dims, dim);
  return s.str();
}

// The median seconds of v on p, or a negative value when v refuses it.
double seconds(const kernels::Variant& v, const Problem& p, const bench::Options& o) {
  try {
    bench::Inputs inputs = bench::make_inputs(p, 1);
    return bench::run(v, p, inputs, o).seconds;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simt_native_bench: %s: %s\n", v.name.c_str(), e.what());
    return -1;
  }
}

// Whether `onf` is in the comma-separated `list` (an empty one lists all).
bool listed(const std::string& list, const std::string& onf) {
  if (list.empty()) return true;
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ','))
    if (item == onf) return true;
  return false;
}

void checks(bool on) {
  simt::Options o = simt::options();
  o.check_accesses = on;
  simt::set_options(o);
}

std::string figure(double x, const char* format) {
  if (x < 0) return "—";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Args> args = parse(argc, argv);
  if (!args) {
    std::fprintf(stderr,
                 "usage: %s [--repeats R] [--attention B=1,H=1,N=128,M=128,D=64] "
                 "[--only ONF,...]\n",
                 argv[0]);
    return 2;
  }
  kernels::Registry native;
  bench::register_native_kernels(native);
  const kernels::Registry& builtin = kernels::Registry::builtin();
  const bench::Options o{.threads = 1, .warmup = 1, .repeats = args->repeats};
  std::printf("%s; 1 thread; median of %d repeats after 1 warm-up\n\n", bench::machine().c_str(),
              args->repeats);
  std::printf(
      "| variant | format | shape | simt (s) | native (s) | cpu ONF | cpu (s) | simt / native | "
      "simt / cpu |\n|---|---|---|---:|---:|---|---:|---:|---:|\n");
  for (const Row& row : kRows) {
    if (!listed(args->only, row.onf)) continue;
    const std::optional<Problem> p = problem_of(row, *args);
    const kernels::Variant* simt_v = builtin.find(row.op, "simt." + std::string(row.onf));
    const kernels::Variant* native_v = native.find(row.op, "native." + std::string(row.onf));
    const kernels::Variant* cpu_v = builtin.find(row.op, row.cpu);
    if (!p || !simt_v || !native_v || !cpu_v) {
      std::fprintf(stderr, "simt_native_bench: no problem or variant for %s\n", row.onf);
      return 2;
    }
    const double simt_s = seconds(*simt_v, *p, o);
    checks(false);
    const double native_s = seconds(*native_v, *p, o);
    checks(true);
    Problem cpu_p = *p;
    cpu_p.format = row.cpu_format;
    const double cpu_s = seconds(*cpu_v, cpu_p, o);
    const auto ratio = [](double a, double b) { return a > 0 && b > 0 ? a / b : -1.0; };
    std::printf("| `simt.%s` | %s | %s | %s | %s | `%s` %s | %s | %s | %s |\n", row.onf,
                std::string(name(row.format)).c_str(), shape_text(*p).c_str(),
                figure(simt_s, "%.3g").c_str(), figure(native_s, "%.3g").c_str(), row.cpu,
                std::string(name(row.cpu_format)).c_str(), figure(cpu_s, "%.3g").c_str(),
                figure(ratio(simt_s, native_s), "%.1f").c_str(),
                figure(ratio(simt_s, cpu_s), "%.0f").c_str());
    std::fflush(stdout);
  }
  return 0;
}
