// The parts of the a priori bounds (docs/bounds.md) that more than one op
// composes: the rounding constants of a format pair, the forward of
// attention (fwd, decode, the backward's recomputation, block), rmsnorm,
// a product with propagated errors, and the SwiGLU MLP (rmsnorm and
// mlp.swiglu alone and inside block). Defined in oracle/bounds.cpp; the
// ops compose them in oracle/ops/<family>.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "oracle/bounds.hpp"
#include "reference/case.hpp"
#include "reference/matrix_rows.hpp"

namespace moacert::oracle::detail {

using Mat = moa::Tensor<double>;

// The final safety factor: the condition quantities are computed in
// double, their own relative error (below 2^-40 for any case moacert
// generates) covered by it.
constexpr double kEvalSlack = 1 + 0x1p-20;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The rounding constants of a format pair: accumulation (f64 for f64, f32
// otherwise) and storage, and of the kernel's declared arithmetic.
// One contraction's arithmetic (docs/bounds.md#declared-arithmetic): the
// unit of its γ, the underflow of one of its operations, the magnitude its
// partial sums must stay below (f16's largest finite, where it accumulates
// in f16), and its operands' rounding before their products (TF32: to 11
// bits, unit 2^-11, half the smallest subnormal spacing 2^-137), which
// the bounds carry as errors of the operands.
struct SumUnits {
  double u, eta, overflow = std::numeric_limits<double>::infinity();
  // An accumulator narrower than f32 (f16, bf16): whatever multiplies it
  // (an online softmax's rescale) rounds there too.
  bool narrow = false;
  double operand_u = 0, operand_eta = 0;
  // γ_n, infinite where n u >= 1: a sum that long in this unit is bounded
  // by nothing. A declared narrow accumulator's is infinite from n u >= 1/2,
  // where γ_n reaches 1: a bound that allows an error as large as the sum's
  // magnitude says nothing of it (an f16 sum of 4096 ones stops at 2048), and
  // a declaration must not pass a kernel there (docs/bounds.md#declared-arithmetic).
  double gamma(double n) const {
    const double vacuous_from = narrow ? 0.5 : 1;
    return n * u >= vacuous_from ? std::numeric_limits<double>::infinity() : n * u / (1 - n * u);
  }
  // The error of an operand x rounded before its product, as declared.
  double operand_error(double x) const { return operand_u * std::fabs(x) + operand_eta; }
};

// An intermediate rounded to a format before its next use, as declared:
// the format's unit and smallest subnormal; u = 0: not rounded.
struct IntermediateRounding {
  double u = 0, eta = 0, overflow = std::numeric_limits<double>::infinity();
  explicit operator bool() const { return u > 0; }
  // The absolute error of a value x that erred by `error` before its
  // rounding: error (1 + u) + u |x| + η / 2; unbounded where the value may
  // pass the format's largest finite.
  double after(double x, double error) const {
    if (u == 0) return error;
    if (std::fabs(x) + error >= overflow) return std::numeric_limits<double>::infinity();
    return error * (1 + u) + u * std::fabs(x) + eta / 2;
  }
};

struct RoundingUnits {
  double ua, us;        // unit roundoffs
  double eta_a, eta_s;  // smallest subnormals (underflow of one product)
  double eps_exp, eps_log;
  // sqrt and division (rmsnorm), silu (the MLP): relative errors.
  double eps_sqrt, eps_div, eps_silu;
  // Per term a sum or dot product merges: u_a when every addition rounds to
  // nearest; u_t = (1 + 2^-23)^2 - 1 on tensor cores, whose steps align,
  // truncate and cut (docs/bounds.md#tensor-cores). Never below ua, so a
  // γ that also counts a few rounded operations stays a bound.
  double u_sum;
  // The softmax weights' rounding to a format before P V, when the kernel
  // declares it (unit and smallest subnormal), else 0.
  double u_weights = 0, eta_weights = 0;
  // The backward's score gradients' rounding to a format before dS^T Q and
  // dS K, when the kernel declares it, else 0.
  double u_score_grads = 0, eta_score_grads = 0;
  // The contractions an op names (reference/ops.hpp's vocabulary), each as
  // declared or as u_sum: attention's scores and value sums, rmsnorm's sum
  // of squares, the MLP's three products.
  SumUnits all, qk, pv, ss, gate, up, down;
  // Intermediates rounded before their next use, as declared.
  IntermediateRounding scores, row_sum, lse, sum_of_squares, inverse_root, gate_value, up_value, h;
  // Attention's inputs read in a narrower format before their products
  // (round.q, round.k, round.v: ggml converting an f32 query to its f16
  // keys' type).
  IntermediateRounding query_read, key_read, value_read;
  // The backward's dP = dO Vᵀ and its row statistic D = rowsum(dO ∘ O).
  IntermediateRounding weight_grads, row_delta;
  // Outputs flushed to zero (declared): a result the kernel computes below
  // the storage format's smallest normal 2^emin may be written as 0.
  bool flush_outputs = false;
  double output_floor = 0;
  // What the final rounding to storage of y, which erred by `error` before
  // it, may cost beside u_s |y|: η_s / 2, or 2^emin where outputs are
  // flushed and the computed value may lie below 2^emin (it is then
  // written as 0, an error below 2^emin).
  double eta_out(double y, double error) const {
    return flush_outputs && std::fabs(y) - error < output_floor ? output_floor : eta_s / 2;
  }
  // Inputs flushed to zero: an input below `input_floor` (the storage
  // format's smallest normal) may be read as 0.
  bool flush_inputs = false;
  double input_floor = 0;
  double gamma(double n) const { return n * u_sum / (1 - n * u_sum); }
};

// The units of a case's format under the constants and the kernel's
// declared arithmetic (docs/bounds.md: the table of u and η, and
// #declared-arithmetic). Defined in oracle/rounding_units.cpp.
RoundingUnits rounding_units(Format f, const BoundConstants& k);
// The same for a call whose outputs are stored in `out` (the storage unit
// u_s, η_s and the flushed-output floor are its) and which accumulates in
// f64 where `f64_accumulation`, else in f32; `f`, the call's dtype, stays
// the format of a declared `round.X=storage` and of flushed inputs
// (docs/design.md#per-tensor-formats).
RoundingUnits rounding_units(Format f, const BoundConstants& k, Format out, bool f64_accumulation);

// Relative error factors are carried as θ (the factor is 1 + θ) and
// composed without forming 1 + θ, which rounds to 1 for θ near u of f64.
// (1 + a)(1 + b) - 1:
inline double compose(double a, double b) {
  return a + b + a * b;
}
// (1 + x)^k - 1:
inline double power(double x, double k) {
  return std::expm1(k * std::log1p(x));
}

inline std::vector<double> rav(const Mat& m) {
  return m.storage();
}

// The scores' dots of a bound, lanes along the keys (oracle/
// bound_reductions.cpp): for j < n, dot[j] = Σ_d a[d]·x_jd and mag[j] =
// Σ_d |a[d]·x_jd|, d ascending from zero, each product rounded to nearest
// and then added: the plain loop's operations in its order, so bit for bit
// its sums. x_jd = x[j·key_stride + d·d_stride]: keys transposed (key_stride
// 1, transposed_rows) run in vectors of consecutive keys.
void bound_dots(const double* a, const double* x, moa::extent_t key_stride, moa::extent_t d_stride,
                moa::extent_t n, moa::extent_t D, double* dot, double* mag);

// A forward bound's value sums over the keys first .. last - 1 (oracle/
// bound_reductions.cpp), lanes along d: with P = p[j] / l and V's row j at
// v + j·D, for j ascending,
//   c[d] += P·|V_jd|,  f[d] += P·|V_jd|·f_row[j],  o[d] += P·V_jd,
//   vmax[d] = max(vmax[d], |V_jd|),
// each operation rounded to nearest in that order: bit for bit the plain
// loop's.
void bound_value_sums(const double* p, const double* f_row, double l, const double* v,
                      moa::extent_t first, moa::extent_t last, moa::extent_t D, double* c,
                      double* f, double* o, double* vmax);

// `rows` rows of D doubles at `from` as columns at `to`: to[d·rows + r] =
// from[r·D + d], for bound_dots.
void transpose_rows(const double* from, moa::extent_t rows, moa::extent_t D, double* to);

// The rows of x (its last axis, D, contiguous) as columns: a (D, rows)
// tensor.
Mat transposed_rows(const Mat& x);

// A tensor's rows (its extents but the last flattened, row-major) from
// `first` as doubles into `into`, as many as it holds rows of the tensor's
// width: exact, its rows spread over threads. Into a Mat of the tensor's
// shape from 0, the whole tensor; into one Mat again and again, one kv
// head's cache after another in the same memory.
void widen_rows(const AnyTensor& t, moa::extent_t first, Mat& into);

// One kv head's keys (or values) as bound_dots reads them: transposed
// (key_stride 1) where many rows read them, else row by row (d_stride 1).
struct KeyRows {
  const double* x;
  moa::extent_t key_stride, d_stride;
  void dots(const double* a, moa::extent_t n, moa::extent_t D, double* dot, double* mag) const {
    bound_dots(a, x, key_stride, d_stride, n, D, dot, mag);
  }
  // The keys first .. last - 1 alone, into dot[j], mag[j]: each key's sums
  // are its own, so a block of keys gives what the whole call gives there.
  void dots(const double* a, moa::extent_t first, moa::extent_t last, moa::extent_t D, double* dot,
            double* mag) const {
    bound_dots(a, x + first * key_stride, key_stride, d_stride, last - first, D, dot + first,
               mag + first);
  }
};

// Whether rows of a bound sharing one kv head are many enough to pay for
// that head's keys transposed (every row reads all of them once).
constexpr moa::extent_t kRowsPerTranspose = 64;

// One case's a priori bounds, as an op's row of the table sees them.
struct BoundCall {
  const Case& c;
  std::span<const Mat> widened;  // the inputs' values, in the signature's order; index inputs empty
  const RoundingUnits& u;
  // The query rows bounded (the sampled oracle's, flat as in selection.hpp),
  // or null for every row: fwd, decode and mlp.swiglu bound only these, the
  // backward only these rows of dQ.
  const std::vector<std::uint8_t>* only;
  // The key rows bounded (flat as in selection.hpp), or null for every row:
  // the backward bounds only these rows of dK and dV.
  const std::vector<std::uint8_t>* only_keys = nullptr;
};

// Errors already present in an attention call's inputs (zero for the op
// alone; the block's upstream stages for the block).
struct AttentionInputErrors {
  const Mat* q = nullptr;  // (B,H,N,D) absolute error bounds
  const Mat* k = nullptr;  // (B,Hkv,M,D)
  const Mat* v = nullptr;
};

struct ForwardBounds {
  Mat o, lse;          // bounds for the stored o, lse
  Mat o_val, lse_val;  // the exact values (double) used for the backward
};

// The forward bound of docs/bounds.md#attention-forward for every row, the
// rows spread over threads. `lens` (decode) limits the keys of batch b.
// `wanted` (the sampled oracle's query rows, flat (b·H + h)·N + i) limits
// the rows bounded; the others are left 0.
ForwardBounds attention_forward_bounds(const Mat& q, const Mat& k, const Mat& v, double scale,
                                       causal::Mask causal, const std::vector<moa::extent_t>* lens,
                                       const RoundingUnits& u, const AttentionInputErrors& in = {},
                                       const std::vector<std::uint8_t>* wanted = nullptr);

// docs/bounds.md#rmsnorm, with an optional bound ex on errors already in x
// (first order in ex, doubled: see the block).
Mat rmsnorm_bounds(const Mat& x, const Mat& w, double eps, const RoundingUnits& u, Mat* y_val,
                   const Mat* ex = nullptr);

// C = A B with a bound on C's error given bounds ea (and eb, optional) on
// A's (B's) errors: γ_k Σ|A||B| + Σ ea|B| (+ Σ |A| eb). `rows` (optional)
// limits the rows of C bounded; the others are left 0. Each row's sums run
// over p ascending, B read row by row, once per tile of rows. `sum`: the
// contraction as declared (the MLP's gate, up, down), or null for u.all.
Mat gemm_bounds(const Mat& a, const MatrixRows& bmat, const Mat* ea, const RoundingUnits& u,
                Mat* c_val, bool store = true, const std::vector<std::uint8_t>* rows = nullptr,
                const SumUnits* sum = nullptr);

// docs/bounds.md#swiglu-mlp. ex: errors already in x (the block), or null;
// rows: the rows t bounded (the sampled oracle's), or null for all.
Mat mlp_bounds(const Mat& x, const MatrixRows& w1, const MatrixRows& w3, const MatrixRows& w2,
               const RoundingUnits& u, Mat* y_val, const Mat* ex = nullptr,
               const std::vector<std::uint8_t>* rows = nullptr);

}  // namespace moacert::oracle::detail
