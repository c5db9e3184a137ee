// Running a variant on a case and judging its outputs against the oracle:
// per element ULP error, error-to-bound ratio and normwise relative error,
// under one of the rules of DESIGN.md (apriori, max-ulp=K, vs-torch=R).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.hpp"
#include "oracle/oracle.hpp"
#include "reference/case.hpp"

namespace moacert::properties {

struct Rule {
  enum Kind { apriori, max_ulp, vs_torch } kind = apriori;
  double k = 0;  // K ulps, or R times PyTorch's error
  std::string str() const;
};
// "apriori", "max-ulp=K", "vs-torch=R"; nullopt when malformed.
std::optional<Rule> parse_rule(const std::string& s);

// Runs `v` on `c` with `threads` threads into fresh row-major outputs. A
// variant that does not accept strided tensors gets row-major copies.
std::vector<AnyTensor> run_variant(const kernels::Variant& v, const Case& c, int threads = 0);

// The error of one computed element against the exact value, in ulps of
// the format (DESIGN.md): |y - x| / ulp_F(x), +inf for a NaN or an infinity
// where x is finite, 0 when y equals an infinite x.
double ulp_error(double y, const oracle::DD& x, Format f);
// ulp_F(x) = 2^(max(e, emin) - p + 1), e = floor(log2 |x|).
double ulp_of(const oracle::DD& x, Format f);
// |y - x| in double, +inf as above.
double abs_error(double y, const oracle::DD& x);

struct TensorStats {
  std::string name;
  std::int64_t elements = 0;
  double max_ulp = 0, mean_ulp = 0, p99_ulp = 0;
  double max_ratio = 0;     // max of error / bound (apriori) or error / allowed
  double normwise_u = 0;    // ||y - x||_2 / ||x||_2 in units of u of the format
  std::int64_t worst = -1;  // row-major index of the element nearest to failing
  double worst_exact = 0, worst_computed = 0, worst_ulp = 0, worst_bound = 0;
  std::int64_t undetermined = 0;
};

struct Verdict {
  bool holds = true;
  std::string why;  // the first failing element, in words
  std::vector<TensorStats> tensors;
};

// Judges outputs against the oracle's answer. `bounds` are the a priori
// bounds (rule apriori); `torch_errors` PyTorch's absolute errors per
// element (rule vs-torch).
Verdict judge(const Case& c, const oracle::Answer& exact, const std::vector<AnyTensor>& outputs,
              const Rule& rule, const std::vector<std::vector<double>>* bounds,
              const std::vector<std::vector<double>>* torch_errors = nullptr);

// Absolute errors of outputs against the answer, per tensor and element.
std::vector<std::vector<double>> abs_errors(const oracle::Answer& exact,
                                            const std::vector<AnyTensor>& outputs);

// True when every element of a and b is bitwise equal.
bool bitwise_equal(const std::vector<AnyTensor>& a, const std::vector<AnyTensor>& b);

}  // namespace moacert::properties
