// The attention ops' rows of the oracle's op table (oracle/ops/table.hpp):
// attention.fwd, attention.bwd, attention.fwdbwd and attention.decode. Their
// rows are query rows (b, h, i), flat (b·H + h)·N + i (decode's (b, h), flat
// b·H + h), and the backward's key rows (b, g, j), flat (b·Hkv + g)·M + j;
// their units are listed in oracle/detail/units.hpp; their bounds are
// docs/bounds.md#attention-forward and #attention-backward.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "oracle/detail/bound_helpers.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/ops/table.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/named.hpp"

namespace moacert::oracle {
namespace {

using detail::AttentionInputErrors;
using detail::BoundCall;
using detail::compose;
using detail::ForwardBounds;
using detail::kEvalSlack;
using detail::kInf;
using detail::Mat;
using detail::no_key_rows;
using detail::power;
using detail::rav;
using detail::Read;
using detail::RoundingUnits;
using detail::Unit;
using detail::UnitKind;
using moa::extent_t;
using moa::Index;
using moa::Shape;
using Bounds = std::vector<std::vector<double>>;

// ---- rows -------------------------------------------------------------------

extent_t query_rows(const Problem& p) {  // (b, h, i)
  return p.dims.B * p.dims.H * p.dims.N;
}
extent_t decode_query_rows(const Problem& p) {  // (b, h)
  return p.dims.B * p.dims.H;
}
extent_t key_rows(const Problem& p) {  // (b, g, j)
  return p.dims.B * p.dims.Hkv * p.dims.M;
}

// ---- units ------------------------------------------------------------------

// The forward's units: one per query row.
void add_forward_rows(const Problem& p, const Selection* rows, std::vector<Unit>& units) {
  const Dims& d = p.dims;
  detail::for_each_query_row(p, rows, [&](extent_t r) {
    units.push_back({UnitKind::fwd_row, r / (d.H * d.N), r / d.N % d.H, r % d.N});
  });
}

// The backward's units: one per (b, kv head) without a selection; with one,
// a unit per selected query row (its dq row) and one per (b, kv head) for
// its selected key rows.
void add_backward_units(const Problem& p, const Selection* rows, std::vector<Unit>& units) {
  const Dims& d = p.dims;
  if (!rows) {
    for (extent_t b = 0; b < d.B; ++b)
      for (extent_t g = 0; g < d.Hkv; ++g) units.push_back({UnitKind::bwd_group, b, g, 0});
    return;
  }
  for (extent_t r : rows->query_rows)
    units.push_back({UnitKind::bwd_query_row, r / (d.H * d.N), r / d.N % d.H, r % d.N});
  for (extent_t r : rows->key_rows) {  // ascending: one unit per (b, g) met
    const extent_t bg = r / d.M;
    if (units.empty() || units.back().kind != UnitKind::bwd_key_rows ||
        units.back().a * d.Hkv + units.back().b != bg)
      units.push_back({UnitKind::bwd_key_rows, bg / d.Hkv, bg % d.Hkv, 0});
    units.back().keys.push_back(r % d.M);
  }
}

std::vector<Unit> forward_units(const Problem& p, const Selection* rows) {
  std::vector<Unit> units;
  add_forward_rows(p, rows, units);
  return units;
}
std::vector<Unit> backward_units(const Problem& p, const Selection* rows) {
  std::vector<Unit> units;
  add_backward_units(p, rows, units);
  return units;
}
std::vector<Unit> fused_units(const Problem& p, const Selection* rows) {  // fwd, then bwd
  std::vector<Unit> units;
  add_forward_rows(p, rows, units);
  add_backward_units(p, rows, units);
  return units;
}
std::vector<Unit> decode_units(const Problem& p, const Selection* rows) {  // one per (b, h)
  std::vector<Unit> units;
  detail::for_each_query_row(p, rows, [&](extent_t r) {
    units.push_back({UnitKind::decode_head, r / p.dims.H, r % p.dims.H, 0});
  });
  return units;
}

[[noreturn]] void not_attention(const Unit& u) {
  throw std::logic_error("oracle: unit kind " + std::to_string(static_cast<int>(u.kind)) +
                         " is not a unit of attention");
}

double softmax_row_elements(const Dims& d) {  // one query row's softmax
  return 4.0 * double(d.M) + 2.0 * double(d.D);
}
// One query row's softmax at the MPFI pass: streamed_forward holds the
// row's probabilities where its scores were, M, and its O row, D
// (detail/streamed_attention.hpp; the plain reductions work in place).
double streamed_softmax_row_elements(const Dims& d) {
  return double(d.M) + double(d.D);
}

// A query row's scores and probabilities, `row` (and, for a dQ row, its
// D_i and dQ row); a kv group's dQ (`group_dq`), dK and dV with one query
// row's softmax at a time (dnf::attention_bwd walks the rows, holding no
// N x M array); the key rows' dK, dV with a block of query rows'
// statistics.
struct HeldRows {
  double row, group_dq;
};
double scratch_with_rows(const Problem& p, const Unit& u, HeldRows held) {
  const Dims& d = p.dims;
  switch (u.kind) {
    case UnitKind::fwd_row:
    case UnitKind::decode_head:
      return held.row;
    case UnitKind::bwd_group:
      return held.group_dq + 2.0 * double(d.M) * double(d.D) + held.row;
    case UnitKind::bwd_query_row:
      return held.row + double(d.D);
    case UnitKind::bwd_key_rows:  // kStatisticsRows query rows' softmax at once
      return double(dnf::kStatisticsRows) * held.row + 2.0 * double(u.keys.size()) * double(d.D);
    case UnitKind::norm_row:
    case UnitKind::mlp_row:
    case UnitKind::batch:
      break;
  }
  not_attention(u);
}
// The DNF's: a kv group fills the group's dQ, G·N·D.
double scratch_elements(const Problem& p, const Unit& u) {
  const Dims& d = p.dims;
  const double group = double(d.H) / double(std::max<extent_t>(1, d.Hkv));
  return scratch_with_rows(p, u, {softmax_row_elements(d), group * double(d.N) * double(d.D)});
}

// At the MPFI pass (detail/streamed_attention.hpp): the streamed rows'
// softmax, a kv group's dQ a row at a time, each handed on as it is done,
// and the blocks of rows the unit streams from the case.
double mpfi_scratch_elements(const Problem& p, const Unit& u) {
  const Dims& d = p.dims;
  const double streamed = detail::streamed_attention_scratch(d, double(u.keys.size()));
  return scratch_with_rows(p, u, {streamed_softmax_row_elements(d), double(d.D)}) + streamed;
}

std::vector<Read> reads(const Problem& p, const Unit& u) {
  const Dims& d = p.dims;
  const extent_t group = d.H / std::max<extent_t>(1, d.Hkv);
  auto read = [&](std::string_view name, Index start, Shape extent) {
    return Read{static_cast<int>(input_position(p.op, name)), std::move(start), std::move(extent)};
  };
  // Keys query row i sees: all, or the causal prefix (dnf::visible_keys).
  auto seen = [&](extent_t i) { return dnf::visible_keys(p.mask(), i, d.N, d.M, d.M); };
  // Query row (b, h, i), then the keys and the values it sees: a forward
  // row's reads, and a backward query row's but its do row.
  auto query_row = [&](extent_t b, extent_t h, extent_t i) {
    const extent_t g = h / group;
    return std::vector<Read>{read("q", {b, h, i, 0}, {1, 1, 1, d.D}),
                             read("k", {b, g, 0, 0}, {1, 1, seen(i), d.D}),
                             read("v", {b, g, 0, 0}, {1, 1, seen(i), d.D})};
  };
  switch (u.kind) {
    case UnitKind::fwd_row:  // q row, then the keys and values it sees
      return query_row(u.a, u.b, u.c);
    case UnitKind::bwd_group:
    case UnitKind::bwd_key_rows: {  // the group's q, its k, v, the group's do
      const extent_t b = u.a, g = u.b;
      const Shape qs{1, group, d.N, d.D}, ks{1, 1, d.M, d.D};
      return {read("q", {b, g * group, 0, 0}, qs), read("k", {b, g, 0, 0}, ks),
              read("v", {b, g, 0, 0}, ks), read("do", {b, g * group, 0, 0}, qs)};
    }
    case UnitKind::bwd_query_row: {  // q row, the keys and values it sees, do row
      std::vector<Read> r = query_row(u.a, u.b, u.c);
      r.push_back(read("do", {u.a, u.b, u.c, 0}, {1, 1, 1, d.D}));
      return r;
    }
    case UnitKind::decode_head: {  // q, the whole cache of its kv head (lens: Inputs::lens)
      const extent_t b = u.a, h = u.b, g = h / group;
      return {read("q", {b, h, 0, 0}, {1, 1, 1, d.D}), read("k", {b, g, 0, 0}, {1, 1, d.M, d.D}),
              read("v", {b, g, 0, 0}, {1, 1, d.M, d.D})};
    }
    case UnitKind::norm_row:
    case UnitKind::mlp_row:
    case UnitKind::batch:
      break;
  }
  not_attention(u);
}

// ---- bounds -----------------------------------------------------------------

struct BackwardBounds {
  Mat dq, dk, dv;
};

// A row-major double tensor's elements from `start` on: a row of it.
const double* row_of(const Mat& m, const Index& start) {
  return m.storage().data() + moa::row_major_offset(m.shape(), start);
}
double* row_of(Mat& m, const Index& start) {
  return m.storage().data() + moa::row_major_offset(m.shape(), start);
}

// Query rows of one head whose dots the backward's bounds take together:
// each block of kBackwardKeysPerBlock keys (and values) meets every row
// of the block while it is in cache, where a row at a time read the kv
// head's K and V (transposed) from memory once per query row. Each row's
// sums, and their order, are its own alone.
constexpr extent_t kBackwardRowsPerBlock = 8;
constexpr extent_t kBackwardKeysPerBlock = 64;

// One query row's dots over its keys: q_i·k_j and Σ_d |q_id k_jd|, dO_i·v_j
// and Σ_d |dO_id v_jd| (M each).
struct RowDots {
  std::vector<double> dot, mag, dp, b;
  explicit RowDots(extent_t M) : dot(M), mag(M), dp(M), b(M) {}
};

// One thread's scratch, M keys: a block's dots, then one row at a time.
struct BackwardRowScratch {
  std::vector<RowDots> rows;                 // kBackwardRowsPerBlock
  std::vector<double> s, delta, pi, rho, e;  // (M)
  Mat kt, vt;  // the kv head's keys and values transposed, (D, M), for bound_dots
  BackwardRowScratch(extent_t M, extent_t D)
      : rows(std::size_t(kBackwardRowsPerBlock), RowDots(M)),
        s(M),
        delta(M),
        pi(M),
        rho(M),
        e(M),
        kt(Shape{D, M}),
        vt(Shape{D, M}) {}
};

// docs/bounds.md#attention-backward. eO and eL bound the errors of the o and
// lse the kernel uses (the given, rounded ones for attention.bwd; its own
// for attention.fwdbwd). With `dq_rows` (flat (b·H + h)·N + i) and
// `key_rows` (flat (b·Hkv + g)·M + j), the sampled oracle's rows, only
// those rows of dQ and of dK, dV are bounded (the others left 0); a key
// row's sums still run over every query row of its group. The (b, kv head)
// pairs are spread over threads; each element's sums run in the order of
// the definition's loops (h of the group ascending, then i, then j), so
// every bound is bitwise the same whichever rows are asked and however
// many threads run.
BackwardBounds attention_backward_bounds(const Mat& q, const Mat& k, const Mat& v, const Mat& dout,
                                         double scale, causal::Mask causal,
                                         const ForwardBounds& fwd, const Mat& eO, const Mat& eL,
                                         const RoundingUnits& u,
                                         const std::vector<std::uint8_t>* dq_rows = nullptr,
                                         const std::vector<std::uint8_t>* key_rows = nullptr) {
  const Shape qs = q.shape(), ks = k.shape();
  const extent_t B = qs[0], H = qs[1], N = qs[2], D = qs[3], Hkv = ks[1], M = ks[2];
  const extent_t group = H / Hkv;
  BackwardBounds r{Mat(Shape{B, H, N, D}), Mat(Shape{B, Hkv, M, D}), Mat(Shape{B, Hkv, M, D})};
  Mat dq_val(Shape{B, H, N, D}), dk_val(Shape{B, Hkv, M, D}), dv_val(Shape{B, Hkv, M, D});
  const double nq = double(group * N);  // terms of each dK, dV sum
  const auto kv_heads = static_cast<std::int64_t>(B * Hkv);
#pragma omp parallel
  {
    BackwardRowScratch w(M, D);
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t bg = 0; bg < kv_heads; ++bg) {
      const extent_t b = bg / Hkv, g = bg % Hkv;
      // Which key rows of this kv head are bounded (all without key_rows).
      const std::uint8_t* keys_wanted = key_rows ? key_rows->data() + bg * M : nullptr;
      const bool some_key =
          !keys_wanted || std::find(keys_wanted, keys_wanted + M, 1) != keys_wanted + M;
      const double* kg = row_of(k, {b, g, 0, 0});       // (M, D)
      const double* vg = row_of(v, {b, g, 0, 0});       // (M, D)
      double* dk_val_g = row_of(dk_val, {b, g, 0, 0});  // (M, D)
      double* dv_val_g = row_of(dv_val, {b, g, 0, 0});  // (M, D)
      double* dk_g = row_of(r.dk, {b, g, 0, 0});        // (M, D)
      double* dv_g = row_of(r.dv, {b, g, 0, 0});        // (M, D)
      // Every row of the group reads all M keys and values in its dots: read
      // them transposed (vectors of keys) once the rows are many.
      const bool transpose = group * N >= detail::kRowsPerTranspose;
      if (transpose) {
        detail::transpose_rows(kg, M, D, w.kt.storage().data());
        detail::transpose_rows(vg, M, D, w.vt.storage().data());
      }
      const detail::KeyRows keys =
          transpose ? detail::KeyRows{w.kt.storage().data(), 1, M} : detail::KeyRows{kg, D, 1};
      const detail::KeyRows values =
          transpose ? detail::KeyRows{w.vt.storage().data(), 1, M} : detail::KeyRows{vg, D, 1};
      // Whether anything of row i of head h is bounded: some of its dQ row
      // or of the key rows, and a visible key (else nothing flows).
      auto dq_wanted = [&](extent_t h, extent_t i) {
        return !dq_rows || (*dq_rows)[std::size_t((b * H + h) * N + i)];
      };
      auto active = [&](extent_t h, extent_t i) {
        return (dq_wanted(h, i) || some_key) && !std::isinf(fwd.lse_val.view()(b, h, i));
      };
      // The bounds of row i of head h from its dots rd.
      auto bound_row = [&](extent_t h, extent_t i, const RowDots& rd) {
        const bool dq_wanted_i = dq_wanted(h, i);
        const double lse = fwd.lse_val.view()(b, h, i);
        const double* qi = row_of(q, {b, h, i, 0});          // (D)
        const double* doi = row_of(dout, {b, h, i, 0});      // (D)
        const double* oi = row_of(fwd.o_val, {b, h, i, 0});  // (D)
        const double* eOi = row_of(eO, {b, h, i, 0});        // (D)
        double* dq_val_i = row_of(dq_val, {b, h, i, 0});     // (D)
        double* dq_i = row_of(r.dq, {b, h, i, 0});           // (D)
        const extent_t n = dnf::visible_keys(causal, i, N, M, M);
        double Drow = 0, absDO = 0, eD = 0;
        for (extent_t d = 0; d < D; ++d) {
          const double o = oi[d], dov = doi[d];
          Drow += dov * o;
          absDO += std::fabs(dov);
          eD += std::fabs(dov) * (u.gamma(double(D)) * (std::fabs(o) + eOi[d]) + eOi[d]);
        }
        eD += double(D) * u.eta_a;
        const double el = eL.view()(b, h, i);
        // The row's scores s_ij and their error bounds δ_ij (as in the
        // forward), dP_ij and b_ij = Σ_d |dO_id V_jd|, over the visible
        // keys (a prefix).
        for (extent_t j = 0; j < n; ++j) {
          w.s[j] = scale * rd.dot[j];
          w.delta[j] = u.gamma(double(D + 3)) * scale * rd.mag[j] +
                       double(D + 1) * u.eta_a * std::max(1.0, scale);
        }
        // ρ_ij: relative error of exp(ŝ_ij - lse_i) but for the factor that is
        // common to the row (e^{LSE(ŝ) - lse}); Λ_i: that of its row sum l̂_i.
        double dmax = 0;
        for (extent_t j = 0; j < n; ++j) dmax = std::max(dmax, w.delta[j]);
        const double Delta = std::expm1(2 * dmax);
        // e_ij = exp(ŝ_ij - lse_i), kept for the sums below.
        const double exp_error = std::log1p(u.eps_exp), three = 3 * std::log1p(u.ua);
        double Lambda = 0;
        for (extent_t j = 0; j < n; ++j) {
          w.rho[j] =
              std::expm1(u.ua * (std::fabs(w.s[j] - lse) + w.delta[j] + el) + exp_error + three);
          w.e[j] = std::exp(w.s[j] - lse);
          Lambda += w.e[j] * compose(w.rho[j], u.gamma(double(n)));
        }
        Lambda = (1 + Delta) * Lambda + double(n) * u.eta_a * std::exp(dmax + el);
        // Π_ij: relative error of the recomputed P̂_ij, either exp(ŝ_ij -
        // lse_i) or that divided by its row sum l̂_i (times 1 / l̂_i: two
        // more roundings), whichever is larger.
        const double two_products = power(u.ua, 2);
        for (extent_t j = 0; j < n; ++j) {
          const double x = std::fabs(w.s[j] - lse), delta = w.delta[j];
          const double Pi_given =
              std::expm1(delta + el + u.ua * (x + delta + el) + exp_error + three);
          const double Pi_norm =
              Lambda < 1 ? (compose(compose(Delta, w.rho[j]), two_products) + Lambda) / (1 - Lambda)
                         : kInf;
          w.pi[j] = std::max(Pi_given, Pi_norm);
        }
        // Λ_i >= 1 (a declared exp coarse enough that its errors, compounded
        // over the row's rescales, reach the row sum) or an unbounded lse:
        // nothing bounds P̂ on this row, nor what it flows into.
        const bool unbounded = !(Lambda < 1) || std::isinf(el);
        // D̂_i either from the given o (above) or as Σ_j P̂_ij dP̂_ij (autograd's
        // rowsum(P ∘ dP), scaled by 1 / l̂_i after the sum): each term errs by
        // its P̂'s Π and dP̂'s γ_D b_ij, the sum, product and scaling by
        // γ_{n+2}; terms and weights may underflow.
        double eD_sum = 0, dp_max = 0;
        for (extent_t j = 0; j < n; ++j) {
          const double wj = compose(w.pi[j], u.gamma(double(n + 2)));
          // dP̂_ij as the sum reads it (rounded first where declared).
          const double e_dp = u.weight_grads.after(
              std::fabs(rd.dp[j]),
              u.gamma(double(D)) * rd.b[j] + (u.weight_grads ? double(D) * u.eta_a : 0));
          eD_sum += w.e[j] * (wj * std::fabs(rd.dp[j]) + (1 + wj) * e_dp);
          dp_max = std::max(dp_max, std::fabs(rd.dp[j]) + e_dp);
        }
        eD = std::max(eD, eD_sum + double(2 * n + D) * u.eta_a * (1 + dp_max));
        // A kernel that keeps D̂_i in a narrower format (declared round.D)
        // errs by its rounding more: docs/bounds.md#declared-arithmetic.
        eD = u.row_delta.after(std::fabs(Drow), eD);
        for (extent_t j = 0; j < n; ++j) {
          const bool key_wanted = !keys_wanted || keys_wanted[j];
          if (!dq_wanted_i && !key_wanted) continue;
          const double dp = rd.dp[j], bij = rd.b[j];
          // dP̂_ij errs by γ_D b_ij and D underflows; rounded to a narrower
          // format before its next use (declared round.dP), by that
          // rounding of a value that erred so: e_dp counts the underflows
          // then, dp_eta apart otherwise (as the standard bound always had).
          const double e_dp = u.weight_grads
                                  ? u.weight_grads.after(std::fabs(dp), u.gamma(double(D)) * bij +
                                                                            double(D) * u.eta_a)
                                  : u.gamma(double(D)) * bij;
          const double dp_eta = u.weight_grads ? 0 : double(D) * u.eta_a;
          const double P = w.e[j];
          const double Pi = w.pi[j];
          const double ds = P * (dp - Drow);
          // P̂ may also underflow (x beyond the exponent range): an absolute
          // η_a next to its relative Π, carried through dS and its products.
          // A kernel that rounds P̂ before its next use (declared: u_weights
          // > 0) may use the rounded P̂ in dS as in dV: relative u_P and an
          // underflow η_P / 2 more.
          const double Pi_used = u.u_weights > 0 ? compose(Pi, u.u_weights) : Pi;
          const double two = compose(Pi_used, two_products);
          const double P_underflow =
              u.u_weights > 0 ? u.eta_weights / 2 * (std::fabs(dp - Drow) + e_dp + eD) : 0;
          const double sigma_f32 =
              P * (two * std::fabs(dp - Drow) + (1 + two) * (e_dp + eD + dp_eta)) +
              u.eta_a * (2 + std::fabs(dp - Drow) + e_dp + eD) + P_underflow;
          // A kernel that rounds dS to storage before its products
          // (declared: u_score_grads > 0) errs by u_s of the computed
          // |dS| <= |ds| + σ more, or underflows (η_s / 2)
          // (docs/bounds.md#tensor-cores).
          const double sigma = u.u_score_grads > 0
                                   ? sigma_f32 + u.u_score_grads * (std::fabs(ds) + sigma_f32) +
                                         u.eta_score_grads / 2
                                   : sigma_f32;
          const double gq = u.gamma(double(n + 2)), gk = u.gamma(nq + 2), gv = u.gamma(nq + 1);
          const double* kj = kg + j * D;
          // σ·dS may underflow before its product with K or Q: that
          // absolute η_a is scaled by |K| or |Q| (large keys or queries
          // beside a vanishing weight), the product's own below.
          if (dq_wanted_i) {
            for (extent_t d = 0; d < D; ++d) {
              const double kv = kj[d];
              dq_val_i[d] += scale * ds * kv;
              dq_i[d] += unbounded ? kInf
                                   : (scale * (std::fabs(ds) * gq + sigma * (1 + gq)) + u.eta_a) *
                                         std::fabs(kv);
            }
          }
          if (key_wanted) {
            double* dk_val_j = dk_val_g + j * D;
            double* dv_val_j = dv_val_g + j * D;
            double* dk_j = dk_g + j * D;
            double* dv_j = dv_g + j * D;
            for (extent_t d = 0; d < D; ++d) {
              const double qv = qi[d], dov = doi[d];
              dk_val_j[d] += scale * ds * qv;
              dv_val_j[d] += P * dov;
              if (unbounded) {
                dk_j[d] = dv_j[d] = kInf;
                continue;
              }
              dk_j[d] +=
                  (scale * (std::fabs(ds) * gk + sigma * (1 + gk)) + u.eta_a) * std::fabs(qv);
              dv_j[d] += P * std::fabs(dov) * compose(Pi_used, gv) +
                         u.eta_a * (1 + std::fabs(dov)) +
                         u.eta_weights / 2 * std::fabs(dov) * (1 + gv);
            }
          }
        }
      };
      std::vector<extent_t> rows, seen;  // a block's active rows i, and the keys each sees
      for (extent_t h = g * group; h < (g + 1) * group; ++h) {
        for (extent_t i0 = 0; i0 < N; i0 += kBackwardRowsPerBlock) {
          rows.clear();
          seen.clear();
          for (extent_t i = i0; i < std::min(i0 + kBackwardRowsPerBlock, N); ++i) {
            if (!active(h, i)) continue;
            rows.push_back(i);
            seen.push_back(dnf::visible_keys(causal, i, N, M, M));
          }
          if (rows.empty()) continue;
          const extent_t most = *std::max_element(seen.begin(), seen.end());
          for (extent_t first = 0; first < most; first += kBackwardKeysPerBlock) {
            for (std::size_t t = 0; t < rows.size(); ++t) {
              if (seen[t] <= first) continue;
              const extent_t last = std::min(first + kBackwardKeysPerBlock, seen[t]);
              RowDots& rd = w.rows[t];
              keys.dots(row_of(q, {b, h, rows[t], 0}), first, last, D, rd.dot.data(),
                        rd.mag.data());
              values.dots(row_of(dout, {b, h, rows[t], 0}), first, last, D, rd.dp.data(),
                          rd.b.data());
            }
          }
          for (std::size_t t = 0; t < rows.size(); ++t) bound_row(h, rows[t], w.rows[t]);
        }
      }
    }
  }
  // The scale's own product, the storage rounding, the slack, and two
  // underflows per term (σ·dS, then its product with K, Q or dO); element
  // by element, so the rows not asked are left as they are (0).
  auto finish = [&](Mat& bound, const Mat& val, double terms,
                    const std::vector<std::uint8_t>* rows) {
    std::vector<double>& e_all = bound.storage();
    const std::vector<double>& v_all = val.storage();
    const auto count = static_cast<std::int64_t>(e_all.size());
#pragma omp parallel for schedule(static)
    for (std::int64_t x = 0; x < count; ++x) {
      if (rows && !(*rows)[std::size_t(x / D)]) continue;
      const double e = e_all[std::size_t(x)] * (1 + u.ua) * (1 + u.ua) + 2 * terms * u.eta_a;
      e_all[std::size_t(x)] =
          kEvalSlack * (e * (1 + u.us) + u.us * std::fabs(v_all[std::size_t(x)]) +
                        u.eta_out(v_all[std::size_t(x)], e));
    }
  };
  finish(r.dq, dq_val, double(M), dq_rows);
  finish(r.dk, dk_val, nq, key_rows);
  finish(r.dv, dv_val, nq, key_rows);
  return r;
}

// The forward of the selected rows (call.only), their o and lse.
Bounds forward_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const auto x = inputs_by_name(p.op, call.widened);
  const ForwardBounds f = detail::attention_forward_bounds(
      x["q"], x["k"], x["v"], p.scale(), p.mask(), nullptr, call.u, {}, call.only);
  Bounds out(info(p.op).outputs.size());
  const auto y = outputs_by_name(p.op, out);
  y["o"] = rav(f.o);
  y["lse"] = rav(f.lse);
  return out;
}

// Decode's forward: batch b sees its first lens[b] keys. One kv head at a
// time, its cache widened to doubles alone (bounds_widen_own_rows): a row's
// bounds read only its q row and its kv head, and bound_dots gives the same
// bits whichever rows are computed together.
Bounds decode_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const Dims& d = p.dims;
  const auto in = inputs_by_name(p.op, call.c.inputs);
  const extent_t group = d.H / d.Hkv;
  Bounds out(info(p.op).outputs.size());
  const auto y = outputs_by_name(p.op, out);
  y["o"].assign(std::size_t(d.B * d.H * d.D), 0.0);  // rows not bounded: 0, as every row's call
  y["lse"].assign(std::size_t(d.B * d.H), 0.0);
  // One kv head's rows, filled again for each head: its memory touched once.
  Mat q(Shape{1, group, 1, d.D}), k(Shape{1, 1, d.M, d.D}), v(Shape{1, 1, d.M, d.D});
  for (extent_t b = 0; b < d.B; ++b) {
    const std::vector<extent_t> lens{extent_t(in["lens"].get({b}))};
    for (extent_t g = 0; g < d.Hkv; ++g) {
      const extent_t first_head = b * d.H + g * group;  // flat (b, h) of the group's first
      std::vector<std::uint8_t> only;
      if (call.only) {
        only.assign(call.only->begin() + first_head, call.only->begin() + first_head + group);
        if (std::none_of(only.begin(), only.end(), [](std::uint8_t x) { return x != 0; })) continue;
      }
      detail::widen_rows(in["q"], first_head, q);
      detail::widen_rows(in["k"], (b * d.Hkv + g) * d.M, k);
      detail::widen_rows(in["v"], (b * d.Hkv + g) * d.M, v);
      const ForwardBounds f = detail::attention_forward_bounds(
          q, k, v, p.scale(), /*causal=*/false, &lens, call.u, {}, call.only ? &only : nullptr);
      std::copy(f.o.storage().begin(), f.o.storage().end(), y["o"].begin() + first_head * d.D);
      std::copy(f.lse.storage().begin(), f.lse.storage().end(), y["lse"].begin() + first_head);
    }
  }
  return out;
}

// The backward of the selected rows (every row without a selection; a key
// row's sums run over every query row), and for attention.fwdbwd its
// forward too. The kernel of attention.bwd may
// use the given o and lse (correctly rounded) or recompute them (as the DNF
// does): the forward's bounds cover both.
Bounds backward_bounds(const BoundCall& call) {
  const Problem& p = call.c.problem;
  const auto x = inputs_by_name(p.op, call.widened);
  const ForwardBounds f = detail::attention_forward_bounds(x["q"], x["k"], x["v"], p.scale(),
                                                           p.mask(), nullptr, call.u);
  const BackwardBounds bb =
      attention_backward_bounds(x["q"], x["k"], x["v"], x["do"], p.scale(), p.mask(), f, f.o, f.lse,
                                call.u, call.only, call.only_keys);
  Bounds out(info(p.op).outputs.size());
  const auto y = outputs_by_name(p.op, out);
  if (y.has("o")) {  // attention.fwdbwd
    y["o"] = rav(f.o);
    y["lse"] = rav(f.lse);
  }
  y["dq"] = rav(bb.dq);
  y["dk"] = rav(bb.dk);
  y["dv"] = rav(bb.dv);
  return out;
}

}  // namespace

namespace ops {

OracleOp attention_fwd() {
  return {.query_row_count = query_rows,
          .key_row_count = no_key_rows,
          .key_outputs = {},
          .units = forward_units,
          .unit_scratch_elements = scratch_elements,
          .mpfi_unit_scratch_elements = mpfi_scratch_elements,
          .reads = reads,
          .streamed_at_mpfi = {"q", "k", "v"},
          .first_pass = true,
          .apriori_bounds = forward_bounds};
}

OracleOp attention_bwd() {
  return {.query_row_count = query_rows,
          .key_row_count = key_rows,
          .key_outputs = {"dk", "dv"},
          .units = backward_units,
          .unit_scratch_elements = scratch_elements,
          .mpfi_unit_scratch_elements = mpfi_scratch_elements,
          .reads = reads,
          .streamed_at_mpfi = {"q", "k", "v", "do"},
          .first_pass = true,
          .apriori_bounds = backward_bounds};
}

OracleOp attention_fwdbwd() {
  return {.query_row_count = query_rows,
          .key_row_count = key_rows,
          .key_outputs = {"dk", "dv"},
          .units = fused_units,
          .unit_scratch_elements = scratch_elements,
          .mpfi_unit_scratch_elements = mpfi_scratch_elements,
          .reads = reads,
          .streamed_at_mpfi = {"q", "k", "v", "do"},
          .first_pass = true,
          .apriori_bounds = backward_bounds};
}

OracleOp attention_decode() {
  return {.query_row_count = decode_query_rows,
          .key_row_count = no_key_rows,
          .key_outputs = {},
          .units = decode_units,
          .unit_scratch_elements = scratch_elements,
          .mpfi_unit_scratch_elements = mpfi_scratch_elements,
          .reads = reads,
          .streamed_at_mpfi = {"q", "k", "v"},
          .first_pass = true,
          .apriori_bounds = decode_bounds,
          .bounds_widen_own_rows = true};
}

}  // namespace ops
}  // namespace moacert::oracle
