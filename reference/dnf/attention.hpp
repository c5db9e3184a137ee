// The DNF of attention: forward, backward, fused forward+backward and
// decode, written once over the scalar type T on the MoA core.
//
// For batch b and query head h (kv head g = h / (H / Hkv)), row i:
//   S_ij  = scale · Σ_d Q_id K_jd                 over visible keys j
//   m_i   = max_j S_ij,  P_ij = exp(S_ij - m_i) / l_i,  l_i = Σ_j exp(S_ij - m_i)
//   O_id  = Σ_j P_ij V_jd,  LSE_i = m_i + log l_i
// Key j is visible from row i unless causal and j > i + (M - N) (bottom-right
// aligned; j > i for a kernel that declares its mask top-left aligned). A row that sees no key has
// O = 0 and LSE = -inf. The backward is the exact derivative given dO:
//   dV_j = Σ_i P_ij dO_i,  dP_ij = dO_i · V_j,  D_i = dO_i · O_i,
//   dS_ij = P_ij (dP_ij - D_i),  dQ_i = scale Σ_j dS_ij K_j,  dK_j = scale Σ_i dS_ij Q_i
// with dK and dV summed over the query heads that share a kv head.
//
// The loops below are the definition read as loops, in the order of the
// formulas; they are not meant to be fast (that is the ONF's business).
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "reference/causal.hpp"
#include "reference/dnf/reductions.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/moa/moa.hpp"
#include "reference/problem.hpp"

namespace moacert::dnf {

using moa::extent_t;
using moa::View;

// Whether query row i sees key j (reference/causal.hpp).
inline bool visible(causal::Mask causal, extent_t i, extent_t j, extent_t N, extent_t M) {
  return causal::sees(causal, i, j, N, M);
}

// How many keys row i sees: the visible keys are a prefix (under either
// alignment), cut at `len` (decode's lens[b]; M otherwise).
inline extent_t visible_keys(causal::Mask causal, extent_t i, extent_t N, extent_t M,
                             extent_t len) {
  if (!causal) return len;
  const extent_t last = causal::last_key(causal, i, N, M);  // -1 or less: none
  return last < 0 ? 0 : std::min(last + 1, len);
}

// The problem's dimensions read off q (B,H,N,D) and k (B,Hkv,M,D): the
// attention fields of reference/problem.hpp's Dims, the others 1.
template <class T>
Dims attention_dims(const View<const T>& q, const View<const T>& k) {
  const moa::Shape qs = q.shape(), ks = k.shape();
  Dims d;
  d.B = qs[0], d.H = qs[1], d.Hkv = ks[1], d.N = qs[2], d.M = ks[2], d.D = qs[3];
  return d;
}

// Query rows whose softmax the DNF's loops take at once (softmax_rows and
// what calls it): RowReductions may then share its reads of k and v between
// them. At 16384 keys, a row at a time streamed a kv head's keys and values
// from memory once per query row (docs/performance-history.md, "Query rows
// in blocks"); each row's values are the same either way.
inline constexpr extent_t kStatisticsRows = 16;

// The rows i0 .. up to kStatisticsRows of them, before N, of head h of
// x (B, H, N, D): each a (D) view.
template <class T>
std::vector<View<const T>> block_of_rows(const View<const T>& x, extent_t b, extent_t h,
                                         extent_t i0, extent_t N) {
  std::vector<View<const T>> rows;
  for (extent_t i = i0; i < std::min(i0 + kStatisticsRows, N); ++i)
    rows.push_back(x.sub({b, h, i}));
  return rows;
}

// A row's softmax normaliser: P_ij = exp(S_ij - shift) / sum over the keys
// it sees, shift the row's max (ScalarTraits::shift) and sum l_i. With it
// and O_i, a forward row holds all the backward's key rows need of it:
// P_ij of any key is then recomputed from that key's score alone
// (probability), bit for bit what softmax_rows computes.
template <class T>
struct Normaliser {
  T shift, sum;
};

// One row's softmax over its visible keys, the step shared by forward and
// backward: S (scaled, masked scores), P (normalised probabilities, 0 where
// masked), its normaliser, and LSE. `len` limits the keys (decode's
// lens[b]).
template <class T>
struct SoftmaxRow {
  std::vector<T> p;  // (M)
  T lse;
  Normaliser<T> normaliser;  // unset where empty
  bool empty;                // the row sees no key
};

// A row's softmax before its scores: P = 0 over M keys and LSE = -inf,
// what a row that sees no key (`seen` == 0) keeps.
template <class T>
SoftmaxRow<T> unscored_row(extent_t M, extent_t seen) {
  using Tr = ScalarTraits<T>;
  return {std::vector<T>(static_cast<std::size_t>(M), Tr::zero()),
          Tr::neg_inf(),
          {Tr::zero(), Tr::zero()},
          seen == 0};
}

// A row's softmax from its dots Σ_d Q_id K_jd, held in row.p[0, n) for the
// n keys it sees: the scores S_ij = scale · dot, then P (to `len`), its
// normaliser and LSE, in place. Whatever computes the dots (softmax_rows,
// or the MPFI pass, a block of keys at a time:
// oracle/detail/streamed_attention.hpp), the softmax is these operations.
template <class T>
void softmax_of_dots(SoftmaxRow<T>& row, extent_t n, extent_t len, const T& scale) {
  using Tr = ScalarTraits<T>;
  using std::log;
  if (row.empty) return;
  std::vector<T>& p = row.p;
  for (extent_t j = 0; j < n; ++j) p[j] = scale * p[j];
  // row_max, then the shifted exponentials and their sum
  T m = Tr::neg_inf();
  for (extent_t j = 0; j < n; ++j) m = Tr::max(m, p[j]);
  const T shift = Tr::shift(m);
  Reductions<T>::shifted_exps(p.data(), n, shift);
  const T l = Reductions<T>::sum(p.data(), n);
  for (extent_t j = 0; j < len; ++j) p[j] /= l;
  row.lse = shift + log(l);
  row.normaliser = {shift, l};
}

// The rows i0 .. i0 + R - 1 of one query head at once, q_rows[r] (D) row
// i0 + r: each row's softmax_row, computed by the same operations (the
// scores of every row first, through RowReductions, which may share the
// reads of k).
template <class T>
std::vector<SoftmaxRow<T>> softmax_rows(std::span<const View<const T>> q_rows,
                                        const View<const T>& k /*(M, D)*/, const T& scale,
                                        causal::Mask causal, extent_t i0, extent_t N, extent_t M,
                                        extent_t len) {
  const auto R = static_cast<extent_t>(q_rows.size());
  std::vector<SoftmaxRow<T>> rows;
  std::vector<extent_t> seen;  // the keys each row sees
  std::vector<T*> scores;      // row r's scores, held in its p until exp replaces them
  rows.reserve(static_cast<std::size_t>(R));
  for (extent_t r = 0; r < R; ++r) {
    seen.push_back(visible_keys(causal, i0 + r, N, M, len));
    rows.push_back(unscored_row<T>(M, seen.back()));
    scores.push_back(rows.back().p.data());
  }
  // scores: S_ij = scale · Σ_d Q_id K_jd
  RowReductions<T>::dots(q_rows, k, seen.data(), scores.data());
  for (extent_t r = 0; r < R; ++r)
    softmax_of_dots(rows[static_cast<std::size_t>(r)], seen[static_cast<std::size_t>(r)], len,
                    scale);
  return rows;
}

// P_ij of one key from its dot Σ_d Q_id K_jd: softmax_rows' operations on
// that key alone (scaled, shifted exp, divided by the sum).
template <class T>
T probability(const Normaliser<T>& n, const T& scale, const T& dot) {
  T p = scale * dot;
  Reductions<T>::shifted_exps(&p, 1, n.shift);
  return p / n.sum;
}

// Row i alone, q_row (D).
template <class T>
SoftmaxRow<T> softmax_row(const View<const T>& q_row /*(D)*/, const View<const T>& k /*(M, D)*/,
                          const T& scale, causal::Mask causal, extent_t i, extent_t N, extent_t M,
                          extent_t len) {
  return std::move(softmax_rows<T>({&q_row, 1}, k, scale, causal, i, N, M, len)[0]);
}

// O_i = Σ_j P_ij V_j over the keys each row sees (an empty row sees none:
// O = 0), for the rows i0 .. of `softmax`: (R·D, row-major).
template <class T>
std::vector<T> values_of_rows(const std::vector<SoftmaxRow<T>>& softmax,
                              const View<const T>& vh /*(M, D)*/, causal::Mask causal, extent_t i0,
                              extent_t N, extent_t M) {
  const auto R = static_cast<extent_t>(softmax.size());
  const extent_t D = vh.shape()[1];
  std::vector<T> o(static_cast<std::size_t>(R * D));
  std::vector<extent_t> seen;
  std::vector<const T*> p;
  std::vector<T*> o_rows;
  for (extent_t r = 0; r < R; ++r) {
    seen.push_back(visible_keys(causal, i0 + r, N, M, M));
    p.push_back(softmax[static_cast<std::size_t>(r)].p.data());
    o_rows.push_back(o.data() + r * D);
  }
  RowReductions<T>::weighted_sums(p.data(), vh, seen.data(), R, o_rows.data());
  return o;
}

// The forward of rows i0 .. i0 + R - 1 of one query head, q_rows[r] (D)
// row i0 + r: O (R·D, row-major), LSE and the normalisers (R), each row's
// values those of the row alone (softmax_rows, RowReductions).
template <class T>
struct ForwardRows {
  std::vector<T> o, lse;
  std::vector<Normaliser<T>> normalisers;
};

template <class T>
ForwardRows<T> attention_fwd_rows(std::span<const View<const T>> q_rows,
                                  const View<const T>& kh /*(M, D)*/,
                                  const View<const T>& vh /*(M, D)*/, const T& scale,
                                  causal::Mask causal, extent_t i0, extent_t N, extent_t M) {
  const std::vector<SoftmaxRow<T>> softmax = softmax_rows(q_rows, kh, scale, causal, i0, N, M, M);
  ForwardRows<T> out{values_of_rows(softmax, vh, causal, i0, N, M), {}, {}};
  for (const SoftmaxRow<T>& row : softmax) {
    out.lse.push_back(row.lse);
    out.normalisers.push_back(row.normaliser);
  }
  return out;
}

// attention.fwd: o (B,H,N,D), lse (B,H,N).
template <class T>
void attention_fwd(View<const T> q, View<const T> k, View<const T> v, double scale_d,
                   causal::Mask causal, View<T> o, View<T> lse) {
  const Dims s = attention_dims(q, k);
  const T scale = ScalarTraits<T>::from_double(scale_d);
  const extent_t group = s.H / s.Hkv;
  for (extent_t b = 0; b < s.B; ++b) {
    for (extent_t h = 0; h < s.H; ++h) {
      const View<const T> kh = k.sub({b, h / group}), vh = v.sub({b, h / group});  // (M, D)
      for (extent_t i0 = 0; i0 < s.N; i0 += kStatisticsRows) {
        const std::vector<View<const T>> q_rows = block_of_rows(q, b, h, i0, s.N);
        const ForwardRows<T> f = attention_fwd_rows<T>(q_rows, kh, vh, scale, causal, i0, s.N, s.M);
        for (std::size_t r = 0; r < q_rows.size(); ++r) {
          const extent_t i = i0 + static_cast<extent_t>(r);
          for (extent_t d = 0; d < s.D; ++d)
            o(b, h, i, d) = f.o[r * std::size_t(s.D) + std::size_t(d)];
          lse(b, h, i) = f.lse[r];
        }
      }
    }
  }
}

// D_i = dO_i · O_i, o_row the row's O (D).
template <class T>
T row_delta(const View<const T>& do_row /*(D)*/, const T* o_row) {
  const extent_t D = do_row.shape()[0];
  T delta;
  Reductions<T>::dots(do_row, View<const T>(o_row, moa::Layout::row_major({1, D})), 1, &delta);
  return delta;
}

// One query row's share of the whole backward: the row's softmax and
// D_i = dO_i · O_i, with O_i recomputed from P.
template <class T>
struct BackwardRow {
  SoftmaxRow<T> softmax;
  T delta;  // D_i
};

// Row i, qi and doi (D): its softmax (softmax_rows on the row alone), O_i
// from it (an empty row's P = 0: it contributes nothing), then D_i.
template <class T>
BackwardRow<T> backward_row(const View<const T>& qi /*(D)*/, const View<const T>& doi /*(D)*/,
                            const View<const T>& kh /*(M, D)*/, const View<const T>& vh /*(M, D)*/,
                            const T& scale, causal::Mask causal, extent_t i, extent_t N,
                            extent_t M) {
  std::vector<SoftmaxRow<T>> softmax = softmax_rows<T>({&qi, 1}, kh, scale, causal, i, N, M, M);
  const std::vector<T> o = values_of_rows(softmax, vh, causal, i, N, M);  // (1, D)
  BackwardRow<T> row{std::move(softmax[0]), ScalarTraits<T>::zero()};
  if (!row.softmax.empty) row.delta = row_delta(doi, o.data());
  return row;
}

// dS_ij = P_ij (dP_ij - D_i), dP_ij = dO_i · V_j, for a key j row i sees.
template <class T>
T backward_ds(const T& p_ij, const T& delta, const View<const T>& doi /*(D)*/,
              const View<const T>& vh /*(M, D)*/, extent_t j) {
  T dp = ScalarTraits<T>::zero();
  for (extent_t d = 0; d < doi.shape()[0]; ++d) dp += doi(d) * vh(j, d);
  return p_ij * (dp - delta);
}

// Row i's terms of key row j: dK_j += scale dS_ij Q_i, dV_j += P_ij dO_i.
template <class T>
void accumulate_key_row(View<T> dk_j /*(D)*/, View<T> dv_j /*(D)*/, const T& scale, const T& ds,
                        const T& p_ij, const View<const T>& qi, const View<const T>& doi) {
  for (extent_t d = 0; d < qi.shape()[0]; ++d) {
    dk_j(d) += scale * ds * qi(d);
    dv_j(d) += p_ij * doi(d);
  }
}

// Query row i's share of the backward: its dQ row dq_i (D) and, where
// `key_terms`, its terms of the dK and dV rows (dk_h, dv_h: (M, D)) of every
// key it sees. The terms change nothing in dq_i: a dQ row alone (the
// sampled oracle's) is the same operations without them.
template <class T, bool key_terms>
void backward_query_row(const View<const T>& qi /*(D)*/, const View<const T>& doi /*(D)*/,
                        const View<const T>& kh /*(M, D)*/, const View<const T>& vh /*(M, D)*/,
                        const T& scale, causal::Mask causal, extent_t i, extent_t N, extent_t M,
                        View<T> dq_i, View<T> dk_h, View<T> dv_h) {
  const BackwardRow<T> row = backward_row(qi, doi, kh, vh, scale, causal, i, N, M);
  const extent_t D = qi.shape()[0];
  for (extent_t d = 0; d < D; ++d) dq_i(d) = ScalarTraits<T>::zero();
  if (row.softmax.empty) return;
  for (extent_t j = 0; j < M; ++j) {
    if (!visible(causal, i, j, N, M)) continue;
    const T ds = backward_ds(row.softmax.p[j], row.delta, doi, vh, j);
    for (extent_t d = 0; d < D; ++d) dq_i(d) += scale * ds * kh(j, d);
    if constexpr (key_terms)
      accumulate_key_row(dk_h.sub({j}), dv_h.sub({j}), scale, ds, row.softmax.p[j], qi, doi);
  }
}

// attention.bwd: dq (B,H,N,D), dk, dv (B,Hkv,M,D), the exact derivative of
// attention.fwd given dO. o and lse are recomputed, not read: the exact
// answer depends on q, k, v and dO alone (docs/design.md).
template <class T>
void attention_bwd(View<const T> q, View<const T> k, View<const T> v, View<const T> dout,
                   double scale_d, causal::Mask causal, View<T> dq, View<T> dk, View<T> dv) {
  using Tr = ScalarTraits<T>;
  const Dims s = attention_dims(q, k);
  const T scale = Tr::from_double(scale_d);
  const extent_t group = s.H / s.Hkv;
  for (const moa::Index& idx : moa::iota(dk.shape())) dk(idx) = Tr::zero();
  for (const moa::Index& idx : moa::iota(dv.shape())) dv(idx) = Tr::zero();
  for (extent_t b = 0; b < s.B; ++b) {
    for (extent_t h = 0; h < s.H; ++h) {
      const extent_t g = h / group;
      const View<const T> kh = k.sub({b, g}), vh = v.sub({b, g});  // (M, D)
      for (extent_t i = 0; i < s.N; ++i)
        backward_query_row<T, true>(q.sub({b, h, i}), dout.sub({b, h, i}), kh, vh, scale, causal, i,
                                    s.N, s.M, dq.sub({b, h, i}), dk.sub({b, g}), dv.sub({b, g}));
    }
  }
}

// attention.bwd's dQ row of one query row alone: q, dout (1,1,1,D) against
// the keys and values it sees, k, v (1,1,M',D), non-causal; dq_row (D).
// Bit for bit attention_bwd's dq of that row (backward_query_row), without
// the dK and dV terms it would also compute: the sampled oracle's dQ rows
// hold O(M + D), not the M×D of partial key rows they would drop.
template <class T>
void attention_bwd_query_row(View<const T> q, View<const T> k, View<const T> v, View<const T> dout,
                             double scale_d, View<T> dq_row) {
  const Dims s = attention_dims(q, k);
  backward_query_row<T, false>(q.sub({0, 0, 0}), dout.sub({0, 0, 0}), k.sub({0, 0}), v.sub({0, 0}),
                               ScalarTraits<T>::from_double(scale_d), /*causal=*/false, 0, 1, s.M,
                               dq_row, {}, {});
}

// The forward rows i0 .. i0 + R - 1 of query head h (of q's heads), as
// attention_fwd_rows computes them, when the caller has them already (the
// oracle keeps a generated backward's forward: oracle/forward_memo.hpp);
// nullopt where it does not.
template <class T>
using GivenForwardRows =
    std::function<std::optional<ForwardRows<T>>(extent_t h, extent_t i0, extent_t R)>;

// The key rows `keys` of dk and dv alone, for one kv head: q, dout
// (1,G,N,D) are the query heads that share k, v (1,1,M,D); dk_rows, dv_rows
// (K, D) receive key row keys[t] in row t. Each is attention_bwd's own sum,
// term by term in its order (row i of every query head in turn), so the
// values are those attention_bwd computes. A key row depends on every
// query row's normaliser and D_i: the rows' forward is computed once for
// all the keys asked, kStatisticsRows query rows at a time (or taken from
// `given`), and each asked key's P_ij recomputed from its score
// (probability).
template <class T>
void attention_bwd_key_rows(View<const T> q, View<const T> k, View<const T> v, View<const T> dout,
                            double scale_d, causal::Mask causal, const std::vector<extent_t>& keys,
                            View<T> dk_rows, View<T> dv_rows,
                            const GivenForwardRows<T>& given = {}) {
  using Tr = ScalarTraits<T>;
  const Dims s = attention_dims(q, k);
  const T scale = Tr::from_double(scale_d);
  for (const moa::Index& idx : moa::iota(dk_rows.shape())) dk_rows(idx) = Tr::zero();
  for (const moa::Index& idx : moa::iota(dv_rows.shape())) dv_rows(idx) = Tr::zero();
  const View<const T> kh = k.sub({0, 0}), vh = v.sub({0, 0});  // (M, D)
  const moa::Layout key_row = moa::Layout::strided({1, s.D}, kh.layout().strides());
  for (extent_t h = 0; h < s.H; ++h) {
    for (extent_t i0 = 0; i0 < s.N; i0 += kStatisticsRows) {
      const std::vector<View<const T>> q_rows = block_of_rows(q, 0, h, i0, s.N),
                                       do_rows = block_of_rows(dout, 0, h, i0, s.N);
      const auto R = static_cast<extent_t>(q_rows.size());
      std::optional<ForwardRows<T>> f = given ? given(h, i0, R) : std::nullopt;
      if (!f) f = attention_fwd_rows<T>(q_rows, kh, vh, scale, causal, i0, s.N, s.M);
      for (extent_t n = 0; n < R; ++n) {
        const extent_t i = i0 + n;
        if (visible_keys(causal, i, s.N, s.M, s.M) == 0) continue;  // P = 0: no term
        const View<const T>&qi = q_rows[std::size_t(n)], &doi = do_rows[std::size_t(n)];  // (D)
        const T delta = row_delta(doi, f->o.data() + n * s.D);
        const Normaliser<T>& normaliser = f->normalisers[std::size_t(n)];
        for (std::size_t t = 0; t < keys.size(); ++t) {
          const extent_t j = keys[t];
          if (!visible(causal, i, j, s.N, s.M)) continue;
          T dot;
          Reductions<T>::dots(qi, View<const T>(kh.data() + kh.layout()({j, 0}), key_row), 1, &dot);
          const T p_ij = probability(normaliser, scale, dot);
          const T ds = backward_ds(p_ij, delta, doi, vh, j);
          const auto r = static_cast<extent_t>(t);
          accumulate_key_row(dk_rows.sub({r}), dv_rows.sub({r}), scale, ds, p_ij, qi, doi);
        }
      }
    }
  }
}

// attention.fwdbwd: o, lse, dq, dk, dv — the forward and the backward of the
// same inputs (the fused ONF must agree with both).
template <class T>
void attention_fwdbwd(View<const T> q, View<const T> k, View<const T> v, View<const T> dout,
                      double scale, causal::Mask causal, View<T> o, View<T> lse, View<T> dq,
                      View<T> dk, View<T> dv) {
  attention_fwd(q, k, v, scale, causal, o, lse);
  attention_bwd(q, k, v, dout, scale, causal, dq, dk, dv);
}

// attention.decode: one query per (b, h) against a KV cache of which only
// the first lens[b] positions are valid (1 <= lens[b] <= L); positions past
// lens[b] are never read. o (B,H,1,D), lse (B,H,1).
template <class T>
void attention_decode(View<const T> q, View<const T> k, View<const T> v,
                      View<const std::int64_t> lens, double scale_d, View<T> o, View<T> lse) {
  const Dims s = attention_dims(q, k);
  const T scale = ScalarTraits<T>::from_double(scale_d);
  const extent_t group = s.H / s.Hkv;
  for (extent_t b = 0; b < s.B; ++b) {
    const extent_t len = lens(b);
    for (extent_t h = 0; h < s.H; ++h) {
      const View<const T> kh = k.sub({b, h / group}), vh = v.sub({b, h / group});  // (L, D)
      const SoftmaxRow<T> row =
          softmax_row(q.sub({b, h, 0}), kh, scale, /*causal=*/false, 0, 1, s.M, len);
      std::vector<T> o_b(static_cast<std::size_t>(s.D));  // (D)
      Reductions<T>::weighted_sum(row.p.data(), vh, len, o_b.data());
      for (extent_t d = 0; d < s.D; ++d) o(b, h, 0, d) = o_b[d];
      lse(b, h, 0) = row.lse;
    }
  }
}

}  // namespace moacert::dnf
