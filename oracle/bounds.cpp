// The a priori bounds of docs/bounds.md, evaluated for one case: the
// parts more than one op composes (detail/bound_helpers.hpp), and the
// entry point, which widens the inputs and hands them to the op's row of
// the table (oracle/ops/). The condition quantities are computed in double
// from the DNF's intermediate values; their own relative error (below
// 2^-40 for any case moacert generates) is covered by the final safety
// factor kEvalSlack.
#include "oracle/bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"
#include "oracle/ops/table.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/norm_mlp.hpp"

namespace moacert::oracle {
namespace detail {
namespace {

using moa::extent_t;
using moa::Index;
using moa::Shape;

// A bound times a magnitude (both >= 0), where an upstream stage's bound
// can be infinite (the block: an RMSNorm whose sum of squares overflows):
// infinite when either factor is, so that an unbounded error stays
// unbounded downstream. IEEE's inf·0 is NaN, which a later maximum drops
// (a finite bound where nothing is bounded) or which ends as "bound -nan".
// Where neither is infinite, the plain product: the bounds do not change.
double bound_times(double bound, double magnitude) {
  return std::isinf(bound) || std::isinf(magnitude) ? kInf : bound * magnitude;
}

// A row-major double tensor's elements from `start` on: a row of it.
const double* row_of(const Mat& m, const Index& start) {
  return m.storage().data() + moa::row_major_offset(m.shape(), start);
}
double* row_of(Mat& m, const Index& start) {
  return m.storage().data() + moa::row_major_offset(m.shape(), start);
}

// The errors of an input as a kernel reads it for a contraction `sum`:
// flushed where declared (Flush::inputs: an element below the storage
// format's smallest normal may be read as 0, an error of its whole
// magnitude), else its rounding to a declared format (`read`: round.q,
// round.k, round.v) and then to the contraction's operand format (TF32),
// else none.
Mat read_errors(const Mat& x, const RoundingUnits& u, const SumUnits& sum,
                const IntermediateRounding& read = {}) {
  Mat e(x.shape());
  std::transform(x.storage().begin(), x.storage().end(), e.storage().begin(), [&](double v) {
    if (u.flush_inputs && std::fabs(v) < u.input_floor) return std::fabs(v);
    const double rounded = read.after(v, 0.0);
    return sum.operand_u > 0 ? rounded + sum.operand_error(std::fabs(v) + rounded) : rounded;
  });
  return e;
}

// One query row's scratch, M keys by D: kept per thread across rows.
struct ForwardRowScratch {
  std::vector<double> dot, mag, s, a, p, delta, e_row, f_row;  // (M)
  std::vector<double> c, f, o, vmax, ev;                       // (D)
  ForwardRowScratch(extent_t M, extent_t D)
      : dot(M),
        mag(M),
        s(M),
        a(M),
        p(M),
        delta(M),
        e_row(M),
        f_row(M),
        c(D),
        f(D),
        o(D),
        vmax(D),
        ev(D) {}
};

// What one query row's bound carries from its weights to its values.
struct RowWeights {
  double l, L, Delta;
  bool unbounded;
  // The value sums alone unbounded: a declared accumulation whose γ_{n+2}
  // is infinite (n u >= 1: bf16 past 255 keys).
  bool values_unbounded = false;
};

// One query row (b, h, i) that sees the keys 0 .. n-1 (n > 0; a prefix:
// causal and decode's lens cut it), from its score dots (w.dot, w.mag):
// the weights w.p and w.f_row of its value sums, its LSE and LSE bound
// into r. Every sum runs over j ascending from zero, as the definition's
// loops: the row's bounds do not depend on which other rows are bounded,
// nor on threads.
RowWeights attention_forward_weights(const Mat& q, const Mat& k, double scale, extent_t b,
                                     extent_t h, extent_t g, extent_t i, extent_t n,
                                     const RoundingUnits& u, const AttentionInputErrors& in,
                                     ForwardRowScratch& w, ForwardBounds& r) {
  const extent_t D = q.shape()[3];
  const double* qi = row_of(q, {b, h, i, 0});  // (D)
  const double* kg = row_of(k, {b, g, 0, 0});  // (M, D)
  const double* eqi = in.q ? row_of(*in.q, {b, h, i, 0}) : nullptr;
  const double* ekg = in.k ? row_of(*in.k, {b, g, 0, 0}) : nullptr;
  // scores, their magnitudes a_ij, and the score error bound δ_ij
  double smax = -kInf, dmax = 0;
  for (extent_t j = 0; j < n; ++j) {
    const double* kj = kg + j * D;
    const double dot = w.dot[j], mag = w.mag[j];
    double extra = 0;
    if (eqi) {
      const double* ekj = ekg + j * D;
      for (extent_t d = 0; d < D; ++d) {
        const double eq = eqi[d], ek = ekj[d];
        extra += bound_times(eq, std::fabs(kj[d])) + bound_times(ek, std::fabs(qi[d])) +
                 bound_times(eq, ek);
      }
    }
    w.s[j] = scale * dot;
    w.a[j] = scale * mag;
    // The dot product as the kernel declares it accumulated (its γ, its
    // operands' TF32 rounding, its underflow), unbounded where a partial
    // sum may pass the accumulator's largest finite; then the scores'
    // rounding, where declared (docs/bounds.md#declared-arithmetic).
    const bool overflows = std::max(1.0, scale) * mag * 2 >= u.qk.overflow;
    w.delta[j] = overflows ? kInf
                           : bound_times(u.qk.gamma(double(D + 3)), w.a[j] + scale * extra) +
                                 scale * extra + double(D + 1) * u.qk.eta * std::max(1.0, scale);
    // Scores rounded to a format are rounded twice where a kernel rounds
    // the product q kᵀ and then its scaling (PyTorch's composition in bf16):
    // each within u |s| + η / 2, the first's η scaled by σ.
    if (u.scores) {
      w.delta[j] = u.scores.after(w.s[j], u.scores.after(w.s[j], w.delta[j])) +
                   u.scores.eta * std::max(1.0, scale) / 2;
    }
    smax = std::max(smax, w.s[j]);
    dmax = std::max(dmax, w.delta[j]);
  }
  double l = 0;
  for (extent_t j = 0; j < n; ++j) l += (w.p[j] = std::exp(w.s[j] - smax));
  const double Delta = std::expm1(2 * dmax);
  const double nn = double(n);
  // E_ij: the weight's relative error from the exponent's rounding, the
  // exp, and up to n online rescales (any tiling); F_ij = (1 + E_ij)(1 +
  // γ_{n+2}) - 1, once per key (the d loop below reads them D times).
  // A kernel that rounds its weights to storage before P V (declared:
  // u_weights > 0) adds that rounding to E_ij, in the numerator's weights
  // and, should it sum the rounded ones, the denominator's
  // (docs/bounds.md#tensor-cores).
  const double exps = (nn + 1) * std::log1p(u.eps_exp), rescales = (nn + 1) * std::log1p(u.ua);
  // The numerator's sum as declared: its γ_{n+2}, and, in an f16 or bf16
  // accumulator, its up to n + 1 rescales rounded there too.
  const double numerator = compose(u.pv.gamma(nn + 2), u.pv.narrow ? power(u.pv.u, nn + 1) : 0);
  for (extent_t j = 0; j < n; ++j) {
    w.e_row[j] = std::expm1(u.ua * (smax - w.s[j] + 2 * dmax) + exps + rescales);
    if (u.u_weights > 0) w.e_row[j] = compose(w.e_row[j], u.u_weights);
    w.f_row[j] = compose(w.e_row[j], numerator);
  }
  double L = 0;
  for (extent_t j = 0; j < n; ++j) {
    const double P = w.p[j] / l, e = w.e_row[j];
    L += P * (e + u.gamma(nn) * (1 + e));
  }
  L = (1 + Delta) * L + nn * u.eta_a;
  // ... and each rounded weight may underflow in storage: η_w / 2, against
  // l >= 1.
  if (u.u_weights > 0) L += nn * u.eta_weights / 2;
  // ... and the running sum l rounded to a format after each of its n
  // updates and once more after the last rescale (l >= 1: relative).
  if (u.row_sum) L = compose(L, power(u.row_sum.u, nn + 1));
  const double lse = smax + std::log(l);
  r.lse_val.view()(b, h, i) = lse;
  const double lse_acc = dmax + L / (1 - L) + u.eps_log * std::log(nn) * (1 + u.ua) +
                         4 * u.ua * (std::fabs(lse) + dmax + 1);
  // A score bound so large that e^{2 dmax} overflows (an upstream stage's
  // errors, or an infinite one) leaves the row unbounded; the formulas
  // would give NaN (Delta·0, L/(1 - L) at L = inf). So does a relative
  // error of l of 1 or more (a declared arithmetic as coarse as scores
  // rounded to bf16 at logits in the hundreds), where 1/(1 - L) turns
  // negative: nothing bounds such a row.
  // lse rounded to a format before it is written (declared: round.lse):
  // unbounded too where it may pass that format's largest finite.
  const double lse_error = u.lse.after(lse, lse_acc);
  const bool unbounded = std::isinf(Delta) || !(L < 1) || std::isinf(lse_error);
  r.lse.view()(b, h, i) = unbounded ? kInf
                                    : kEvalSlack * (lse_error * (1 + u.us) + u.us * std::fabs(lse) +
                                                    u.eta_out(lse, lse_error));
  return {l, L, Delta, unbounded, std::isinf(numerator)};
}

// Row i's value sums of keys first .. last - 1, every d at once (V row by
// row), added to w.c, w.f, w.o, w.vmax, w.ev: j ascending, as a whole row's.
void add_value_sums(const Mat& v, extent_t b, extent_t g, extent_t first, extent_t last,
                    const AttentionInputErrors& in, const RowWeights& rw, ForwardRowScratch& w) {
  const extent_t D = v.shape()[3];
  const double* vg = row_of(v, {b, g, 0, 0});  // (M, D)
  bound_value_sums(w.p.data(), w.f_row.data(), rw.l, vg, first, last, D, w.c.data(), w.f.data(),
                   w.o.data(), w.vmax.data());
  if (!in.v) return;
  const double* evg = row_of(*in.v, {b, g, 0, 0});
  for (extent_t j = first; j < last; ++j)
    for (extent_t d = 0; d < D; ++d) w.ev[d] += bound_times(evg[j * D + d], w.p[j] / rw.l);
}

// Row i's O and its bound into r, from its value sums over its n keys.
void attention_forward_values(extent_t b, extent_t h, extent_t i, extent_t n,
                              const RoundingUnits& u, const RowWeights& rw,
                              const ForwardRowScratch& w, ForwardBounds& r) {
  const extent_t D = extent_t(w.c.size());
  const double nn = double(n), Delta = rw.Delta, L = rw.L;
  const bool unbounded = rw.unbounded;
  double* o_val = row_of(r.o_val, {b, h, i, 0});
  double* o_bound = row_of(r.o, {b, h, i, 0});
  for (extent_t d = 0; d < D; ++d) {
    const double c = w.c[d], f = w.f[d], o = w.o[d];
    double acc = Delta * c + ((1 + Delta) * f + L * (std::fabs(o) + Delta * c)) / (1 - L) +
                 (2 * nn * w.vmax[d] + nn + 2) * u.pv.eta / (1 - L) +
                 w.ev[d] * (1 + Delta) * (1 + L) / (1 - L);
    if (u.u_weights > 0) acc += nn * w.vmax[d] * u.eta_weights / 2 / (1 - L);
    // A partial value sum holds at most n max|v| (weights at most 1 against
    // the running max, twice that with their errors): past the accumulator's
    // largest finite it may overflow.
    const bool overflows = 4 * nn * w.vmax[d] >= u.pv.overflow;
    o_val[d] = o;
    o_bound[d] = unbounded || rw.values_unbounded || overflows || std::isinf(w.ev[d])
                     ? kInf
                     : kEvalSlack * (acc * (1 + u.us) + u.us * std::fabs(o) + u.eta_out(o, acc));
  }
}

// Query rows bounded together: rows i0 .. i0 + R - 1 of one (b, h). Their
// scores meet a block of kBoundKeysPerBlock keys, and their value sums a
// block of as many rows of V, while it is in cache: a row at a time read a
// kv head's K and V from memory once per query row, which at 16384 keys no
// cache holds. Each row's operations, and their order, are its own alone.
constexpr extent_t kBoundRowsPerBlock = 8;
constexpr extent_t kBoundKeysPerBlock = 64;

// The forward bounds of the rows i0 .. i0 + R - 1 of (b, h), row t seeing
// the keys 0 .. n[t] - 1, written into r; w holds R rows' scratch.
void attention_forward_rows(const Mat& q, const Mat& k, const Mat& v, const KeyRows& keys,
                            double scale, extent_t b, extent_t h, extent_t g, extent_t i0,
                            std::span<const extent_t> n, const RoundingUnits& u,
                            const AttentionInputErrors& in, std::span<ForwardRowScratch> w,
                            ForwardBounds& r) {
  const extent_t D = q.shape()[3];
  const auto R = extent_t(n.size());
  const extent_t most = *std::max_element(n.begin(), n.end());
  for (extent_t first = 0; first < most; first += kBoundKeysPerBlock)
    for (extent_t t = 0; t < R; ++t)
      if (n[t] > first)
        keys.dots(row_of(q, {b, h, i0 + t, 0}), first, std::min(first + kBoundKeysPerBlock, n[t]),
                  D, w[t].dot.data(), w[t].mag.data());
  std::vector<RowWeights> weights(static_cast<std::size_t>(R));
  for (extent_t t = 0; t < R; ++t) {
    if (n[t] == 0) {  // no visible key: exact O = 0, LSE = -inf; must match
      r.lse_val.view()(b, h, i0 + t) = -kInf;
      continue;
    }
    weights[t] = attention_forward_weights(q, k, scale, b, h, g, i0 + t, n[t], u, in, w[t], r);
    for (auto* sums : {&w[t].c, &w[t].f, &w[t].o, &w[t].vmax, &w[t].ev})
      std::fill(sums->begin(), sums->end(), 0.0);
  }
  for (extent_t first = 0; first < most; first += kBoundKeysPerBlock)
    for (extent_t t = 0; t < R; ++t)
      if (n[t] > first)
        add_value_sums(v, b, g, first, std::min(first + kBoundKeysPerBlock, n[t]), in, weights[t],
                       w[t]);
  for (extent_t t = 0; t < R; ++t)
    if (n[t] > 0) attention_forward_values(b, h, i0 + t, n[t], u, weights[t], w[t], r);
}

}  // namespace

ForwardBounds attention_forward_bounds(const Mat& q, const Mat& k, const Mat& v, double scale,
                                       causal::Mask causal, const std::vector<extent_t>* lens,
                                       const RoundingUnits& u, const AttentionInputErrors& given,
                                       const std::vector<std::uint8_t>* wanted) {
  // Errors of the inputs as the kernel reads them, where declared: each
  // subnormal one flushed to 0; q and k rounded to TF32 before QK, v
  // before PV (docs/bounds.md#declared-arithmetic).
  Mat read_q, read_k, read_v;
  AttentionInputErrors in = given;
  if (!given.q && (u.flush_inputs || u.qk.operand_u > 0 || u.pv.operand_u > 0 || u.query_read ||
                   u.key_read || u.value_read)) {
    read_q = read_errors(q, u, u.qk, u.query_read);
    read_k = read_errors(k, u, u.qk, u.key_read);
    read_v = read_errors(v, u, u.pv, u.value_read);
    in = {&read_q, &read_k, &read_v};
  }
  const Shape qs = q.shape(), ks = k.shape();
  const extent_t B = qs[0], H = qs[1], N = qs[2], D = qs[3], Hkv = ks[1], M = ks[2];
  const extent_t group = H / Hkv;
  ForwardBounds r{Mat(Shape{B, H, N, D}), Mat(Shape{B, H, N}), Mat(Shape{B, H, N, D}),
                  Mat(Shape{B, H, N})};
  std::vector<extent_t> rows;  // flat (b·H + h)·N + i
  for (extent_t x = 0; x < B * H * N; ++x)
    if (!wanted || (*wanted)[std::size_t(x)]) rows.push_back(x);
  // The keys transposed once when each kv head has rows enough to pay for
  // it (the backward's every row; not a sampled decode's few).
  const bool transpose = extent_t(rows.size()) >= kRowsPerTranspose * B * Hkv;
  const Mat kt = transpose ? transposed_rows(k) : Mat();
  auto keys_of = [&](extent_t b, extent_t g) {
    return transpose ? KeyRows{kt.storage().data() + (b * Hkv + g) * M, 1, B * Hkv * M}
                     : KeyRows{row_of(k, {b, g, 0, 0}), D, 1};
  };
  // Blocks: runs of consecutive rows of one (b, h), at most
  // kBoundRowsPerBlock long ({first position in rows, count}).
  std::vector<std::pair<std::size_t, extent_t>> blocks;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const bool joins = !blocks.empty() && blocks.back().second < kBoundRowsPerBlock &&
                       rows[t] == rows[t - 1] + 1 && rows[t] / N == rows[t - 1] / N;
    if (joins)
      ++blocks.back().second;
    else
      blocks.emplace_back(t, 1);
  }
  const auto count = static_cast<std::int64_t>(blocks.size());
#pragma omp parallel
  {
    std::vector<ForwardRowScratch> w;  // grown to the longest block met (decode's: one row)
    std::vector<extent_t> n;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t t = 0; t < count; ++t) {
      const auto [at, R] = blocks[std::size_t(t)];
      const extent_t x = rows[at];
      const extent_t b = x / (H * N), h = x / N % H, i0 = x % N;
      const extent_t len = lens ? (*lens)[std::size_t(b)] : M;
      n.clear();
      for (extent_t i = i0; i < i0 + R; ++i) n.push_back(dnf::visible_keys(causal, i, N, M, len));
      while (extent_t(w.size()) < R) w.emplace_back(M, D);
      attention_forward_rows(q, k, v, keys_of(b, h / group), scale, b, h, h / group, i0, n, u, in,
                             std::span(w).first(std::size_t(R)), r);
    }
  }
  return r;
}

// ---- rmsnorm and the MLP ----------------------------------------------------

Mat rmsnorm_bounds(const Mat& x, const Mat& w, double eps, const RoundingUnits& u, Mat* y_val,
                   const Mat* given) {
  const extent_t T = x.shape()[0], D = x.shape()[1];
  // Inputs flushed to zero, where declared: x's subnormals as errors of x,
  // w's below (a flushed w_d makes y_td 0).
  const Mat flushed = u.flush_inputs && !given ? read_errors(x, u, u.ss) : Mat();
  const Mat* ex = u.flush_inputs && !given ? &flushed : given;
  // The operations past the sum of squares: /D, + eps, sqrt, the division
  // (or reciprocal and product) and the product by w; sqrt and the division
  // as declared (each correctly rounded by default: six roundings).
  const double ops = u.eps_sqrt == u.ua && u.eps_div == u.ua
                         ? power(u.ua, 6)
                         : compose(power(u.ua, 4), compose(u.eps_sqrt, u.eps_div));
  Mat r(Shape{T, D});
  if (y_val) *y_val = Mat(Shape{T, D});
  for (extent_t t = 0; t < T; ++t) {
    double ss = 0, sx = 0;
    for (extent_t d = 0; d < D; ++d) {
      ss += x.view()(t, d) * x.view()(t, d);
      if (ex) sx += bound_times(ex->view()(t, d), std::fabs(x.view()(t, d)));
    }
    const double ms = ss / double(D) + eps;
    const double rms = std::sqrt(ms);
    // relative error of the computed mean square + eps, then of 1/rms
    // The sum of squares as declared accumulated and rounded; unbounded
    // where it may pass its accumulator's or its rounding's largest finite.
    const bool overflows = 2 * ss >= u.ss.overflow || 2 * ss >= u.sum_of_squares.overflow;
    double rho = (bound_times(u.ss.gamma(double(D + 2)), ss) / double(D) + u.ss.eta * double(D) +
                  u.ua * eps) /
                 ms;
    if (u.sum_of_squares)
      rho = compose(rho, u.sum_of_squares.u) + u.sum_of_squares.eta / 2 / (double(D) * ms);
    double rel = overflows ? kInf : compose(rho, ops);
    if (u.inverse_root) rel = compose(rel, u.inverse_root.u);
    for (extent_t d = 0; d < D; ++d) {
      const double xv = x.view()(t, d), wv = w.view()(d), y = xv / rms * wv;
      double e = bound_times(rel, std::fabs(y)) + 2 * u.eta_a * (1 + std::fabs(wv));
      if (u.flush_inputs && std::fabs(wv) < u.input_floor) e += std::fabs(y);
      if (ex)
        e += bound_times(ex->view()(t, d) + bound_times(sx, std::fabs(xv)) / (double(D) * ms),
                         2 * std::fabs(wv) / rms);
      r.view()(t, d) = kEvalSlack * (e * (1 + u.us) + u.us * std::fabs(y) + u.eta_out(y, e));
      if (y_val) y_val->view()(t, d) = y;
    }
  }
  return r;
}

Mat gemm_bounds(const Mat& a, const MatrixRows& bmat, const Mat* ea, const RoundingUnits& u,
                Mat* c_val, bool store, const std::vector<std::uint8_t>* rows,
                const SumUnits* declared) {
  const extent_t m = a.shape()[0], k = a.shape()[1], n = bmat.shape()[1];
  Mat r(Shape{m, n});
  if (c_val) *c_val = Mat(Shape{m, n});
  const SumUnits& sum = declared ? *declared : u.all;
  const double gk = sum.gamma(double(k));
  // Tiles of the rows asked by blocks of columns, spread over threads: an
  // MLP at its deployment width has few rows (T = 16) and very long ones,
  // and its weights (10.5 GB of f32 at Dm = 16384, F = 53248) are read once
  // per tile of rows, a row of a block at a time. Each element's sums still
  // run over p ascending.
  constexpr extent_t kColumns = 512, kRowsPerTile = 16;
  const extent_t blocks = (n + kColumns - 1) / kColumns;
  std::vector<extent_t> asked;
  for (extent_t i = 0; i < m; ++i)
    if (!rows || (*rows)[std::size_t(i)]) asked.push_back(i);
  const auto tiles = (static_cast<std::int64_t>(asked.size()) + kRowsPerTile - 1) / kRowsPerTile;
  const std::int64_t work = tiles * blocks;
#pragma omp parallel
  {
    // One tile's sums, kColumns per row, and a block row of B.
    std::vector<double> abs(kRowsPerTile * kColumns), val(abs.size()), prop(abs.size());
    std::vector<double> b_row(kColumns);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t x = 0; x < work; ++x) {
      const std::size_t first = std::size_t(x / blocks * kRowsPerTile);
      const std::size_t tile = std::min(std::size_t(kRowsPerTile), asked.size() - first);
      const extent_t j0 = x % blocks * kColumns, w = std::min(kColumns, n - j0);
      std::fill(abs.begin(), abs.end(), 0.0);
      std::fill(val.begin(), val.end(), 0.0);
      std::fill(prop.begin(), prop.end(), 0.0);
      for (extent_t p = 0; p < k; ++p) {
        const double* bp = bmat.row(p, j0, w, b_row.data());  // (w)
        for (std::size_t t = 0; t < tile; ++t) {
          const extent_t i = asked[first + t];
          const double av = a.view()(i, p), eav = ea ? ea->view()(i, p) : 0;
          double *vt = val.data() + t * kColumns, *at = abs.data() + t * kColumns;
          for (extent_t j = 0; j < w; ++j) {
            const double bv = bp[j];
            vt[j] += av * bv;
            at[j] += std::fabs(av * bv);
          }
          if (ea) {
            double* pt = prop.data() + t * kColumns;
            for (extent_t j = 0; j < w; ++j) pt[j] += bound_times(eav, std::fabs(bp[j]));
          }
        }
      }
      for (std::size_t t = 0; t < tile; ++t) {
        const extent_t i = asked[first + t];
        const double *vt = val.data() + t * kColumns, *at = abs.data() + t * kColumns,
                     *pt = prop.data() + t * kColumns;
        double* ri = row_of(r, {i, j0});
        for (extent_t j = 0; j < w; ++j) {
          // unbounded where a partial sum may pass the accumulator's largest finite
          double e = 2 * at[j] >= sum.overflow
                         ? kInf
                         : bound_times(gk, at[j] + pt[j]) + pt[j] + double(k) * sum.eta;
          if (store) e = e * (1 + u.us) + u.us * std::fabs(vt[j]) + u.eta_out(vt[j], e);
          ri[j] = kEvalSlack * e;
        }
        if (c_val) std::copy(vt, vt + w, row_of(*c_val, {i, j0}));
      }
    }
  }
  return r;
}

Mat mlp_bounds(const Mat& x, const MatrixRows& w1, const MatrixRows& w3, const MatrixRows& w2,
               const RoundingUnits& u, Mat* y_val, const Mat* ex,
               const std::vector<std::uint8_t>* rows) {
  const extent_t T = x.shape()[0], F = w1.shape()[1];
  Mat g, up;
  const Mat eg = gemm_bounds(x, w1, ex, u, &g, /*store=*/false, rows, &u.gate);
  const Mat eu = gemm_bounds(x, w3, ex, u, &up, /*store=*/false, rows, &u.up);
  Mat hv(Shape{T, F}), eh(Shape{T, F});
  const double eps_silu = u.eps_silu;
  const double overflow = std::log(u.ua == 0x1p-53 ? 0x1p1023 : 0x1p127) - 1;  // exp(-z) overflows
  for (extent_t t = 0; t < T; ++t) {
    if (rows && !(*rows)[std::size_t(t)]) continue;
    for (extent_t f = 0; f < F; ++f) {
      const double z = g.view()(t, f), uv = up.view()(t, f);
      const double s = dnf::silu(z);
      // gate and up as declared rounded before their use
      const double e_g = u.gate_value.after(z, eg.view()(t, f)),
                   e_u = u.up_value.after(uv, eu.view()(t, f));
      const double s_hat = std::fabs(s) + 1.1 * e_g;  // |silu'| <= 1.1
      const double uv_hat = std::fabs(uv) + e_u;
      double e = bound_times(1.1 * e_g, uv_hat) + bound_times(e_u, std::fabs(s)) +
                 bound_times(s_hat, uv_hat) * compose(eps_silu, u.ua) + u.eta_a;
      if (z - e_g < -overflow) e += bound_times(s_hat, uv_hat);  // silu may flush to 0
      hv.view()(t, f) = s * uv;
      // h as declared rounded before the down product
      eh.view()(t, f) = u.h.after(s * uv, e);
    }
  }
  return gemm_bounds(hv, w2, &eh, u, y_val, /*store=*/true, rows, &u.down);
}

void widen_rows(const AnyTensor& t, moa::extent_t first, Mat& into) {
  const moa::Shape from = t.shape();
  const int last = from.rank() - 1;
  if (last < 0 || from[last] == 0) {  // a scalar or empty rows: element by element
    for (const moa::Index& i : moa::iota(from)) into.view()(i) = t.get(i);
    return;
  }
  const moa::extent_t width = from[last];
  const auto rows = static_cast<std::int64_t>(into.size() / width);
  double* out = into.storage().data();
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) t.get_rows(first + r, 1, out + r * width);
}

}  // namespace detail

std::vector<std::vector<double>> apriori_bounds(const Case& c, const BoundConstants& k,
                                                const Selection* selection) {
  const Problem& p = c.problem;
  // The forward of attention.fwd and decode, and mlp.swiglu, bound the
  // selected rows only; the backward the selected rows of dQ, dK and dV,
  // from every query row's forward (a key row's sums run over them all).
  std::vector<std::uint8_t> wanted, wanted_keys;
  if (selection) {
    wanted.assign(std::size_t(query_row_count(p)), 0);
    for (moa::extent_t r : selection->query_rows) wanted[std::size_t(r)] = 1;
    wanted_keys.assign(std::size_t(key_row_count(p)), 0);
    for (moa::extent_t r : selection->key_rows) wanted_keys[std::size_t(r)] = 1;
  }
  std::vector<detail::Mat> widened(c.inputs.size());
  if (!oracle_op(p.op).bounds_widen_own_rows)
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
      if (!is_index_input(p, int(i))) {
        widened[i] = detail::Mat(c.inputs[i].shape());
        detail::widen_rows(c.inputs[i], 0, widened[i]);
      }
  if (!mixed_formats(p))
    return oracle_op(p.op).apriori_bounds({c, widened, detail::rounding_units(p.format, k),
                                           selection ? &wanted : nullptr,
                                           selection ? &wanted_keys : nullptr});
  // Per-tensor formats (docs/design.md#per-tensor-formats): the inputs are
  // exact as handed over; each output's rounding term is half an ulp of its
  // own format, and the call accumulates in f64 only where every float
  // tensor is f64. The bounds are derived once per output format, each
  // output's taken from its own.
  const std::size_t outputs = info(p.op).outputs.size();
  std::vector<std::vector<double>> out(outputs);
  std::vector<Format> done;
  for (std::size_t t = 0; t < outputs; ++t) {
    const Format f = output_format(p, t);
    if (std::find(done.begin(), done.end(), f) != done.end()) continue;
    done.push_back(f);
    std::vector<std::vector<double>> in_f = oracle_op(p.op).apriori_bounds(
        {c, widened, detail::rounding_units(p.format, k, f, all_f64(p)),
         selection ? &wanted : nullptr, selection ? &wanted_keys : nullptr});
    for (std::size_t o = t; o < outputs; ++o)
      if (output_format(p, o) == f) out[o] = std::move(in_f[o]);
  }
  return out;
}

}  // namespace moacert::oracle
