#include "properties/regimes.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <tuple>

#include "properties/block_in_double.hpp"
#include "properties/case_gen.hpp"
#include "properties/ops/table.hpp"
#include "properties/regime_parts.hpp"
#include "reference/dnf/block.hpp"
#include "reference/named.hpp"

namespace moacert::properties {

using moa::extent_t;

std::string_view name(Regime r) {
  switch (r) {
    case Regime::exp_overflow:
      return "softmax.exp-overflow";
    case Regime::underflowing_tile:
      return "softmax.underflowing-tile";
    case Regime::no_key_row:
      return "softmax.no-key-row";
    case Regime::tie:
      return "softmax.tie";
    case Regime::dominant_key:
      return "softmax.dominant-key";
    case Regime::long_flat_row:
      return "softmax.long-flat-row";
    case Regime::silu_exp_z_overflows:
      return "silu.exp(z)-overflows";
    case Regime::silu_exp_minus_z_overflows:
      return "silu.exp(-z)-overflows";
    case Regime::silu_exp_z_underflows:
      return "silu.exp(z)-underflows";
    case Regime::silu_exp_minus_z_underflows:
      return "silu.exp(-z)-underflows";
    case Regime::silu_near_zero:
      return "silu.near-zero";
    case Regime::sum_of_squares_overflows:
      return "rmsnorm.sum-of-squares-overflows";
    case Regime::sum_of_squares_underflows:
      return "rmsnorm.sum-of-squares-underflows";
    case Regime::eps_dominates:
      return "rmsnorm.eps-dominates";
    case Regime::cancellation:
      return "gemm.cancellation";
    case Regime::down_cancellation:
      return "gemm.down-cancellation";
  }
  return "?";
}

bool held_back(Regime r, Format f) {
  return r == Regime::sum_of_squares_overflows && f != Format::f16;
}

const std::vector<Regime>& declared_regimes(Op op) {
  return property_op(op).regimes;
}

FormatLimits limits(Format f) {
  const FormatInfo fi = info(f);
  FormatLimits l;
  l.max_finite = std::ldexp(2 - std::ldexp(1.0, 1 - fi.precision), fi.emax);
  l.min_normal = std::ldexp(1.0, fi.emin);
  l.min_subnormal = std::ldexp(1.0, fi.emin - fi.precision + 1);
  l.unit_roundoff = std::ldexp(1.0, -fi.precision);
  l.ln_max = std::log(l.max_finite);
  // Below half the smallest subnormal, round to nearest gives 0 (at half,
  // the tie goes to the even 0 too).
  l.ln_zero = double(fi.emin - fi.precision) * std::log(2.0);
  return l;
}

std::vector<double> dense(const AnyTensor& t) {
  std::vector<double> out;
  out.reserve(std::size_t(t.size()));
  for (const moa::Index& i : moa::iota(t.shape())) out.push_back(t.get(i));
  return out;
}

namespace {

// The rows of a (rows, width) row-major block at `base` to classify: every
// row when there are at most kClassifiedRows, else the first, the last, the
// four of largest norm (where large logits and sums are) and evenly spaced
// others.
std::vector<extent_t> classified_rows(const double* base, extent_t rows, extent_t width) {
  std::vector<extent_t> out(std::size_t(std::min<extent_t>(rows, kClassifiedRows)));
  if (rows <= kClassifiedRows) {
    std::iota(out.begin(), out.end(), extent_t{0});
    return out;
  }
  std::vector<std::pair<double, extent_t>> norms;
  for (extent_t r = 0; r < rows; ++r) {
    double n = 0;
    for (extent_t d = 0; d < width; ++d) n += base[r * width + d] * base[r * width + d];
    norms.push_back({n, r});
  }
  std::partial_sort(norms.begin(), norms.begin() + 4, norms.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  out = {0, rows - 1};
  for (int k = 0; k < 4; ++k) out.push_back(norms[std::size_t(k)].second);
  const extent_t spaced = kClassifiedRows - extent_t(out.size());
  for (extent_t k = 1; k <= spaced; ++k) out.push_back(k * (rows - 1) / (spaced + 1));
  return out;
}

double dot(const double* a, const double* b, extent_t n) {
  double s = 0;
  for (extent_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

// One softmax row: its scaled logits over the `seen` visible keys.
void classify_softmax_row(const std::vector<double>& s, const FormatLimits& l, Regimes& out) {
  const double m = *std::max_element(s.begin(), s.end());
  if (m > l.ln_max) out.set(std::size_t(Regime::exp_overflow));
  const auto at_max = std::count(s.begin(), s.end(), m);
  if (at_max >= 2) out.set(std::size_t(Regime::tie));
  if (s.size() >= 2 && at_max == 1) {
    double rest = 0;  // the weight of every key but the maximum's, relative to it
    for (double x : s)
      if (x != m) rest += std::exp(x - m);
    if (rest < l.unit_roundoff) out.set(std::size_t(Regime::dominant_key));
  }
  if (double(s.size()) >= kFlatRowWeight) {  // no shorter row's weights can sum that far
    double weight = 0;                       // l, relative to the maximum's weight 1
    for (double x : s) weight += std::exp(x - m);
    if (weight >= kFlatRowWeight) out.set(std::size_t(Regime::long_flat_row));
  }
  const extent_t t = kUnderflowTile, seen = extent_t(s.size());
  for (extent_t a = 0; a + t <= seen && !out.test(std::size_t(Regime::underflowing_tile)); a += t)
    if (std::all_of(s.begin() + a, s.begin() + a + t, [&](double x) { return x - m < l.ln_zero; }))
      out.set(std::size_t(Regime::underflowing_tile));
}

}  // namespace

RowsAsDouble rows_as_double(const AnyTensor& t) {
  auto buffer = std::make_shared<std::vector<double>>();
  return [&t, buffer](extent_t first, extent_t count) {
    buffer->resize(std::size_t(count * t.shape()[t.shape().rank() - 1]));
    t.get_rows(first, count, buffer->data());
    return static_cast<const double*>(buffer->data());
  };
}

RowsAsDouble rows_as_double(const std::vector<double>& row_major, extent_t width) {
  return [&row_major, width](extent_t first, extent_t) { return row_major.data() + first * width; };
}

void classify_softmax(const RowsAsDouble& q, const RowsAsDouble& k, const Dims& dm,
                      causal::Mask causal, double scale, const std::vector<double>& lens,
                      const FormatLimits& l, Regimes& out) {
  const extent_t B = dm.B, H = dm.H, Hkv = dm.Hkv, N = dm.N, M = dm.M, D = dm.D;
  const extent_t group = H / Hkv;
  std::vector<double> s;
  for (extent_t b = 0; b < B; ++b) {
    const extent_t len = lens.empty() ? M : extent_t(lens[std::size_t(b)]);
    const double* kg = nullptr;
    for (extent_t h = 0; h < H; ++h) {
      // The group's heads in turn: its keys converted once for them all.
      if (h % group == 0) kg = k((b * Hkv + h / group) * M, M);  // (M, D)
      const double* qh = q((b * H + h) * N, N);                  // (N, D)
      // Rows without a key depend on the shape only: check them all.
      if (dnf::visible_keys(causal, 0, N, M, len) == 0) out.set(std::size_t(Regime::no_key_row));
      for (extent_t i : classified_rows(qh, N, D)) {
        const extent_t seen = dnf::visible_keys(causal, i, N, M, len);
        if (seen == 0) continue;
        s.assign(std::size_t(seen), 0);
        for (extent_t j = 0; j < seen; ++j)
          s[std::size_t(j)] = scale * dot(qh + i * D, kg + j * D, D);
        classify_softmax_row(s, l, out);
      }
    }
  }
}

void classify_sums_of_squares(const double* x, extent_t rows, extent_t D, double eps,
                              const FormatLimits& l, Regimes& out) {
  for (extent_t t = 0; t < rows; ++t) {
    const double sum_sq = dot(x + t * D, x + t * D, D);
    if (sum_sq > l.max_finite) out.set(std::size_t(Regime::sum_of_squares_overflows));
    if (sum_sq < l.min_normal) out.set(std::size_t(Regime::sum_of_squares_underflows));
    if (eps > sum_sq / double(D)) out.set(std::size_t(Regime::eps_dominates));
  }
}

void classify_gates(const double* x, const MatrixRows& w1, const MatrixRows& w3, extent_t T,
                    extent_t Dm, extent_t F, Format f, const FormatLimits& l, Regimes& out,
                    const MatrixRows* w2) {
  // Half the precision lost: the a priori bound grows with the condition
  // number, and past 2^ceil(p/2) it exceeds sqrt(u) (docs/bounds.md#gemm).
  const double kappa = std::ldexp(1.0, (info(f).precision + 1) / 2);
  const std::vector<extent_t> rows = classified_rows(x, T, Dm);
  const std::size_t R = rows.size();
  if (R == 0) return;  // no row to classify: no weight need be read
  // The classified rows' sums over k ascending, by blocks of columns spread
  // over threads: a block's sums stay in cache while every weight row
  // passes (the whole width's, 27 MB at T = 16, F = 53248, would be
  // streamed from memory once per k), and each weight is read once, a
  // piece of a row at a time (10.5 GB of f32 at Dm = 16384, where a copy
  // in doubles would be 14 GB more).
  constexpr extent_t kColumns = 256;
  const std::int64_t blocks = (F + kColumns - 1) / kColumns;
  // The down projection's sums y_rc = sum_f h_rf W2_fc and their terms'
  // magnitudes, each thread's blocks of f added into these.
  const std::size_t down = w2 ? R * std::size_t(Dm) : 0;
  std::vector<double> y_sum(down), y_mag(down);
#pragma omp parallel
  {
    std::vector<double> sum1(R * kColumns), mag1(sum1.size()), sum3(sum1.size()), mag3(sum1.size()),
        piece(kColumns), part_sum(down), part_mag(down), w2_row(w2 ? std::size_t(Dm) : 0);
    Regimes found;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const extent_t c0 = block * kColumns, w = std::min(kColumns, F - c0);
      for (auto* v : {&sum1, &mag1, &sum3, &mag3}) std::fill(v->begin(), v->end(), 0.0);
      for (extent_t k = 0; k < Dm; ++k) {
        for (auto [weights, sum, mag] : {std::tuple{&w1, sum1.data(), mag1.data()},
                                         std::tuple{&w3, sum3.data(), mag3.data()}}) {
          const double* wk = weights->row(k, c0, w, piece.data());  // (w)
          for (std::size_t r = 0; r < R; ++r) {
            const double xk = x[rows[r] * Dm + k];
            double *sr = sum + r * kColumns, *mr = mag + r * kColumns;
            for (extent_t col = 0; col < w; ++col) {
              const double term = xk * wk[col];
              sr[col] += term;
              mr[col] += std::fabs(term);
            }
          }
        }
      }
      for (std::size_t r = 0; r < R; ++r) {
        for (extent_t col = 0; col < w; ++col) {
          const std::size_t e = r * kColumns + std::size_t(col);
          if (mag1[e] > kappa * std::fabs(sum1[e]) || mag3[e] > kappa * std::fabs(sum3[e]))
            found.set(std::size_t(Regime::cancellation));
          const double z = sum1[e];  // a gate argument
          if (z > l.ln_max) found.set(std::size_t(Regime::silu_exp_z_overflows));
          if (z < -l.ln_max) found.set(std::size_t(Regime::silu_exp_minus_z_overflows));
          if (z < l.ln_zero) found.set(std::size_t(Regime::silu_exp_z_underflows));
          if (z > -l.ln_zero) found.set(std::size_t(Regime::silu_exp_minus_z_underflows));
          if (std::fabs(z) < l.unit_roundoff) found.set(std::size_t(Regime::silu_near_zero));
        }
      }
      for (extent_t col = 0; w2 && col < w; ++col) {
        const double* w2f = w2->row(c0 + col, 0, Dm, w2_row.data());  // (Dm)
        for (std::size_t r = 0; r < R; ++r) {
          const double z = sum1[r * kColumns + std::size_t(col)];
          const double h = z / (1 + std::exp(-z)) * sum3[r * kColumns + std::size_t(col)];
          double *ys = part_sum.data() + r * std::size_t(Dm),
                 *ym = part_mag.data() + r * std::size_t(Dm);
          for (extent_t c = 0; c < Dm; ++c) {
            ys[c] += h * w2f[c];
            ym[c] += std::fabs(h * w2f[c]);
          }
        }
      }
    }
#pragma omp critical(moacert_classify_gates)
    {
      out |= found;
      for (std::size_t e = 0; e < down; ++e) {
        y_sum[e] += part_sum[e];
        y_mag[e] += part_mag[e];
      }
    }
  }
  for (std::size_t e = 0; e < down; ++e)
    if (y_mag[e] > kappa * std::fabs(y_sum[e])) {
      out.set(std::size_t(Regime::down_cancellation));
      break;
    }
}

BlockInDouble block_in_double(const Case& c) {
  const Problem& p = c.problem;
  const Dims& d = p.dims;
  BlockInDouble out;
  for (const AnyTensor& t : c.inputs)
    out.inputs.push_back(
        moa::Tensor<double>::from_rav(moa::Layout::row_major(t.shape()), dense(t)));
  auto in = [&](std::size_t k) { return moa::View<const double>(out.inputs[k].view()); };
  out.mid = dnf::block_until_mlp<double>(in(0), in(1), in(2), in(3), in(4), in(5), in(6), d.H,
                                         d.Hkv, p.params.eps);
  return out;
}

Regimes classify(const Case& c) {
  return property_op(c.problem.op).classify(c, limits(c.problem.format));
}

}  // namespace moacert::properties
