// `moacert bench OP --variants V1,V2,torch [--shape B=1,H=8,N=2048,M=2048,D=64]
//                [--dtype F] [--causal] [--threads T] [--json]`:
// times variants of one op on one problem in the same run (warm-up, repeats,
// median), reports GFLOP/s and GB/s from their cost functions, the ratio of
// every pair, and percent of the machine's own measured peaks. A device
// backend's (cuda.*, simt.*) launches are timed alone, its copies apart.
#include <malloc.h>
#include <omp.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/harness.hpp"
#include "cli/budget.hpp"
#include "cli/commands.hpp"
#include "cli/numbers.hpp"
#include "cli/shape.hpp"
#include "kernels/plugin/plugin.hpp"
#include "kernels/registry.hpp"
#include "kernels/worker/worker.hpp"

namespace moacert::cli {

namespace {

struct BenchArgs {
  std::string op;
  std::string variants;
  std::string shape;
  std::string plugin;  // LIB.so[#NAME], timed with the variants
  std::string worker;  // CMD ARGS: its kernel of the op, timed with the variants
  double timeout = 60;
  std::string max_memory;
  std::string dtype = "f32";
  bool causal = false;
  int threads = 0;
  bool json = false;
  // LibTorch's second call was still 20-30x its steady time (rmsnorm at the
  // default shape: 0.4-0.6 s against 0.02 s), its large intermediates
  // landing on heap pages not touched before; the occasional later spike
  // (0.2 s, about one call in ten) is left to the median.
  int warmup = 2;
  int repeats = 5;
  bool fresh_memory = false;
};

std::string human_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

// Whether a device timing has copies to report: a device's tensors always
// cross (an input or an output of a byte at least); a cpu plugin's do not.
bool copies(const kernels::DeviceTimes& d) {
  return d.copy_to_device_bytes > 0 || d.copy_from_device_bytes > 0;
}

int run_bench(const BenchArgs& a) {
  const auto op = parse_op(a.op);
  if (!op) throw UsageError("bench: unknown op '" + a.op + "'");
  const auto format = parse_format(a.dtype);
  if (!format) throw UsageError("bench: unknown --dtype '" + a.dtype + "'");
  check_threads(a.threads, "bench");
  check_timeout(a.timeout);
  if (a.repeats < 1 || a.warmup < 1) throw UsageError("bench: --repeats and --warmup must be >= 1");
  Problem p;
  p.op = *op;
  p.format = *format;
  p.dims = parse_shape(*op, a.shape, "bench");
  p.params.causal = a.causal;
  validate(p);  // std::invalid_argument: exit 2 with the message
  const std::uint64_t max_memory =
      a.max_memory.empty() ? default_max_memory() : parse_bytes(a.max_memory);
  check_budget(p, max_memory, "bench: the problem", {.oracle = false});

  const auto& registry = kernels::Registry::builtin();
  std::vector<const kernels::Variant*> variants;
  const std::string names = a.variants.empty() ? std::string() : a.variants;
  if (names.empty()) {
    for (const kernels::Variant* v : registry.of(*op)) {
      // cpu.naive and cpu.dnf run the DNF as written, seconds to minutes
      // per call at the default shapes, and simt.* emulate a GPU thread by
      // thread: they run only when named.
      if (v->supports(*format) && v->name != "cpu.naive" && v->name != "cpu.dnf" &&
          v->backend != "simt")
        variants.push_back(v);
    }
  } else {
    for (const std::string& name : split(names, ',')) {
      const kernels::Variant* v = registry.find(*op, name);
      if (!v) {
        throw UsageError(
            "bench: " + a.op + " has no variant '" + name + "' in this build" +
            (name == "torch" && !kernels::backends().torch ? " (built without LibTorch)" : ""));
      }
      if (!v->supports(*format)) {
        throw UsageError("bench: variant " + name + " does not run " + a.dtype);
      }
      if (const std::string why = kernels::cannot_run(*v); !why.empty())
        throw UsageError("bench: " + name + ": " + why);
      variants.push_back(v);
    }
  }
  std::optional<kernels::Variant> plugin;
  if (!a.plugin.empty()) {
    kernels::plugin::LoadOptions lo;
    lo.timeout_s = a.timeout;
    plugin = kernels::plugin::load(a.plugin, lo);
    if (plugin->op != *op || !plugin->supports(*format)) {
      throw UsageError("bench: plugin kernel " + plugin->name + " does not run " + a.op + " " +
                       a.dtype);
    }
    // A problem outside what the kernel declares (plugin ABI 2) is not
    // timed: bad input, as certify's --shape outside it.
    if (const std::string why = plugin->envelope.why_outside(p); !why.empty())
      throw UsageError("bench: " + plugin->name + " does not support the shape: " + why +
                       " (its envelope: " + plugin->envelope.str() + ")");
    if (names.empty()) variants.clear();  // --plugin alone: time the plugin only
    variants.push_back(&*plugin);
  }
  std::optional<kernels::Variant> worker;
  if (!a.worker.empty()) {
    kernels::worker::LoadOptions lo;
    lo.timeout_s = a.timeout;
    worker = kernels::worker::load(a.worker, *op, {}, lo);
    if (!worker->supports(*format))
      throw UsageError("bench: worker kernel " + worker->name + " does not run " + a.dtype);
    if (names.empty() && a.plugin.empty()) variants.clear();  // --worker alone: time it only
    variants.push_back(&*worker);
  }
  if (variants.empty()) throw UsageError("bench: no variant of " + a.op + " runs " + a.dtype);
  // Each variant's own scratch (its cost function's peak_extra_bytes: the
  // N×M scores of cpu.naive and LibTorch) on top of the tensors, refused
  // before any allocation rather than killed by the OOM killer.
  std::vector<moa::Layout> row_major;  // bench::make_inputs's layouts
  for (const moa::Shape& s : input_shapes(p)) row_major.push_back(moa::Layout::row_major(s));
  for (const kernels::Variant* v : variants)
    check_budget(p, max_memory, "bench: " + v->name + " on this problem",
                 {.oracle = false, .variant = v, .layouts = &row_major});

  // The baseline at its best: glibc serves allocations from a heap it never
  // returns to the system, so a variant that allocates per call (LibTorch
  // allocates its (B, H, N, M) score and gradient tensors anew each time)
  // reuses pages instead of faulting in fresh ones. With glibc's defaults,
  // blocks over 32 MiB are mmap'ed and unmapped per call, and each call pays
  // a page fault per 4 KiB; --fresh-memory keeps those defaults.
  if (!a.fresh_memory) {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
  }
  const int threads = a.threads > 0 ? a.threads : omp_get_max_threads();
  omp_set_num_threads(threads);  // cost functions count scratch for this many threads

  // The variants first (the first call of each measures its peak memory
  // growth, before the peak loops' 1 GiB of buffers), then the peaks.
  bench::Inputs inputs = bench::make_inputs(p, 42);
  std::vector<bench::Result> results;
  for (const kernels::Variant* v : variants)
    results.push_back(bench::run(*v, p, inputs, {threads, a.warmup, a.repeats}));
  const bench::Peaks peaks = bench::measure_peaks(threads);
  const std::vector<std::string> blas = bench::blas_libraries();

  if (a.json) {
    nlohmann::json j;
    j["op"] = a.op;
    j["shape"] = shape_text(*op, p.dims);
    j["dtype"] = a.dtype;
    j["threads"] = threads;
    j["peak"] = {{"gflops", peaks.gflops}, {"gbps", peaks.gbps_read}};
    j["results"] = nlohmann::json::array();
    for (const bench::Result& r : results) {
      nlohmann::json o = {{"variant", r.variant},
                          {"timed", r.timed},
                          {"seconds", r.seconds},
                          {"cost_flops", r.cost_flops},
                          {"cost_bytes", r.cost_bytes},
                          {"flops_per_second", r.cost_flops / r.seconds},
                          {"bytes_per_second", r.cost_bytes / r.seconds},
                          {"gflops", r.gflops},
                          {"gbps", r.gbps},
                          {"peak_bytes", r.peak_bytes}};
      if (r.device && copies(*r.device)) {
        o["copy_to_device_seconds"] = r.device->copy_to_device_seconds;
        o["copy_to_device_bytes"] = r.device->copy_to_device_bytes;
        o["copy_from_device_seconds"] = r.device->copy_from_device_seconds;
        o["copy_from_device_bytes"] = r.device->copy_from_device_bytes;
      }
      if (!r.launches.empty()) {
        o["launches"] = nlohmann::json::array();
        for (const kernels::LaunchCounts& l : r.launches) {
          o["launches"].push_back({{"kernel", l.kernel},
                                   {"atomics", l.atomics},
                                   {"model_atomics", l.model_atomics},
                                   {"bytes", l.bytes},
                                   {"model_bytes", l.model_bytes},
                                   {"loads", l.loads},
                                   {"stores", l.stores}});
        }
      }
      j["results"].push_back(o);
    }
    fmt::print("{}\n", j.dump());
    // stdout holds exactly docs/design.md's object; the BLAS LibTorch resolved
    // goes to stderr.
    fmt::print(stderr, "BLAS mapped into this process: {}\n",
               blas.empty() ? std::string("none") : fmt::format("{}", fmt::join(blas, ", ")));
    return 0;
  }

  fmt::print("machine: {}\n", bench::machine());
  fmt::print("problem: {} {} {}{} threads={} (warm-up {}, median of {} repeats)\n", a.op,
             shape_text(*op, p.dims), a.dtype, p.causal() ? " causal" : "", threads, a.warmup,
             a.repeats);
  fmt::print("allocator: {}\n", a.fresh_memory
                                    ? "glibc defaults (large blocks mapped and unmapped per call)"
                                    : "freed memory kept for reuse (no page faults per call)");
  fmt::print(
      "measured peaks ({} threads): FMA {:.1f} GFLOP/s (f32, Highway {}), read {:.1f} GB/s, copy "
      "{:.1f} GB/s\n",
      threads, peaks.gflops, peaks.target, peaks.gbps_read, peaks.gbps_copy);
  // %read suits a kernel that mostly reads (decode), %copy one that writes
  // as much as it reads (rmsnorm); GB/s counts both directions.
  fmt::print("\n{:<12} {:>10} {:>9} {:>7} {:>8} {:>7} {:>7} {:>12} {:>12}\n", "variant", "seconds",
             "GFLOP/s", "%FMA", "GB/s", "%read", "%copy", "peak_bytes", "measured");
  for (const bench::Result& r : results) {
    fmt::print("{:<12} {:>10.4f} {:>9.2f} {:>6.1f}% {:>8.2f} {:>6.1f}% {:>6.1f}% {:>12} {:>12}\n",
               r.variant, r.seconds, r.gflops, 100 * r.gflops / peaks.gflops, r.gbps,
               100 * r.gbps / peaks.gbps_read, 100 * r.gbps / peaks.gbps_copy,
               human_bytes(r.peak_bytes), human_bytes(r.measured_extra_bytes));
  }
  if (results.size() > 1) {
    fmt::print("\nspeed-up of the row over the column (column seconds / row seconds):\n{:<12}", "");
    for (const bench::Result& c : results) fmt::print(" {:>12}", c.variant);
    fmt::print("\n");
    for (const bench::Result& r : results) {
      fmt::print("{:<12}", r.variant);
      for (const bench::Result& c : results) fmt::print(" {:>11.2f}x", c.seconds / r.seconds);
      fmt::print("\n");
    }
  }
  // A device backend's seconds are its launches alone; its copies apart. A
  // cpu plugin's are its calls alone, timed in its worker.
  for (const bench::Result& r : results) {
    if (!r.device) continue;
    if (!copies(*r.device)) {
      fmt::print("\n{}: seconds time the {}", r.variant, r.timed);
      continue;
    }
    fmt::print(
        "\n{}: seconds time the {}; copies timed apart: to the device {} in {:.4f} s, from the "
        "device {} in {:.4f} s",
        r.variant, r.timed, human_bytes(r.device->copy_to_device_bytes),
        r.device->copy_to_device_seconds, human_bytes(r.device->copy_from_device_bytes),
        r.device->copy_from_device_seconds);
  }
  fmt::print("\nsamples (s):");
  for (const bench::Result& r : results) {
    fmt::print(" {} [", r.variant);
    for (std::size_t k = 0; k < r.samples.size(); ++k)
      fmt::print("{}{:.4f}", k ? " " : "", r.samples[k]);
    fmt::print("]");
  }
  fmt::print("\nBLAS mapped into this process: {}\n",
             blas.empty() ? std::string("none") : fmt::format("{}", fmt::join(blas, ", ")));
  fmt::print("measured = peak resident growth over the first call (VmHWM after reset)\n");
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, int& status) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "time variants of an op against each other and the machine's peaks");
  cmd->add_option("op", args->op, "the op, e.g. attention.fwd")->required();
  cmd->add_option("--variants", args->variants,
                  "comma-separated variants (default: all that run the dtype but the naive "
                  "cpu.naive and cpu.dnf)");
  cmd->add_option("--shape", args->shape,
                  "dimensions over the op's defaults, e.g. B=1,H=8,N=2048,M=2048,D=64; decode L; "
                  "rmsnorm T,D; mlp.swiglu T,Dm,F; block B,N,Dm,H,Hkv,D,F (a given H sets Hkv "
                  "unless Hkv is given)");
  cmd->add_option("--dtype", args->dtype, "f64, f32, bf16 or f16 (default f32)");
  cmd->add_flag("--causal", args->causal, "causal mask (bottom-right aligned)");
  cmd->add_option("--threads", args->threads, "threads (default: the OpenMP default)");
  cmd->add_flag("--json", args->json, "print one JSON object (docs/design.md)");
  cmd->add_option("--plugin", args->plugin, "also time a plugin kernel: LIB.so[#NAME]");
  cmd->add_option("--worker", args->worker,
                  "also time a worker's kernel: \"CMD ARGS\" (docs/worker-protocol.md)");
  cmd->add_option("--timeout", args->timeout,
                  "seconds a plugin or worker call may take (default 60)");
  cmd->add_option("--max-memory", args->max_memory,
                  "refuse a problem needing more, e.g. 4G (default: half the RAM)");
  cmd->add_option("--warmup", args->warmup, "untimed calls before timing (default 2)");
  cmd->add_option("--repeats", args->repeats, "timed calls; the median is reported (default 5)");
  cmd->add_flag("--fresh-memory", args->fresh_memory,
                "keep glibc's allocator defaults: large blocks are mapped and unmapped per call, "
                "so a variant allocating per call pays page faults each time");
  cmd->callback([args, &status] { status = run_bench(*args); });
}

}  // namespace moacert::cli
