#include "properties/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace moacert::properties {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

std::string Rule::str() const {
  std::ostringstream os;
  switch (kind) {
    case apriori:
      return "apriori";
    case max_ulp:
      os << "max-ulp=" << k;
      break;
    case vs_torch:
      os << "vs-torch=" << k;
      break;
  }
  return os.str();
}

std::optional<Rule> parse_rule(const std::string& s) {
  if (s == "apriori") return Rule{};
  for (auto [prefix, kind] :
       {std::pair{"max-ulp=", Rule::max_ulp}, std::pair{"vs-torch=", Rule::vs_torch}}) {
    const std::string pre(prefix);
    if (s.rfind(pre, 0) != 0) continue;
    const std::string num = s.substr(pre.size());
    char* end = nullptr;
    const double k = std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || !(k >= 0) || !std::isfinite(k)) return std::nullopt;
    return Rule{kind, k};
  }
  return std::nullopt;
}

// The SIMT emulator's schedule seed of a case: FNV-1a of its inputs' bytes,
// so that `reproduce TOKEN`, which rebuilds the same inputs, replays the
// same block order and interleaving (docs/simt.md#schedule).
std::uint64_t schedule_seed_of(const std::vector<TensorRef>& in) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const TensorRef& t : in) {
    const auto* bytes = static_cast<const unsigned char*>(t.data);
    const std::size_t n = std::size_t(t.layout.cosize()) * std::size_t(dtype_bytes(t.dtype));
    for (std::size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  }
  return h;
}

std::vector<AnyTensor> run_variant(const kernels::Variant& v, const Case& c, int threads) {
  std::vector<AnyTensor> contiguous;
  std::vector<TensorRef> in;
  for (const AnyTensor& t : c.inputs) {
    if (v.accepts_strided) {
      in.push_back(t.ref());
    } else {
      contiguous.push_back(t.relayout(moa::Layout::row_major(t.shape())));
      in.push_back(contiguous.back().ref());
    }
  }
  std::vector<AnyTensor> out = make_outputs(c.problem);
  std::vector<TensorRef> outs;
  for (AnyTensor& t : out) outs.push_back(t.ref());
  v.run(c.problem, in, outs, kernels::RunOptions{threads, schedule_seed_of(in)});
  return out;
}

double abs_error(double y, const oracle::DD& x) {
  if (std::isinf(x.hi)) return y == x.hi ? 0 : kInf;
  if (!std::isfinite(y)) return kInf;
  return std::fabs((y - x.hi) - x.lo);
}

double ulp_of(const oracle::DD& x, Format f) {
  const FormatInfo fi = info(f);
  int e = fi.emin;
  if (x.hi != 0 && std::isfinite(x.hi)) {
    e = std::ilogb(x.hi);
    // hi a power of two with lo of the other sign: |x| lies just below it.
    if (std::fabs(x.hi) == std::ldexp(1.0, e) && x.lo != 0 &&
        std::signbit(x.lo) != std::signbit(x.hi))
      --e;
    e = std::max(e, fi.emin);
  }
  return std::ldexp(1.0, e - fi.precision + 1);
}

double ulp_error(double y, const oracle::DD& x, Format f) {
  const double err = abs_error(y, x);
  if (err == 0 || std::isinf(err)) return err;
  return err / ulp_of(x, f);  // a power of two: exact
}

std::vector<std::vector<double>> abs_errors(const oracle::Answer& exact,
                                            const std::vector<AnyTensor>& outputs) {
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < outputs.size(); ++t) {
    std::vector<double> e;
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(outputs[t].shape()))
      e.push_back(abs_error(outputs[t].get(i), exact.outputs[t].exact[n++]));
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::vector<double>> vs_torch_allowed(
    const oracle::Answer& exact, const std::vector<std::vector<double>>& torch_errors,
    const std::vector<std::vector<double>>& bounds, Format f, double r) {
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < torch_errors.size(); ++t) {
    double torch_max = 0, x_max = 0;
    for (double e : torch_errors[t]) torch_max = std::isnan(e) ? kInf : std::max(torch_max, e);
    for (const oracle::DD& x : exact.outputs[t].exact)
      if (std::isfinite(x.hi)) x_max = std::max(x_max, std::fabs(x.hi));
    // PyTorch's error counts as at least half an ulp at the tensor's scale,
    // the rounding any stored result pays: an error of 0 is luck, not a scale.
    // And at least a share of the element's a priori bound: where the output
    // cancels, PyTorch may be exact by luck (a probability rounded to 1).
    const double ulp = ulp_of(oracle::DD{x_max, 0}, f);
    std::vector<double> allowed(torch_errors[t].size(), kInf);
    if (x_max != 0)
      for (std::size_t n = 0; n < allowed.size(); ++n)
        allowed[n] = r * std::max({torch_max, ulp / 2, kVsTorchFloor * bounds[t][n]}) + ulp;
    out.push_back(std::move(allowed));
  }
  return out;
}

Verdict judge(const Case& c, const oracle::Answer& exact, const std::vector<AnyTensor>& outputs,
              const Rule& rule, const std::vector<std::vector<double>>* bounds,
              const std::vector<std::vector<double>>* torch_errors) {
  Verdict v;
  const Format f = c.problem.format;
  std::vector<std::vector<double>> vs_torch;
  if (rule.kind == Rule::vs_torch)
    vs_torch = vs_torch_allowed(exact, *torch_errors, *bounds, f, rule.k);
  const double u = std::ldexp(1.0, -info(f).precision);
  const auto names = info(c.problem.op).outputs;
  for (std::size_t t = 0; t < outputs.size(); ++t) {
    const oracle::TensorAnswer& ans = exact.outputs[t];
    TensorStats s;
    s.name = std::string(names[t]);
    std::vector<double> ulps;
    double diff2 = 0, norm2 = 0, worst_margin = -1;
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(outputs[t].shape())) {
      const double y = outputs[t].get(i);
      const oracle::DD& x = ans.exact[n];
      const double err = abs_error(y, x), ulp = ulp_error(y, x, f);
      if (ans.undetermined[n]) ++s.undetermined;
      ulps.push_back(ulp);
      if (std::isfinite(x.hi)) {
        diff2 += err * err;
        norm2 += x.hi * x.hi;
      }
      // How close the element comes to failing: error / allowed.
      double allowed = 0;
      switch (rule.kind) {
        case Rule::apriori:
          allowed = (*bounds)[t][n];
          break;
        case Rule::max_ulp:
          allowed = rule.k;
          break;
        case Rule::vs_torch:  // R times PyTorch's error plus 1 ulp, absolute
          allowed = vs_torch[t][n];
          break;
      }
      const bool absolute = rule.kind != Rule::max_ulp;
      const double measured = absolute ? err : ulp;
      const double margin = measured == 0 ? 0 : allowed > 0 ? measured / allowed : kInf;
      if (margin > worst_margin) {
        worst_margin = margin;
        s.worst = std::int64_t(n);
        s.worst_exact = x.hi;
        s.worst_computed = y;
        s.worst_ulp = ulp;
        s.worst_bound = allowed;
      }
      if (v.holds && (margin > 1 || std::isnan(margin))) {
        v.holds = false;
        std::ostringstream os;
        os << s.name << i.str() << ": computed " << y << ", exact " << x.hi << ", error " << ulp
           << " ulp" << (rule.kind == Rule::apriori ? ", bound " : ", allowed ") << allowed
           << (absolute ? " (absolute)" : " ulp");
        v.why = os.str();
      }
      ++n;
    }
    s.elements = std::int64_t(n);
    s.max_ratio = std::max(worst_margin, 0.0);
    if (!ulps.empty()) {
      std::vector<double> sorted = ulps;
      std::sort(sorted.begin(), sorted.end());
      s.max_ulp = sorted.back();
      s.p99_ulp = sorted[std::min(sorted.size() - 1, std::size_t(0.99 * double(sorted.size())))];
      double sum = 0;
      for (double x : sorted) sum += x;
      s.mean_ulp = sum / double(sorted.size());
    }
    s.normwise_u = norm2 > 0 ? std::sqrt(diff2 / norm2) / u : (diff2 > 0 ? kInf : 0);
    v.tensors.push_back(std::move(s));
  }
  return v;
}

std::vector<Equivalence> equivalence(const Case& c, const oracle::Answer& exact,
                                     const std::vector<AnyTensor>& kernel,
                                     const std::vector<AnyTensor>& torch) {
  const Format f = c.problem.format;
  const auto names = info(c.problem.op).outputs;
  std::vector<Equivalence> out;
  for (std::size_t t = 0; t < kernel.size(); ++t) {
    Equivalence e{std::string(names[t])};
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(kernel[t].shape())) {
      const oracle::DD& x = exact.outputs[t].exact[n++];
      const double y = kernel[t].get(i), z = torch[t].get(i);
      double diff = 0;
      if (y != z && !(std::isnan(y) && std::isnan(z)))
        diff = std::isfinite(y) && std::isfinite(z) ? std::fabs(y - z) / ulp_of(x, f) : kInf;
      e.kernel_max_ulp = std::max(e.kernel_max_ulp, ulp_error(y, x, f));
      e.torch_max_ulp = std::max(e.torch_max_ulp, ulp_error(z, x, f));
      e.max_diff_ulp = std::max(e.max_diff_ulp, diff);
    }
    out.push_back(std::move(e));
  }
  return out;
}

bool bitwise_equal(const std::vector<AnyTensor>& a, const std::vector<AnyTensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t t = 0; t < a.size(); ++t) {
    if (!(a[t].shape() == b[t].shape()) || a[t].dtype() != b[t].dtype()) return false;
    const int bytes = dtype_bytes(a[t].dtype());
    for (const moa::Index& i : moa::iota(a[t].shape())) {
      if (std::memcmp(static_cast<const std::byte*>(a[t].data()) + a[t].layout()(i) * bytes,
                      static_cast<const std::byte*>(b[t].data()) + b[t].layout()(i) * bytes,
                      bytes) != 0)
        return false;
    }
  }
  return true;
}

}  // namespace moacert::properties
