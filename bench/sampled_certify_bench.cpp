// Deployment-scale certification timed phase by phase, the path certify
// takes (docs/design.md, "Sampled certification" and `seconds_by_phase`).
//
//   sampled_certify_bench OP VARIANT B H HKV N M D [causal] [f32|f64|bf16|f16] [certify]
//   sampled_certify_bench OP VARIANT NAME=E,NAME=E,... [causal] [FORMAT] [certify]
//
// The second form names the extents (B H Hkv N M D T Dm F; L for M), for
// the ops without attention's six (rmsnorm: T, D; mlp.swiglu: T, Dm, F).
//
// Without `certify`: one generated case at those extents judged as
// `certify --case` judges a case file (no PyTorch beside it, no
// determinism rerun), attention.decode reading M as L with ragged lens
// from L/2 to L. With `certify`: what `certify OP --variant VARIANT
// --shape <the extents> --cases 1 --seed 17` does, case by case: the
// curated cases clamped to the extents and one random case, each judged
// whole (PyTorch beside it, the determinism rerun where the variant claims
// determinism), one line per case with its phases and its wall time, then
// the certificate's phases summed (`causal` is then drawn, as certify
// draws it). Prints the certificate's per-tensor sample; exits 1 when the
// certificate fails, 2 on bad arguments.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "bench/named_dims.hpp"
#include "properties/case_record.hpp"
#include "properties/certify.hpp"
#include "properties/properties.hpp"

using namespace moacert;

namespace {

void print_tensors(const properties::Certificate& cert) {
  for (const properties::TensorSummary& t : cert.tensors) {
    std::printf("  %s: %lld of %lld elements judged, max %.3g ulp\n", t.name.c_str(),
                static_cast<long long>(t.elements), static_cast<long long>(t.elements_total),
                t.max_ulp);
  }
}

// certify's cases at p's extents (--shape pinned to them, --cases 1, seed
// 17), one at a time, each timed whole beside its record's phases.
int certify_cases(const kernels::Variant& v, const Problem& p) {
  properties::CertifyOptions o;
  o.variant = &v;
  o.format = p.format;
  o.cases = 1;
  o.seed = 17;
  for (std::string_view name : dims_of(p.op)) {
    const auto field = dim_field(name);
    o.shape.set(field, {.lo = p.dims.*field, .hi = p.dims.*field});
  }
  const auto start = std::chrono::steady_clock::now();
  const properties::CaseRunner runner(std::move(o));
  std::vector<properties::CaseRecord> records;
  for (int k = 0; k < runner.size(); ++k) {
    const auto t = std::chrono::steady_clock::now();
    records.push_back(runner.run(k));
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    const properties::CaseRecord& r = records.back();
    std::printf(
        "case %d (%s): generation %.2f, bounds %.2f, oracle %.2f, kernel %.2f, judge %.2f, "
        "torch %.2f, determinism %.2f, shrinking %.2f; wall %.2f%s\n",
        k + 1, properties::phase_of(r.kind), r.generation_seconds, r.bounds_seconds,
        r.oracle_seconds, r.kernel_seconds, r.judge_seconds, r.torch_seconds, r.determinism_seconds,
        r.shrinking_seconds, wall, r.holds ? "" : " FAILS");
    std::fflush(stdout);
    if (!r.holds) break;
  }
  const properties::Certificate cert = runner.certificate(std::move(records));
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %s %s (certify's cases: %d curated, %d random): %s\n",
              std::string(info(p.op).name).c_str(), v.name.c_str(), cert.shape.c_str(),
              cert.curated_run, cert.random_run,
              cert.holds ? "holds" : ("FAILS: " + cert.failure).c_str());
  std::printf(
      "seconds: generation %.2f, bounds %.2f, oracle %.2f, kernel %.2f, judge %.2f; "
      "total %.2f\n",
      cert.generation_seconds, cert.bounds_seconds, cert.oracle_seconds, cert.kernel_seconds,
      cert.judge_seconds, total);
  std::printf(
      "seconds beside: torch %.2f, determinism %.2f, shrinking %.2f, schedule_spread %.2f\n",
      cert.torch_seconds, cert.determinism_seconds, cert.shrinking_seconds, cert.spread_seconds);
  print_tensors(cert);
  return cert.holds ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s OP VARIANT (B H HKV N M D | NAME=E,...) [causal] [FORMAT] [certify]\n",
                 argv[0]);
    return 2;
  };
  if (argc < 4) return usage();
  const std::optional<Op> op = parse_op(argv[1]);
  const kernels::Variant* v = op ? kernels::Registry::builtin().find(*op, argv[2]) : nullptr;
  if (!v) {
    std::fprintf(stderr, "sampled_certify_bench: no variant %s of %s\n", argv[2], argv[1]);
    return 2;
  }
  properties::CaseSpec spec;
  Problem& p = spec.problem;
  p.op = *op;
  const std::optional<int> rest = bench::read_dims(argc, argv, 3, p.dims);
  if (!rest) return usage();
  bool certify_path = false;
  for (int k = *rest; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "certify") {
      certify_path = true;
    } else if (a == "causal") {
      p.params.causal = true;
    } else if (const auto f = parse_format(a)) {
      p.format = *f;
    } else {
      std::fprintf(stderr, "sampled_certify_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  try {
    validate(p);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sampled_certify_bench: %s\n", e.what());
    return 2;
  }
  for (const moa::Shape& s : input_shapes(p)) {
    spec.kinds.push_back(moa::LayoutKind::row_major);
    spec.layouts.push_back(moa::Layout::row_major(s));
  }
  if (p.op == Op::attention_decode)
    for (moa::extent_t b = 0; b < p.dims.B; ++b)
      spec.lens.push_back(p.dims.M - b * (p.dims.M / 2) / std::max<moa::extent_t>(1, p.dims.B));
  spec.seed = 17;
  if (certify_path) return certify_cases(*v, p);

  const auto start = std::chrono::steady_clock::now();
  Case c = properties::make_case(spec);
  const double generation =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  properties::CertifyOptions o;
  o.variant = v;
  o.format = p.format;
  o.equivalence = false;
  o.case_files.emplace_back(properties::describe(spec), std::move(c));  // a list would copy it
  const properties::Certificate cert = properties::certify(std::move(o));
  std::printf("%s %s %s: %s\n", argv[1], argv[2], properties::describe(spec).c_str(),
              cert.holds ? "holds" : ("FAILS: " + cert.failure).c_str());
  std::printf(
      "seconds: generation %.2f, bounds %.2f, oracle %.2f, kernel %.2f, judge %.2f; "
      "total %.2f\n",
      generation, cert.bounds_seconds, cert.oracle_seconds, cert.kernel_seconds, cert.judge_seconds,
      generation + cert.seconds);
  print_tensors(cert);
  return cert.holds ? 0 : 1;
}
