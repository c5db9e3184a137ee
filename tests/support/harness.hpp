// The one harness of the kernel and oracle tests: problems, cases whose
// inputs lie in a layout made by one of the MoA core's constructors
// (reference/moa/layout_kind.hpp), running a variant, judging its outputs
// against the oracle's a priori bounds, and the two kinds of bitwise
// equality (raw storage, logical elements).
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/registry.hpp"
#include "oracle/bounds.hpp"
#include "oracle/oracle.hpp"
#include "oracle/ulp.hpp"
#include "reference/case.hpp"
#include "reference/moa/layout_kind.hpp"

namespace moacert::test {

using moa::extent_t;
using moa::kInjectiveLayoutKinds;
using moa::LayoutKind;
using moa::Shape;

// ---- problems -------------------------------------------------------------

// The extents and parameters of an attention problem (decode: N = 1, M = L).
struct AttnShape {
  extent_t B, H, Hkv, N, M, D;
  bool causal = false;
  double scale = 0;  // 0: 1/sqrt(D)
};

inline Problem attention_problem(Op op, Format f, const AttnShape& s) {
  Problem p;
  p.op = op;
  p.format = f;
  p.dims = {.B = s.B, .H = s.H, .Hkv = s.Hkv, .N = s.N, .M = s.M, .D = s.D};
  p.params.causal = s.causal;
  p.params.scale = s.scale;
  return p;
}

// Small dimensions that give every op some work: GQA, causal with N != M.
inline Dims small_dims(Op op) {
  switch (op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      return {.B = 1, .H = 2, .Hkv = 1, .N = 3, .M = 4, .D = 3};
    case Op::attention_decode:
      return {.B = 2, .H = 2, .Hkv = 1, .N = 1, .M = 4, .D = 3};
    case Op::rmsnorm:
      return {.D = 5, .T = 2};
    case Op::mlp_swiglu:
      return {.T = 2, .Dm = 3, .F = 4};
    case Op::block:
      return {.B = 1, .H = 2, .Hkv = 1, .N = 2, .D = 2, .Dm = 4, .F = 3};
  }
  return {};
}

// ---- cases ----------------------------------------------------------------

// Float inputs uniform in [-1, 1) rounded to the format, index inputs
// (decode's lens) uniform in [1, M], drawn from `seed` in the logical
// row-major order of each input: the values do not depend on `kind`, so one
// oracle answer serves a case in every layout. attention.bwd's o and lse
// are random too (the oracle ignores them); see with_oracle_forward.
inline Case make_case(const Problem& p, std::uint64_t seed,
                      LayoutKind kind = LayoutKind::row_major) {
  Case c{p, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const auto shapes = input_shapes(p);
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const bool index = is_index_input(p, static_cast<int>(k));
    AnyTensor t(index ? DType::i64 : dtype_of(p.format),
                moa::make_layout(index ? LayoutKind::row_major : kind, shapes[k]));
    for (const moa::Index& i : moa::iota(shapes[k]))
      t.set(i, index ? double(1 + rng() % static_cast<std::uint64_t>(p.dims.M)) : u(rng));
    c.inputs.push_back(std::move(t));
  }
  return c;
}

inline Case make_case(Op op, Format f, const Dims& dims, std::uint64_t seed, bool causal = false,
                      LayoutKind kind = LayoutKind::row_major) {
  Problem p;
  p.op = op;
  p.format = f;
  p.dims = dims;
  p.params.causal = causal;
  return make_case(p, seed, kind);
}

// The same values with every float input in a layout of `kind`.
inline Case relayout(const Case& c, LayoutKind kind) {
  Case out{c.problem, {}};
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const AnyTensor& t = c.inputs[k];
    out.inputs.push_back(is_index_input(c.problem, static_cast<int>(k))
                             ? t
                             : t.relayout(moa::make_layout(kind, t.shape())));
  }
  return out;
}

// attention.bwd's o and lse replaced by the oracle's correctly rounded
// forward of q, k, v, in their layouts: the inputs the a priori bounds
// assume (docs/design.md), as certify builds them.
inline Case with_oracle_forward(Case c) {
  if (c.problem.op != Op::attention_bwd) return c;
  Case fwd{c.problem, {c.inputs[0], c.inputs[1], c.inputs[2]}};
  fwd.problem.op = Op::attention_fwd;
  const oracle::Answer a = oracle::evaluate(fwd);
  for (int t = 0; t < 2; ++t) {
    AnyTensor& dst = c.inputs[3 + static_cast<std::size_t>(t)];
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(dst.shape())) dst.set(i, a.outputs[t].rounded[n++]);
  }
  return c;
}

// ---- running ---------------------------------------------------------------

inline const kernels::Variant& variant(Op op, const std::string& name) {
  const kernels::Variant* v = kernels::Registry::builtin().find(op, name);
  if (!v) throw std::logic_error("variant " + name + " is not registered");
  return *v;
}

// The problem's outputs in layouts of `kind`, NaN everywhere (padding
// included), so that an element a kernel forgets shows.
inline std::vector<AnyTensor> nan_outputs(const Problem& p, LayoutKind kind) {
  std::vector<AnyTensor> out;
  for (const Shape& s : output_shapes(p)) {
    AnyTensor t(dtype_of(p.format), moa::make_layout(kind, s));
    AnyTensor flat(t.dtype(), moa::Layout::row_major(Shape{t.layout().cosize()}));
    for (extent_t k = 0; k < flat.size(); ++k) flat.set({k}, std::nan(""));
    std::memcpy(t.data(), flat.data(), std::size_t(flat.size()) * dtype_bytes(t.dtype()));
    out.push_back(std::move(t));
  }
  return out;
}

// Runs `v` on the case's inputs as they are laid out, into NaN-filled
// outputs of `kind`.
inline std::vector<AnyTensor> run(const kernels::Variant& v, const Case& c,
                                  LayoutKind out_kind = LayoutKind::row_major, int threads = 0) {
  std::vector<AnyTensor> out = nan_outputs(c.problem, out_kind);
  std::vector<TensorRef> in_refs, out_refs;
  for (const AnyTensor& t : c.inputs) in_refs.push_back(t.ref());
  for (AnyTensor& t : out) out_refs.push_back(t.ref());
  v.run(c.problem, in_refs, out_refs, kernels::RunOptions{threads});
  return out;
}

// ---- bitwise comparisons ----------------------------------------------------

// Raw storage: the same layout and every byte of the allocation equal,
// padding and gaps included (for two runs into identically prepared
// outputs, e.g. 1 and 2 threads).
inline bool same_storage_bits(const AnyTensor& a, const AnyTensor& b) {
  return a.dtype() == b.dtype() && a.layout() == b.layout() &&
         a.storage_bytes() == b.storage_bytes() &&
         std::memcmp(a.data(), b.data(), a.storage_bytes()) == 0;
}

// Logical elements: the same shape and dtype, and at every logical index
// the same bits, whatever the two layouts are.
inline bool same_logical_elements(const AnyTensor& a, const AnyTensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  const int bytes = dtype_bytes(a.dtype());
  for (const moa::Index& i : moa::iota(a.shape())) {
    if (std::memcmp(static_cast<const std::byte*>(a.data()) + a.layout()(i) * bytes,
                    static_cast<const std::byte*>(b.data()) + b.layout()(i) * bytes, bytes) != 0)
      return false;
  }
  return true;
}

inline bool same_storage_bits(const std::vector<AnyTensor>& a, const std::vector<AnyTensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t t = 0; t < a.size(); ++t)
    if (!same_storage_bits(a[t], b[t])) return false;
  return true;
}

inline bool same_logical_elements(const std::vector<AnyTensor>& a,
                                  const std::vector<AnyTensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t t = 0; t < a.size(); ++t)
    if (!same_logical_elements(a[t], b[t])) return false;
  return true;
}

// ---- the oracle's a priori check -------------------------------------------

// What a case's outputs are judged against: the oracle's exact values and
// the a priori bound of every element (oracle/bounds.hpp,
// docs/bounds.md), both in row-major logical order. Computed once per case
// and shared by every layout, thread count and variant run on it.
struct Reference {
  Format format;
  oracle::Answer exact;
  std::vector<std::vector<double>> bounds;
};

inline Reference reference(const Case& c) {
  return {c.problem.format, oracle::evaluate(c), oracle::apriori_bounds(c)};
}

// Every element of every output within its a priori bound of the exact
// value. A bound of 0 (an exact value the op defines exactly: the -inf LSE
// and the 0 of O and dQ on a row with no visible key) demands the exact
// value itself. Reports the first failing element and, with
// MOACERT_TEST_VERBOSE set, how close each tensor comes to its bound.
inline ::testing::AssertionResult within_bounds(const Reference& ref,
                                                const std::vector<AnyTensor>& out,
                                                const std::string& what = "") {
  if (out.size() != ref.exact.outputs.size())
    return ::testing::AssertionFailure()
           << what << ": " << out.size() << " outputs, the oracle has " << ref.exact.outputs.size();
  for (std::size_t t = 0; t < out.size(); ++t) {
    const oracle::TensorAnswer& ans = ref.exact.outputs[t];
    double worst = 0;
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(out[t].shape())) {
      const double y = out[t].get(i), bound = ref.bounds[t][n];
      const double err = oracle::abs_error(y, ans.exact[n]);  // oracle/ulp.hpp
      if (!(err <= bound)) {
        std::ostringstream os;
        os.precision(17);
        os << what << " " << ans.name << i.str() << ": computed " << y << ", exact "
           << ans.exact[n].hi << ", error " << err << " > bound " << bound;
        return ::testing::AssertionFailure() << os.str();
      }
      if (bound > 0) worst = std::max(worst, err / bound);
      ++n;
    }
    if (std::getenv("MOACERT_TEST_VERBOSE"))
      std::printf("  %s %s: max error / bound %.3g\n", what.c_str(), ans.name.c_str(), worst);
  }
  return ::testing::AssertionSuccess();
}

// A name for a test parameter: letters, digits and '_' only.
inline std::string param_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// What every kernel unit test asks of a variant on a case: its outputs in
// `out_kind` within the oracle's a priori bounds and, when it is registered
// deterministic, the same storage bits with 1 and 2 threads.
inline void expect_sound(const kernels::Variant& v, const Case& c, LayoutKind out_kind,
                         const std::string& what = "") {
  EXPECT_TRUE(within_bounds(reference(c), run(v, c, out_kind), what));
  if (v.deterministic) {
    EXPECT_TRUE(same_storage_bits(run(v, c, out_kind, 1), run(v, c, out_kind, 2)))
        << what << ": 1 vs 2 threads";
  }
}

// A kernel unit test's case: a problem (its format is the test's
// parameter), the layout kind of its inputs and outputs, and a label that
// names it in the test's name.
struct KernelCase {
  std::string label;
  Problem problem;
  LayoutKind layout;
};

using KernelParam = std::tuple<Format, KernelCase>;

// expect_sound on the case in the parameter's format, values from `seed`.
inline void expect_sound(const kernels::Variant& v, const KernelParam& param, std::uint64_t seed) {
  Problem p = std::get<1>(param).problem;
  p.format = std::get<0>(param);
  expect_sound(v, make_case(p, seed, std::get<1>(param).layout), std::get<1>(param).layout);
}

inline std::string kernel_case_name(const ::testing::TestParamInfo<KernelParam>& param) {
  return param_name(std::string(name(std::get<0>(param.param))) + "_" +
                    std::get<1>(param.param).label + "_" + name(std::get<1>(param.param).layout));
}

// A property registered as a GoogleTest test at run time (one CTest test
// per op, property and format): the body runs RapidCheck and says whether
// it held; RapidCheck prints the counterexample itself.
class PropertyTest : public ::testing::Test {
 public:
  explicit PropertyTest(std::function<bool()> body) : body_(std::move(body)) {}
  void TestBody() override { EXPECT_TRUE(body_()) << "see RapidCheck's report above"; }

 private:
  std::function<bool()> body_;
};

}  // namespace moacert::test
