// The sampled oracle's peak memory (docs/performance.md#oracle-memory):
// one case per run, so that the process's peak resident set (getrusage's
// ru_maxrss) after making the case and after the oracle gives what the
// oracle itself added. Beside it, what
// oracle::memory_needed states for the sample (the one judged, and the
// bound certify checks from the shape alone) and for the whole oracle.
//
//   oracle_memory_bench OP B H HKV N M D [THREADS] [DIGITS]
//   oracle_memory_bench OP NAME=E,NAME=E,... [THREADS] [DIGITS]
//
// The second form names the extents (bench/named_dims.hpp), for the ops
// without attention's six (rmsnorm: T, D; mlp.swiglu: T, Dm, F).
// DIGITS asks that many exact digits of every sampled element
// (Options::exact_digits), which sends each through the MPFI pass: its
// peak, where a default run decides every element before it.
// attention.decode reads M as L. The sample is certify's (sample_rows of the
// common tiles). Prints one line; exits 2 on bad arguments, 1 when the oracle throws.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/named_dims.hpp"
#include "oracle/memory.hpp"
#include "oracle/oracle.hpp"
#include "properties/properties.hpp"
#include "properties/sample.hpp"

using namespace moacert;

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

constexpr double kMiB = 1024.0 * 1024.0;

void measure(const Problem& p, int threads, int digits) {
  properties::CaseSpec spec;
  spec.problem = p;
  for (const moa::Shape& s : input_shapes(p)) {
    spec.kinds.push_back(moa::LayoutKind::row_major);
    spec.layouts.push_back(moa::Layout::row_major(s));
  }
  if (p.op == Op::attention_decode)
    for (moa::extent_t b = 0; b < p.dims.B; ++b) spec.lens.push_back(p.dims.M);
  spec.seed = 17;
  const Case c = properties::make_case(spec);
  const properties::Sample sample = properties::sample_rows(c, {});
  const double before = peak_rss_mib();
  const oracle::Answer a =
      oracle::evaluate(c, {.threads = threads, .exact_digits = digits, .rows = sample.rows});
  const double after = peak_rss_mib();

  const std::optional<oracle::SelectionBound> bound = properties::sample_bound(p, {});
  const std::optional<oracle::SelectionBound> judged =
      sample.rows ? std::optional(oracle::SelectionBound{*sample.rows}) : std::nullopt;
  const oracle::Options defaults;
  auto stated = [&](const std::optional<oracle::SelectionBound>& s) {
    return oracle::memory_needed(p, defaults.max_precision, threads, s ? &*s : nullptr, digits) /
           kMiB;
  };
  std::string extents;  // the op's own axes, "T=16 D=16384"
  for (const std::string_view axis : dims_of(p.op))
    extents.append(" ").append(axis).append("=").append(std::to_string(extent_of(p.dims, axis)));
  std::printf(
      "%s%s: %lld of %lld query rows, %lld key rows; "
      "case %.1f MiB, oracle peak +%.1f MiB; stated %.1f MiB (sample), %.1f MiB (shape's "
      "bound), %.1f MiB (whole oracle); first pass decided %lld of %lld\n",
      std::string(info(p.op).name).c_str(), extents.c_str(),
      (long long)(sample.rows ? sample.rows->query_rows.size() : 0),
      (long long)oracle::query_row_count(p),
      (long long)(sample.rows ? sample.rows->key_rows.size() : 0), before, after - before,
      stated(judged), stated(bound), stated(std::nullopt), (long long)a.decided_first,
      (long long)a.elements);
}

}  // namespace

int main(int argc, char** argv) {
  auto usage = [&] {
    std::fprintf(stderr, "usage: %s OP (B H HKV N M D | NAME=E,...) [THREADS] [DIGITS]\n", argv[0]);
    return 2;
  };
  if (argc < 3) return usage();
  const std::optional<Op> op = parse_op(argv[1]);
  if (!op) {
    std::fprintf(stderr, "oracle_memory_bench: unknown op %s\n", argv[1]);
    return 2;
  }
  Problem p;
  p.op = *op;
  p.format = Format::f32;
  const std::optional<int> rest = bench::read_dims(argc, argv, 2, p.dims);  // THREADS, DIGITS
  if (!rest) return usage();
  const int threads = argc > *rest ? std::atoi(argv[*rest]) : 1;
  const int digits = argc > *rest + 1 ? std::atoi(argv[*rest + 1]) : 0;
  try {
    validate(p);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oracle_memory_bench: %s\n", e.what());
    return 2;
  }
  try {
    measure(p, threads, digits);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oracle_memory_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
