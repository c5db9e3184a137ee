// The a priori bounds of docs/bounds.md, evaluated for one case. The
// condition quantities are computed in double from the DNF's intermediate
// values; their own relative error (below 2^-40 for any case moacert
// generates) is covered by the final safety factor kEvalSlack.
#include "oracle/bounds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/dnf/attention.hpp"
#include "reference/dnf/block.hpp"
#include "reference/dnf/norm_mlp.hpp"

namespace moacert::oracle {
namespace {

using moa::extent_t;
using moa::Index;
using moa::Shape;
using Mat = moa::Tensor<double>;

constexpr double kEvalSlack = 1 + 0x1p-20;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A bound times a magnitude (both >= 0), where an upstream stage's bound
// can be infinite (the block: an RMSNorm whose sum of squares overflows):
// infinite when either factor is, so that an unbounded error stays
// unbounded downstream. IEEE's inf·0 is NaN, which a later maximum drops
// (a finite bound where nothing is bounded) or which ends as "bound -nan".
// Where neither is infinite, the plain product: the bounds do not change.
double bound_times(double bound, double magnitude) {
  return std::isinf(bound) || std::isinf(magnitude) ? kInf : bound * magnitude;
}

// The rounding constants of a format pair: accumulation (f64 for f64, f32
// otherwise) and storage.
struct Units {
  double ua, us;        // unit roundoffs
  double eta_a, eta_s;  // smallest subnormals (underflow of one product)
  double eps_exp, eps_log;
  double gamma(double n) const { return n * ua / (1 - n * ua); }
};

Units units(Format f, const BoundConstants& k) {
  const bool f64 = f == Format::f64;
  const FormatInfo s = info(f);
  Units u;
  u.ua = f64 ? 0x1p-53 : 0x1p-24;
  u.us = std::ldexp(1.0, -s.precision);
  u.eta_a = f64 ? std::ldexp(1.0, -1074) : 0x1p-149;
  u.eta_s = std::ldexp(1.0, s.emin - s.precision + 1);
  u.eps_exp = k.exp_error_u * u.ua;
  u.eps_log = k.log_error_u * u.ua;
  return u;
}

// Relative error factors are carried as θ (the factor is 1 + θ) and
// composed without forming 1 + θ, which rounds to 1 for θ near u of f64.
// (1 + a)(1 + b) - 1:
double compose(double a, double b) {
  return a + b + a * b;
}
// (1 + x)^k - 1:
double power(double x, double k) {
  return std::expm1(k * std::log1p(x));
}

// A tensor's logical values as a row-major double tensor (exact).
Mat widen(const AnyTensor& t) {
  Mat m(t.shape());
  for (const Index& i : moa::iota(t.shape())) m.view()(i) = t.get(i);
  return m;
}

std::vector<double> rav(const Mat& m) {
  return m.storage();
}

// ---- attention ------------------------------------------------------------

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

// A row-major double tensor's elements from `start` on: a row of it.
const double* row_of(const Mat& m, const Index& start) {
  return m.storage().data() + moa::row_major_offset(m.shape(), start);
}
double* row_of(Mat& m, const Index& start) {
  return m.storage().data() + moa::row_major_offset(m.shape(), start);
}

// One query row's scratch, M keys by D: kept per thread across rows.
struct ForwardRowScratch {
  std::vector<double> s, a, p, delta, e_row, f_row;  // (M)
  std::vector<double> c, f, o, vmax, ev;             // (D)
  ForwardRowScratch(extent_t M, extent_t D)
      : s(M), a(M), p(M), delta(M), e_row(M), f_row(M), c(D), f(D), o(D), vmax(D), ev(D) {}
};

// The forward bound of one query row (b, h, i) that sees the keys 0 .. n-1
// (a prefix: causal and decode's lens cut it), written into r. Every sum
// runs over j ascending from zero, as the definition's loops: the row's
// bounds do not depend on which other rows are bounded, nor on threads.
void attention_forward_row(const Mat& q, const Mat& k, const Mat& v, double scale, extent_t b,
                           extent_t h, extent_t g, extent_t i, extent_t n, const Units& u,
                           const AttentionInputErrors& in, ForwardRowScratch& w, ForwardBounds& r) {
  const extent_t D = q.shape()[3];
  const double* qi = row_of(q, {b, h, i, 0});  // (D)
  const double* kg = row_of(k, {b, g, 0, 0});  // (M, D)
  const double* vg = row_of(v, {b, g, 0, 0});  // (M, D)
  const double* eqi = in.q ? row_of(*in.q, {b, h, i, 0}) : nullptr;
  const double* ekg = in.k ? row_of(*in.k, {b, g, 0, 0}) : nullptr;
  const double* evg = in.v ? row_of(*in.v, {b, g, 0, 0}) : nullptr;
  if (n == 0) {  // no visible key: exact O = 0, LSE = -inf; must match
    r.lse_val.view()(b, h, i) = -kInf;
    return;
  }
  // scores, their magnitudes a_ij, and the score error bound δ_ij
  double smax = -kInf, dmax = 0;
  for (extent_t j = 0; j < n; ++j) {
    const double* kj = kg + j * D;
    double dot = 0, mag = 0, extra = 0;
    for (extent_t d = 0; d < D; ++d) {
      const double qv = qi[d], kv = kj[d];
      dot += qv * kv;
      mag += std::fabs(qv * kv);
    }
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
    w.delta[j] = u.gamma(double(D + 3)) * (w.a[j] + scale * extra) + scale * extra +
                 double(D + 1) * u.eta_a * std::max(1.0, scale);
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
  for (extent_t j = 0; j < n; ++j) {
    w.e_row[j] = std::expm1(u.ua * (smax - w.s[j] + 2 * dmax) + (nn + 1) * std::log1p(u.eps_exp) +
                            (nn + 1) * std::log1p(u.ua));
    w.f_row[j] = compose(w.e_row[j], u.gamma(nn + 2));
  }
  double L = 0;
  for (extent_t j = 0; j < n; ++j) {
    const double P = w.p[j] / l, e = w.e_row[j];
    L += P * (e + u.gamma(nn) * (1 + e));
  }
  L = (1 + Delta) * L + nn * u.eta_a;
  const double lse = smax + std::log(l);
  r.lse_val.view()(b, h, i) = lse;
  const double lse_acc = dmax + L / (1 - L) + u.eps_log * std::log(nn) * (1 + u.ua) +
                         4 * u.ua * (std::fabs(lse) + dmax + 1);
  // A score bound so large that e^{2 dmax} overflows (an upstream stage's
  // errors, or an infinite one) leaves the row unbounded; the formulas
  // would give NaN (Delta·0, L/(1 - L) at L = inf).
  const bool unbounded = std::isinf(Delta);
  r.lse.view()(b, h, i) =
      unbounded ? kInf : kEvalSlack * (lse_acc * (1 + u.us) + u.us * std::fabs(lse) + u.eta_s / 2);
  // The value sums of every d at once, each over j ascending (V row by row).
  std::fill(w.c.begin(), w.c.end(), 0.0);
  std::fill(w.f.begin(), w.f.end(), 0.0);
  std::fill(w.o.begin(), w.o.end(), 0.0);
  std::fill(w.vmax.begin(), w.vmax.end(), 0.0);
  std::fill(w.ev.begin(), w.ev.end(), 0.0);
  for (extent_t j = 0; j < n; ++j) {
    const double P = w.p[j] / l, F = w.f_row[j];
    const double* vj = vg + j * D;
    for (extent_t d = 0; d < D; ++d) {
      const double vv = vj[d];
      w.c[d] += P * std::fabs(vv);
      w.f[d] += P * std::fabs(vv) * F;
      w.o[d] += P * vv;
      w.vmax[d] = std::max(w.vmax[d], std::fabs(vv));
    }
    if (evg)
      for (extent_t d = 0; d < D; ++d) w.ev[d] += bound_times(evg[j * D + d], P);
  }
  double* o_val = row_of(r.o_val, {b, h, i, 0});
  double* o_bound = row_of(r.o, {b, h, i, 0});
  for (extent_t d = 0; d < D; ++d) {
    const double c = w.c[d], f = w.f[d], o = w.o[d];
    const double acc = Delta * c + ((1 + Delta) * f + L * (std::fabs(o) + Delta * c)) / (1 - L) +
                       (2 * nn * w.vmax[d] + nn + 2) * u.eta_a / (1 - L) +
                       w.ev[d] * (1 + Delta) * (1 + L) / (1 - L);
    o_val[d] = o;
    o_bound[d] = unbounded || std::isinf(w.ev[d])
                     ? kInf
                     : kEvalSlack * (acc * (1 + u.us) + u.us * std::fabs(o) + u.eta_s / 2);
  }
}

// The forward bound of docs/bounds.md#attention-forward for every row, the
// rows spread over threads. `lens` (decode) limits the keys of batch b.
// `wanted` (the sampled oracle's query rows, flat (b·H + h)·N + i) limits
// the rows bounded; the others are left 0.
ForwardBounds attention_forward_bounds(const Mat& q, const Mat& k, const Mat& v, double scale,
                                       bool causal, const std::vector<extent_t>* lens,
                                       const Units& u, const AttentionInputErrors& in = {},
                                       const std::vector<std::uint8_t>* wanted = nullptr) {
  const Shape qs = q.shape(), ks = k.shape();
  const extent_t B = qs[0], H = qs[1], N = qs[2], D = qs[3], Hkv = ks[1], M = ks[2];
  const extent_t group = H / Hkv;
  ForwardBounds r{Mat(Shape{B, H, N, D}), Mat(Shape{B, H, N}), Mat(Shape{B, H, N, D}),
                  Mat(Shape{B, H, N})};
  std::vector<extent_t> rows;  // flat (b·H + h)·N + i
  for (extent_t x = 0; x < B * H * N; ++x)
    if (!wanted || (*wanted)[std::size_t(x)]) rows.push_back(x);
  const auto count = static_cast<std::int64_t>(rows.size());
#pragma omp parallel
  {
    ForwardRowScratch w(M, D);
#pragma omp for schedule(dynamic, 4)
    for (std::int64_t t = 0; t < count; ++t) {
      const extent_t x = rows[std::size_t(t)];
      const extent_t b = x / (H * N), h = x / N % H, i = x % N;
      const extent_t len = lens ? (*lens)[std::size_t(b)] : M;
      attention_forward_row(q, k, v, scale, b, h, h / group, i,
                            dnf::visible_keys(causal, i, N, M, len), u, in, w, r);
    }
  }
  return r;
}

struct BackwardBounds {
  Mat dq, dk, dv;
};

// docs/bounds.md#attention-backward. eO and eL bound the errors of the o and
// lse the kernel uses (the given, rounded ones for attention.bwd; its own
// for attention.fwdbwd).
BackwardBounds attention_backward_bounds(const Mat& q, const Mat& k, const Mat& v, const Mat& dout,
                                         double scale, bool causal, const ForwardBounds& fwd,
                                         const Mat& eO, const Mat& eL, const Units& u) {
  const Shape qs = q.shape(), ks = k.shape();
  const extent_t B = qs[0], H = qs[1], N = qs[2], D = qs[3], Hkv = ks[1], M = ks[2];
  const extent_t group = H / Hkv;
  BackwardBounds r{Mat(Shape{B, H, N, D}), Mat(Shape{B, Hkv, M, D}), Mat(Shape{B, Hkv, M, D})};
  Mat dq_val(Shape{B, H, N, D}), dk_val(Shape{B, Hkv, M, D}), dv_val(Shape{B, Hkv, M, D});
  const double nq = double(group * N);  // terms of each dK, dV sum
  std::vector<double> s_row(static_cast<std::size_t>(M)), delta_row(s_row.size()),
      dp_row(s_row.size()), b_row(s_row.size()), pi_row(s_row.size());
  for (extent_t b = 0; b < B; ++b) {
    for (extent_t h = 0; h < H; ++h) {
      const extent_t g = h / group;
      for (extent_t i = 0; i < N; ++i) {
        const double lse = fwd.lse_val.view()(b, h, i);
        if (std::isinf(lse)) continue;  // no visible key: nothing flows
        extent_t n = 0;
        for (extent_t j = 0; j < M; ++j) n += dnf::visible(causal, i, j, N, M);
        double Drow = 0, absDO = 0, eD = 0;
        for (extent_t d = 0; d < D; ++d) {
          const double o = fwd.o_val.view()(b, h, i, d), dov = dout.view()(b, h, i, d);
          Drow += dov * o;
          absDO += std::fabs(dov);
          eD += std::fabs(dov) * (u.gamma(double(D)) * (std::fabs(o) + eO.view()(b, h, i, d)) +
                                  eO.view()(b, h, i, d));
        }
        eD += double(D) * u.eta_a;
        const double el = eL.view()(b, h, i);
        // The row's scores s_ij and their error bounds δ_ij (as in the forward).
        for (extent_t j = 0; j < M; ++j) {
          if (!dnf::visible(causal, i, j, N, M)) continue;
          double dot = 0, mag = 0, dp = 0, bij = 0;
          for (extent_t d = 0; d < D; ++d) {
            const double qv = q.view()(b, h, i, d), kv = k.view()(b, g, j, d);
            dot += qv * kv;
            mag += std::fabs(qv * kv);
            dp += dout.view()(b, h, i, d) * v.view()(b, g, j, d);
            bij += std::fabs(dout.view()(b, h, i, d) * v.view()(b, g, j, d));
          }
          s_row[j] = scale * dot;
          dp_row[j] = dp;
          b_row[j] = bij;
          delta_row[j] =
              u.gamma(double(D + 3)) * scale * mag + double(D + 1) * u.eta_a * std::max(1.0, scale);
        }
        // ρ_ij: relative error of exp(ŝ_ij - lse_i) but for the factor that is
        // common to the row (e^{LSE(ŝ) - lse}); Λ_i: that of its row sum l̂_i.
        double dmax = 0;
        for (extent_t j = 0; j < M; ++j)
          if (dnf::visible(causal, i, j, N, M)) dmax = std::max(dmax, delta_row[j]);
        const double Delta = std::expm1(2 * dmax);
        auto rho = [&](extent_t j) {
          return std::expm1(u.ua * (std::fabs(s_row[j] - lse) + delta_row[j] + el) +
                            std::log1p(u.eps_exp) + 3 * std::log1p(u.ua));
        };
        double Lambda = 0;
        for (extent_t j = 0; j < M; ++j)
          if (dnf::visible(causal, i, j, N, M))
            Lambda += std::exp(s_row[j] - lse) * compose(rho(j), u.gamma(double(n)));
        Lambda = (1 + Delta) * Lambda + double(n) * u.eta_a * std::exp(dmax + el);
        // Π_ij: relative error of the recomputed P̂_ij, either exp(ŝ_ij -
        // lse_i) or that divided by its row sum l̂_i (times 1 / l̂_i: two
        // more roundings), whichever is larger.
        for (extent_t j = 0; j < M; ++j) {
          if (!dnf::visible(causal, i, j, N, M)) continue;
          const double x = std::fabs(s_row[j] - lse), delta = delta_row[j];
          const double Pi_given = std::expm1(delta + el + u.ua * (x + delta + el) +
                                             std::log1p(u.eps_exp) + 3 * std::log1p(u.ua));
          const double Pi_norm =
              Lambda < 1 ? (compose(compose(Delta, rho(j)), power(u.ua, 2)) + Lambda) / (1 - Lambda)
                         : kInf;
          pi_row[j] = std::max(Pi_given, std::isfinite(Pi_norm) ? Pi_norm : 1e300);
        }
        // D̂_i either from the given o (above) or as Σ_j P̂_ij dP̂_ij (autograd's
        // rowsum(P ∘ dP), scaled by 1 / l̂_i after the sum): each term errs by
        // its P̂'s Π and dP̂'s γ_D b_ij, the sum, product and scaling by
        // γ_{n+2}; terms and weights may underflow.
        double eD_sum = 0, dp_max = 0;
        for (extent_t j = 0; j < M; ++j) {
          if (!dnf::visible(causal, i, j, N, M)) continue;
          const double w = compose(pi_row[j], u.gamma(double(n + 2)));
          eD_sum += std::exp(s_row[j] - lse) *
                    (w * std::fabs(dp_row[j]) + (1 + w) * u.gamma(double(D)) * b_row[j]);
          dp_max = std::max(dp_max, std::fabs(dp_row[j]) + u.gamma(double(D)) * b_row[j]);
        }
        eD = std::max(eD, eD_sum + double(2 * n + D) * u.eta_a * (1 + dp_max));
        for (extent_t j = 0; j < M; ++j) {
          if (!dnf::visible(causal, i, j, N, M)) continue;
          const double dp = dp_row[j], bij = b_row[j];
          const double s = s_row[j];
          const double P = std::exp(s - lse);
          const double Pi = pi_row[j];
          const double ds = P * (dp - Drow);
          // P̂ may also underflow (x beyond the exponent range): an absolute
          // η_a next to its relative Π, carried through dS and its products.
          const double two = compose(Pi, power(u.ua, 2));
          const double sigma =
              P * (two * std::fabs(dp - Drow) +
                   (1 + two) * (u.gamma(double(D)) * bij + eD + double(D) * u.eta_a)) +
              u.eta_a * (2 + std::fabs(dp - Drow) + u.gamma(double(D)) * bij + eD);
          const double gq = u.gamma(double(n + 2)), gk = u.gamma(nq + 2), gv = u.gamma(nq + 1);
          for (extent_t d = 0; d < D; ++d) {
            const double kv = k.view()(b, g, j, d), qv = q.view()(b, h, i, d),
                         dov = dout.view()(b, h, i, d);
            dq_val.view()(b, h, i, d) += scale * ds * kv;
            dk_val.view()(b, g, j, d) += scale * ds * qv;
            dv_val.view()(b, g, j, d) += P * dov;
            // σ·dS may underflow before its product with K or Q: that
            // absolute η_a is scaled by |K| or |Q| (large keys or queries
            // beside a vanishing weight), the product's own below.
            r.dq.view()(b, h, i, d) +=
                (scale * (std::fabs(ds) * gq + sigma * (1 + gq)) + u.eta_a) * std::fabs(kv);
            r.dk.view()(b, g, j, d) +=
                (scale * (std::fabs(ds) * gk + sigma * (1 + gk)) + u.eta_a) * std::fabs(qv);
            r.dv.view()(b, g, j, d) +=
                P * std::fabs(dov) * compose(Pi, gv) + u.eta_a * (1 + std::fabs(dov));
          }
        }
      }
    }
  }
  // The scale's own product, the storage rounding, the slack, and two
  // underflows per term (σ·dS, then its product with K, Q or dO).
  auto finish = [&](Mat& bound, const Mat& val, double terms) {
    for (const Index& i : moa::iota(bound.shape())) {
      const double e = bound.view()(i) * (1 + u.ua) * (1 + u.ua) + 2 * terms * u.eta_a;
      bound.view()(i) =
          kEvalSlack * (e * (1 + u.us) + u.us * std::fabs(val.view()(i)) + u.eta_s / 2);
    }
  };
  finish(r.dq, dq_val, double(M));
  finish(r.dk, dk_val, nq);
  finish(r.dv, dv_val, nq);
  return r;
}

// ---- rmsnorm and the MLP ----------------------------------------------------

// docs/bounds.md#rmsnorm, with an optional bound ex on errors already in x
// (first order in ex, doubled: see the block).
Mat rmsnorm_bounds(const Mat& x, const Mat& w, double eps, const Units& u, Mat* y_val,
                   const Mat* ex = nullptr) {
  const extent_t T = x.shape()[0], D = x.shape()[1];
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
    const double rho =
        (u.gamma(double(D + 2)) * ss / double(D) + u.eta_a * double(D) + u.ua * eps) / ms;
    const double rel = compose(rho, power(u.ua, 6));
    for (extent_t d = 0; d < D; ++d) {
      const double xv = x.view()(t, d), wv = w.view()(d), y = xv / rms * wv;
      double e = std::fabs(y) * rel + 2 * u.eta_a * (1 + std::fabs(wv));
      if (ex)
        e += bound_times(ex->view()(t, d) + bound_times(sx, std::fabs(xv)) / (double(D) * ms),
                         2 * std::fabs(wv) / rms);
      r.view()(t, d) = kEvalSlack * (e * (1 + u.us) + u.us * std::fabs(y) + u.eta_s / 2);
      if (y_val) y_val->view()(t, d) = y;
    }
  }
  return r;
}

// C = A B with a bound on C's error given bounds ea (and eb, optional) on
// A's (B's) errors: γ_k Σ|A||B| + Σ ea|B| (+ Σ |A| eb). `rows` (optional)
// limits the rows of C bounded; the others are left 0. Each row's sums run
// over p ascending, B read row by row.
Mat gemm_bounds(const Mat& a, const Mat& bmat, const Mat* ea, const Units& u, Mat* c_val,
                bool store = true, const std::vector<std::uint8_t>* rows = nullptr) {
  const extent_t m = a.shape()[0], k = a.shape()[1], n = bmat.shape()[1];
  Mat r(Shape{m, n});
  if (c_val) *c_val = Mat(Shape{m, n});
  const double gk = u.gamma(double(k));
  std::vector<double> abs(n), val(n), prop(n);  // (n)
  for (extent_t i = 0; i < m; ++i) {
    if (rows && !(*rows)[std::size_t(i)]) continue;
    std::fill(abs.begin(), abs.end(), 0.0);
    std::fill(val.begin(), val.end(), 0.0);
    std::fill(prop.begin(), prop.end(), 0.0);
    for (extent_t p = 0; p < k; ++p) {
      const double av = a.view()(i, p), eav = ea ? ea->view()(i, p) : 0;
      const double* bp = row_of(bmat, {p, 0});  // (n)
      for (extent_t j = 0; j < n; ++j) {
        const double bv = bp[j];
        val[j] += av * bv;
        abs[j] += std::fabs(av * bv);
      }
      if (ea)
        for (extent_t j = 0; j < n; ++j) prop[j] += bound_times(eav, std::fabs(bp[j]));
    }
    double* ri = row_of(r, {i, 0});
    for (extent_t j = 0; j < n; ++j) {
      double e = gk * (abs[j] + prop[j]) + prop[j] + double(k) * u.eta_a;
      if (store) e = e * (1 + u.us) + u.us * std::fabs(val[j]) + u.eta_s / 2;
      ri[j] = kEvalSlack * e;
    }
    if (c_val) std::copy(val.begin(), val.end(), row_of(*c_val, {i, 0}));
  }
  return r;
}

// docs/bounds.md#swiglu-mlp. ex: errors already in x (the block), or null;
// rows: the rows t bounded (the sampled oracle's), or null for all.
Mat mlp_bounds(const Mat& x, const Mat& w1, const Mat& w3, const Mat& w2, const Units& u,
               Mat* y_val, const Mat* ex = nullptr,
               const std::vector<std::uint8_t>* rows = nullptr) {
  const extent_t T = x.shape()[0], F = w1.shape()[1];
  Mat g, up;
  const Mat eg = gemm_bounds(x, w1, ex, u, &g, /*store=*/false, rows);
  const Mat eu = gemm_bounds(x, w3, ex, u, &up, /*store=*/false, rows);
  Mat hv(Shape{T, F}), eh(Shape{T, F});
  const double eps_silu = compose(u.eps_exp, power(u.ua, 3));
  const double overflow = std::log(u.ua == 0x1p-53 ? 0x1p1023 : 0x1p127) - 1;  // exp(-z) overflows
  for (extent_t t = 0; t < T; ++t) {
    if (rows && !(*rows)[std::size_t(t)]) continue;
    for (extent_t f = 0; f < F; ++f) {
      const double z = g.view()(t, f), uv = up.view()(t, f);
      const double s = dnf::silu(z);
      const double e_g = eg.view()(t, f), e_u = eu.view()(t, f);
      const double s_hat = std::fabs(s) + 1.1 * e_g;  // |silu'| <= 1.1
      const double uv_hat = std::fabs(uv) + e_u;
      double e = bound_times(1.1 * e_g, uv_hat) + bound_times(e_u, std::fabs(s)) +
                 bound_times(s_hat, uv_hat) * compose(eps_silu, u.ua) + u.eta_a;
      if (z - e_g < -overflow) e += bound_times(s_hat, uv_hat);  // silu may flush to 0
      hv.view()(t, f) = s * uv;
      eh.view()(t, f) = e;
    }
  }
  return gemm_bounds(hv, w2, &eh, u, y_val, /*store=*/true, rows);
}

}  // namespace

std::vector<std::vector<double>> apriori_bounds(const Case& c, const BoundConstants& k,
                                                const Selection* selection) {
  const Problem& p = c.problem;
  // The forward of attention.fwd and decode, and mlp.swiglu, bound the
  // selected rows only; the backward's key rows need every query row's
  // forward.
  std::vector<std::uint8_t> wanted;
  if (selection) {
    wanted.assign(std::size_t(query_row_count(p)), 0);
    for (extent_t r : selection->query_rows) wanted[std::size_t(r)] = 1;
  }
  const std::vector<std::uint8_t>* only = selection ? &wanted : nullptr;
  const Units u = units(p.format, k);
  std::vector<Mat> x;
  for (std::size_t i = 0; i < c.inputs.size(); ++i)
    x.push_back(is_index_input(p, int(i)) ? Mat() : widen(c.inputs[i]));
  const double scale = p.scale();
  switch (p.op) {
    case Op::attention_fwd: {
      ForwardBounds f =
          attention_forward_bounds(x[0], x[1], x[2], scale, p.causal(), nullptr, u, {}, only);
      return {rav(f.o), rav(f.lse)};
    }
    case Op::attention_decode: {
      std::vector<extent_t> lens;
      for (extent_t b = 0; b < p.dims.B; ++b) lens.push_back(extent_t(c.inputs[3].get({b})));
      ForwardBounds f =
          attention_forward_bounds(x[0], x[1], x[2], scale, false, &lens, u, {}, only);
      return {rav(f.o), rav(f.lse)};
    }
    case Op::attention_bwd: {
      const ForwardBounds f =
          attention_forward_bounds(x[0], x[1], x[2], scale, p.causal(), nullptr, u);
      // The kernel may use the given o and lse (correctly rounded) or
      // recompute them (as the DNF does): the forward's bounds cover both.
      const BackwardBounds bb =
          attention_backward_bounds(x[0], x[1], x[2], x[5], scale, p.causal(), f, f.o, f.lse, u);
      return {rav(bb.dq), rav(bb.dk), rav(bb.dv)};
    }
    case Op::attention_fwdbwd: {
      const ForwardBounds f =
          attention_forward_bounds(x[0], x[1], x[2], scale, p.causal(), nullptr, u);
      const BackwardBounds bb =
          attention_backward_bounds(x[0], x[1], x[2], x[3], scale, p.causal(), f, f.o, f.lse, u);
      return {rav(f.o), rav(f.lse), rav(bb.dq), rav(bb.dk), rav(bb.dv)};
    }
    case Op::rmsnorm:
      return {rav(rmsnorm_bounds(x[0], x[1], p.params.eps, u, nullptr))};
    case Op::mlp_swiglu:
      return {rav(mlp_bounds(x[0], x[1], x[2], x[3], u, nullptr, nullptr, only))};
    case Op::block: {
      // docs/bounds.md#block: each stage's bound, with the errors of its
      // inputs propagated to first order (doubled for the second).
      const Dims& d = p.dims;
      const extent_t rows = d.B * d.N;
      Mat xr(Shape{rows, d.Dm});
      for (const Index& i : moa::iota(x[0].shape()))
        xr.view()(i[0] * d.N + i[1], i[2]) = x[0].view()(i);
      Mat xn, q, kk, vv;
      const Mat exn = rmsnorm_bounds(xr, x[1], p.params.eps, u, &xn);
      const Mat eq = gemm_bounds(xn, x[2], &exn, u, &q), ek = gemm_bounds(xn, x[3], &exn, u, &kk),
                ev = gemm_bounds(xn, x[4], &exn, u, &vv);
      auto heads = [&](const Mat& flat, extent_t nh) {  // (B·N, nh·D) -> (B, nh, N, D)
        Mat out(Shape{d.B, nh, d.N, d.D});
        for (const Index& i : moa::iota(out.shape()))
          out.view()(i) = flat.view()(i[0] * d.N + i[2], i[1] * d.D + i[3]);
        return out;
      };
      const Mat qh = heads(q, d.H), kh = heads(kk, d.Hkv), vh = heads(vv, d.Hkv);
      const Mat eqh = heads(eq, d.H), ekh = heads(ek, d.Hkv), evh = heads(ev, d.Hkv);
      const ForwardBounds f = attention_forward_bounds(
          qh, kh, vh, dnf::block_scale(d.D), /*causal=*/true, nullptr, u, {&eqh, &ekh, &evh});
      Mat o(Shape{rows, d.H * d.D}), eo(Shape{rows, d.H * d.D});
      for (const Index& i : moa::iota(f.o.shape())) {
        o.view()(i[0] * d.N + i[2], i[1] * d.D + i[3]) = f.o_val.view()(i);
        eo.view()(i[0] * d.N + i[2], i[1] * d.D + i[3]) = 2 * f.o.view()(i);
      }
      Mat attn;
      const Mat ea = gemm_bounds(o, x[5], &eo, u, &attn);
      Mat hres(Shape{rows, d.Dm}), eh(Shape{rows, d.Dm});
      for (const Index& i : moa::iota(hres.shape())) {
        hres.view()(i) = xr.view()(i) + attn.view()(i);
        eh.view()(i) = ea.view()(i) * (1 + u.ua) + u.ua * std::fabs(hres.view()(i));
      }
      Mat hn;
      const Mat ehn = rmsnorm_bounds(hres, x[6], p.params.eps, u, &hn, &eh);
      Mat m;
      const Mat em = mlp_bounds(hn, x[7], x[8], x[9], u, &m, &ehn);
      std::vector<double> out;
      for (const Index& i : moa::iota(hres.shape())) {
        const double y = hres.view()(i) + m.view()(i);
        const double e = (eh.view()(i) + em.view()(i)) * (1 + u.ua) + u.ua * std::fabs(y);
        out.push_back(kEvalSlack * (e * (1 + u.us) + u.us * std::fabs(y) + u.eta_s / 2));
      }
      return {out};
    }
  }
  return {};
}

}  // namespace moacert::oracle
