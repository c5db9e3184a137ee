// Attention shapes for the kernel tests, and the error bounds they are held
// to (see kernel_test_util.hpp for the rule; inputs lie in [-1, 1]).
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>

#include "reference/dnf/attention.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace moacert::kernels::testing {

struct AttnCase {
  extent_t B, H, Hkv, N, M, D;
  bool causal;
  double scale;  // 0: 1/sqrt(D)
  LayoutKind layout;
};

inline std::ostream& operator<<(std::ostream& os, const AttnCase& c) {
  return os << "B" << c.B << "_H" << c.H << "_Hkv" << c.Hkv << "_N" << c.N << "_M" << c.M << "_D"
            << c.D << (c.causal ? "_causal" : "") << "_scale" << c.scale << "_"
            << layout_name(c.layout);
}

// N not a multiple of any tile, N > M and N < M with causal (rows with no
// visible key when N > M), MHA, GQA, MQA, odd D, every layout kind.
inline const AttnCase kAttnCases[] = {
    {1, 2, 2, 37, 37, 16, false, 0, LayoutKind::row_major},   // MHA, tail tiles
    {2, 4, 2, 70, 45, 8, true, 0, LayoutKind::permuted},      // GQA, causal N > M
    {1, 3, 1, 20, 77, 12, true, 0, LayoutKind::col_major},    // MQA, causal N < M
    {1, 2, 1, 65, 130, 5, false, 0.3, LayoutKind::padded},    // odd D, any scale
    {1, 2, 2, 9, 3, 4, true, 1.7, LayoutKind::padded},        // most rows see no key
    {1, 2, 1, 130, 128, 64, true, 0, LayoutKind::row_major},  // full tiles, D = 64
};

// A test name for a (format, case) parameter: letters, digits and '_'.
inline std::string attn_param_name(
    const ::testing::TestParamInfo<std::tuple<Format, AttnCase>>& param) {
  std::ostringstream os;
  os << name(std::get<0>(param.param)) << "_" << std::get<1>(param.param);
  std::string s = os.str();
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

inline Problem attention_problem(Op op, Format f, const AttnCase& c) {
  Problem p;
  p.op = op;
  p.format = f;
  p.dims.B = c.B;
  p.dims.H = c.H;
  p.dims.Hkv = c.Hkv;
  p.dims.N = c.N;
  p.dims.M = c.M;
  p.dims.D = c.D;
  p.params.causal = c.causal;
  p.params.scale = c.scale;
  return p;
}

// Absolute error bounds of a kernel in unit roundoff u against the exact
// attention outputs, for inputs in [-1, 1]. With c = scale·D:
//   |S_ij| <= c, |LSE_i| <= c + log M, 0 <= P_ij <= 1, Σ_j P_ij = 1,
//   |O| <= 1, |dP_ij|, |D_i| <= D, |dS_ij| <= 2 D P_ij.
// Relative error of a recomputed P_ij = exp(scale S_ij - LSE_i): the
// absolute error of its argument, γ_{D+1} c (the dot product and the scale)
// plus u (c + log M) (the subtraction) plus the error of LSE itself
// (lse_error), plus the exp's own 2 u (Highway's Exp: 1 ulp).
// Then, summing with key weights W = max_j Σ_i P_ij over the G N rows of
// the G query heads of a kv head (W <= G N; column_weight computes it):
//   dV: W (e_P + γ_{GN+1});  dS_ij: P_ij e_dS with e_dS = 2 D (e_P + γ_{D+2});
//   dK: scale W (e_dS + 2 D γ_{GN+1});  dQ: scale (e_dS + 2 D γ_{M+1});
//   O:  e_P + γ_{M+2};  LSE: lse_error.
struct AttnBounds {
  double o, lse, dq, dk, dv;
};

inline AttnBounds attention_bounds(const Problem& p, double u, double lse_error, double W) {
  const Dims& d = p.dims;
  const double D = double(d.D), N = double(d.N), M = double(d.M), G = double(d.H / d.Hkv);
  const double scale = p.scale(), c = scale * D;
  const double e_p = gamma(D + 1, u) * c + u * (c + std::log(M)) + lse_error + 2 * u;
  const double e_ds = 2 * D * (e_p + gamma(D + 2, u));
  AttnBounds b;
  b.dv = W * (e_p + gamma(G * N + 1, u));
  b.dk = scale * W * (e_ds + 2 * D * gamma(G * N + 1, u));
  b.dq = scale * (e_ds + 2 * D * gamma(M + 1, u));
  b.o = e_p + gamma(M + 2, u);
  b.lse = lse_error;
  return b;
}

// W = max_j Σ_i P_ij (summed over the query heads sharing key j's head): the
// DNF's dV for dO = 1.
inline double column_weight(const Problem& p, const moa::Tensor<double>& q,
                            const moa::Tensor<double>& k, const moa::Tensor<double>& v) {
  moa::Tensor<double> ones(q.shape()), dq(q.shape()), dk(k.shape()), dv(v.shape());
  for (double& x : ones.storage()) x = 1;
  dnf::attention_bwd<double>(q.view(), k.view(), v.view(), ones.view(), p.scale(), p.causal(),
                             dq.view(), dk.view(), dv.view());
  double w = 0;
  for (double x : dv.storage()) w = std::max(w, x);
  return w;
}

// The error of an LSE computed in unit roundoff u: the online sum of up to
// M exponentials (each with relative error e_exp and rescaled once per key
// tile, at most M times) then log and the add of the max.
inline double lse_error_computed(const Problem& p, double u) {
  const double D = double(p.dims.D), M = double(p.dims.M), c = p.scale() * D;
  return gamma(D + 1, u) * c + gamma(2 * M + 4, u) + u * (c + std::log(M)) + 2 * u;
}

// The error of an LSE handed over already rounded to the format: half an
// ulp of a value of size c + log M.
inline double lse_error_rounded(const Problem& p, double u) {
  return u * (p.scale() * double(p.dims.D) + std::log(double(p.dims.M)));
}

}  // namespace moacert::kernels::testing
