// One deployment-scale case certified the way certify judges it (the
// sampled oracle past kWholeOracleWork; docs/design.md, "Sampled
// certification"), timed phase by phase: the hook docs/performance.md's
// figures come from until `certify --shape` reaches this path.
//
//   sampled_certify_bench OP VARIANT B H HKV N M D [causal] [f32|f64|bf16|f16]
//   sampled_certify_bench OP VARIANT NAME=E,NAME=E,... [causal] [FORMAT]
//
// The second form names the extents (B H Hkv N M D T Dm F; L for M), for
// the ops without attention's six (rmsnorm: T, D; mlp.swiglu: T, Dm, F).
// attention.decode reads M as L and gives the batches ragged lens from L/2
// to L. Prints the phases' seconds and the certificate's per-tensor sample;
// exits 1 when the certificate fails, 2 on bad arguments.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "bench/named_dims.hpp"
#include "properties/certify.hpp"
#include "properties/properties.hpp"

using namespace moacert;

int main(int argc, char** argv) {
  auto usage = [&] {
    std::fprintf(stderr, "usage: %s OP VARIANT (B H HKV N M D | NAME=E,...) [causal] [FORMAT]\n",
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
  for (int k = *rest; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "causal") {
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
  for (const properties::TensorSummary& t : cert.tensors) {
    std::printf("  %s: %lld of %lld elements judged, max %.3g ulp\n", t.name.c_str(),
                static_cast<long long>(t.elements), static_cast<long long>(t.elements_total),
                t.max_ulp);
  }
  return cert.holds ? 0 : 1;
}
