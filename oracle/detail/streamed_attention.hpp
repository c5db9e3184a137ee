// Attention's units at the MPFI pass, their rows streamed from the case
// (docs/oracle.md, "The rows streamed at the MPFI pass"). A
// unit reads its kv head's K and V whole, and a backward's key rows every
// query row of its group besides: converted into MPFI at 64 bits (about
// 128 bytes an element), a decode kv head at L = 131072 was 4 GiB, and a
// key-rows unit at N = M = 16384, D = 128 1 GiB, four times the case's own
// rows. So the MPFI pass converts none of attention's inputs
// (OracleOp::streamed_at_mpfi), and these functions read the rows from the
// case as they need them, kStreamedKeys keys or kStatisticsRows query rows
// at a time, widened to double (exact) and converted into blocks they
// reuse.
//
// The operations are the DNF's (reference/dnf/attention.hpp) in the DNF's
// order: a score is Reductions::dots on its own key row, which a block of
// rows leaves unchanged; each softmax is dnf::softmax_of_dots; each value
// sum goes on from block to block (dnf::plain_weighted_sum_onto), the
// plain loops' operations in their order; the backward's terms are
// dnf::backward_ds, dnf::accumulate_key_row and dnf::probability, key by
// key in order. For a T whose Reductions are the plain loops (MPFI, MPFR)
// every value is the DNF's bit for bit
// (tests/oracle/test_oracle_mp.cpp, StreamedUnits).
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "reference/case.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/reductions.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/named.hpp"

namespace moacert::oracle::detail {

// Keys per block: 64 rows of D = 128 are 8192 elements, 3 MiB of MPFI at
// the 1024-bit cap.
inline constexpr moa::extent_t kStreamedKeys = 64;

// Rows of one head of a case's attention input (B, heads, rows, D), read
// from the case and converted into a block this object reuses: a view it
// returns is valid until its next call.
template <class T>
class StreamedRows {
 public:
  StreamedRows(const AnyTensor& input, moa::extent_t b, moa::extent_t head)
      : input_(&input), b_(b), head_(head), width_(input.shape()[3]) {}

  // Rows first .. first + n - 1, an (n, D) view.
  moa::View<const T> rows(moa::extent_t first, moa::extent_t n) {
    block_.resize(static_cast<std::size_t>(n * width_));
    row_.resize(static_cast<std::size_t>(width_));
    for (moa::extent_t j = 0; j < n; ++j) {
      input_->get_row({b_, head_, first + j, 0}, width_, row_.data());
      for (std::size_t x = 0; x < row_.size(); ++x)
        block_[static_cast<std::size_t>(j * width_) + x] =
            dnf::ScalarTraits<T>::from_double(row_[x]);
    }
    return moa::View<const T>(block_.data(), moa::Layout::row_major(moa::Shape{n, width_}));
  }

 private:
  const AnyTensor* input_;
  moa::extent_t b_, head_, width_;
  std::vector<T> block_;
  std::vector<double> row_;
};

// The elements the streamed rows of a unit hold beside the DNF's own
// scratch (unit_scratch_elements): a block of K and one of V, a block of
// query rows and one of dO rows, each row of doubles, and a key-rows
// unit's K and V rows of its keys.
inline double streamed_attention_scratch(const Dims& d, double keys) {
  const double key_block = double(std::min(kStreamedKeys, d.M));
  const double query_block = double(std::min(dnf::kStatisticsRows, d.N));
  return (2 * key_block + 2 * query_block + 4 + 2 * keys) * double(d.D);
}

// Calls f(j0, n) for the blocks of keys j0 .. j0 + n - 1 below `seen`.
template <class F>
void for_each_key_block(moa::extent_t seen, F&& f) {
  for (moa::extent_t j0 = 0; j0 < seen; j0 += kStreamedKeys)
    f(j0, std::min(kStreamedKeys, seen - j0));
}

// The forward of query rows i0 .. i0 + R - 1 of one head, q_rows[r] (D),
// their kv head's K and V streamed: dnf::softmax_rows' softmax of each row
// and dnf::values_of_rows' O (R·D, row-major). `len` limits the keys
// (decode's lens[b]; M otherwise).
template <class T>
struct StreamedForward {
  std::vector<dnf::SoftmaxRow<T>> softmax;
  std::vector<T> o;
};
template <class T>
StreamedForward<T> streamed_forward(std::span<const moa::View<const T>> q_rows, StreamedRows<T>& k,
                                    StreamedRows<T>& v, const T& scale, causal::Mask causal,
                                    moa::extent_t i0, moa::extent_t N, moa::extent_t M,
                                    moa::extent_t len) {
  const auto R = static_cast<std::size_t>(q_rows.size());
  const moa::extent_t D = q_rows.empty() ? 0 : q_rows[0].shape()[0];
  StreamedForward<T> f;
  std::vector<moa::extent_t> seen;
  for (std::size_t r = 0; r < R; ++r) {
    seen.push_back(dnf::visible_keys(causal, i0 + moa::extent_t(r), N, M, len));
    f.softmax.push_back(dnf::unscored_row<T>(M, seen.back()));
  }
  const moa::extent_t most = seen.empty() ? 0 : *std::max_element(seen.begin(), seen.end());
  // Row r's keys of the block j0 .. j0 + n - 1: those before seen[r].
  auto in_block = [&](std::size_t r, moa::extent_t j0, moa::extent_t n) {
    return std::clamp<moa::extent_t>(seen[r] - j0, 0, n);
  };
  for_each_key_block(most, [&](moa::extent_t j0, moa::extent_t n) {
    const moa::View<const T> keys = k.rows(j0, n);
    for (std::size_t r = 0; r < R; ++r)
      if (const moa::extent_t m = in_block(r, j0, n); m > 0)
        dnf::Reductions<T>::dots(q_rows[r], keys, m, f.softmax[r].p.data() + j0);
  });
  for (std::size_t r = 0; r < R; ++r) dnf::softmax_of_dots(f.softmax[r], seen[r], len, scale);
  f.o.assign(R * static_cast<std::size_t>(D), dnf::ScalarTraits<T>::zero());
  for_each_key_block(most, [&](moa::extent_t j0, moa::extent_t n) {
    const moa::View<const T> values = v.rows(j0, n);
    for (std::size_t r = 0; r < R; ++r)
      if (const moa::extent_t m = in_block(r, j0, n); m > 0)
        dnf::plain_weighted_sum_onto(f.softmax[r].p.data() + j0, values, m,
                                     f.o.data() + r * static_cast<std::size_t>(D));
  });
  return f;
}

// dnf::attention_fwd_rows' values, from streamed_forward.
template <class T>
dnf::ForwardRows<T> streamed_forward_rows(std::span<const moa::View<const T>> q_rows,
                                          StreamedRows<T>& k, StreamedRows<T>& v, const T& scale,
                                          causal::Mask causal, moa::extent_t i0, moa::extent_t N,
                                          moa::extent_t M, moa::extent_t len) {
  StreamedForward<T> f = streamed_forward(q_rows, k, v, scale, causal, i0, N, M, len);
  dnf::ForwardRows<T> out{std::move(f.o), {}, {}};
  for (const dnf::SoftmaxRow<T>& row : f.softmax) {
    out.lse.push_back(row.lse);
    out.normalisers.push_back(row.normaliser);
  }
  return out;
}

// The views of rows 0 .. n - 1 of an (n, D) block, each (D).
template <class T>
std::vector<moa::View<const T>> each_row(const moa::View<const T>& block) {
  std::vector<moa::View<const T>> rows;
  for (moa::extent_t r = 0; r < block.shape()[0]; ++r) rows.push_back(block.sub({r}));
  return rows;
}

// The case's input `name`, rows of head (b, head).
template <class T>
StreamedRows<T> streamed_rows(const Case& c, std::string_view name, moa::extent_t b,
                              moa::extent_t head) {
  return StreamedRows<T>(inputs_by_name(c.problem.op, c.inputs)[name], b, head);
}

// Forward rows i0 .. i0 + R - 1 of head (b, h): dnf::attention_fwd_rows
// on them (a fwd_row unit, a run of them).
template <class T>
dnf::ForwardRows<T> streamed_fwd_rows(const Case& c, const T& scale, moa::extent_t b,
                                      moa::extent_t h, moa::extent_t i0, moa::extent_t R) {
  const Dims& d = c.problem.dims;
  const moa::extent_t g = h / (d.H / d.Hkv);
  StreamedRows<T> q = streamed_rows<T>(c, "q", b, h), k = streamed_rows<T>(c, "k", b, g),
                  v = streamed_rows<T>(c, "v", b, g);
  const std::vector<moa::View<const T>> q_rows = each_row(q.rows(i0, R));
  return streamed_forward_rows<T>(q_rows, k, v, scale, c.problem.mask(), i0, d.N, d.M, d.M);
}

// Decode's head (b, h), its cache cut at `len`: dnf::attention_decode's o
// (D) and lse.
template <class T>
void streamed_decode_head(const Case& c, const T& scale, moa::extent_t b, moa::extent_t h,
                          moa::extent_t len, T* o, T& lse) {
  const Dims& d = c.problem.dims;
  const moa::extent_t g = h / (d.H / d.Hkv);
  StreamedRows<T> q = streamed_rows<T>(c, "q", b, h), k = streamed_rows<T>(c, "k", b, g),
                  v = streamed_rows<T>(c, "v", b, g);
  const std::vector<moa::View<const T>> q_row = each_row(q.rows(0, 1));
  dnf::ForwardRows<T> f = streamed_forward_rows<T>(q_row, k, v, scale, false, 0, 1, d.M, len);
  std::copy(f.o.begin(), f.o.end(), o);
  lse = f.lse[0];
}

// dnf::backward_query_row on query row i, qi and doi (D), its kv head's K
// and V streamed: its dQ row into dq_i (D) and, where `key_terms`, its
// terms of every key row it sees into dk, dv (M·D, row-major).
template <class T, bool key_terms>
void streamed_backward_query_row(const moa::View<const T>& qi, const moa::View<const T>& doi,
                                 StreamedRows<T>& k, StreamedRows<T>& v, const T& scale,
                                 causal::Mask causal, moa::extent_t i, moa::extent_t N,
                                 moa::extent_t M, T* dq_i, T* dk = nullptr, T* dv = nullptr) {
  using S = dnf::ScalarTraits<T>;
  const moa::extent_t D = qi.shape()[0];
  // dnf::backward_row: the row's softmax, O_i from it, then D_i.
  StreamedForward<T> f = streamed_forward<T>({&qi, 1}, k, v, scale, causal, i, N, M, M);
  const dnf::SoftmaxRow<T>& row = f.softmax[0];
  T delta = S::zero();
  if (!row.empty) delta = dnf::row_delta(doi, f.o.data());
  std::fill(dq_i, dq_i + D, S::zero());
  if (row.empty) return;
  const moa::Layout key_row = moa::Layout::row_major({D});
  for_each_key_block(dnf::visible_keys(causal, i, N, M, M), [&](moa::extent_t j0, moa::extent_t n) {
    const moa::View<const T> keys = k.rows(j0, n);
    // The values' block beside the keys': its own buffer.
    const moa::View<const T> values = v.rows(j0, n);
    for (moa::extent_t jj = 0; jj < n; ++jj) {
      const moa::extent_t j = j0 + jj;
      const T ds = dnf::backward_ds(row.p[j], delta, doi, values, jj);
      for (moa::extent_t x = 0; x < D; ++x) dq_i[x] += scale * ds * keys(jj, x);
      if constexpr (key_terms)
        dnf::accumulate_key_row(moa::View<T>(dk + j * D, key_row),
                                moa::View<T>(dv + j * D, key_row), scale, ds, row.p[j], qi, doi);
    }
  });
}

// A dQ row (b, h, i) alone against the `seen` keys it sees:
// dnf::attention_bwd_query_row into dq (D).
template <class T>
void streamed_bwd_query_row(const Case& c, const T& scale, moa::extent_t b, moa::extent_t h,
                            moa::extent_t i, moa::extent_t seen, T* dq) {
  const Dims& d = c.problem.dims;
  const moa::extent_t g = h / (d.H / d.Hkv);
  StreamedRows<T> q = streamed_rows<T>(c, "q", b, h), dout = streamed_rows<T>(c, "do", b, h),
                  k = streamed_rows<T>(c, "k", b, g), v = streamed_rows<T>(c, "v", b, g);
  const moa::View<const T> qi = q.rows(i, 1).sub({0}), doi = dout.rows(i, 1).sub({0});
  streamed_backward_query_row<T, false>(qi, doi, k, v, scale, false, 0, 1, seen, dq);
}

// Kv group (b, g) whole: dnf::attention_bwd on the query heads that share
// it, each dQ row handed to dq_row(hh, i, row (D)) as it is done (the
// group's dQ, G·N·D elements, is 1.6 GB at the cap for a fused case at
// N = 32768, M = 1), dk and dv (M·D, row-major).
template <class T, class DqRow>
void streamed_bwd_group(const Case& c, const T& scale, moa::extent_t b, moa::extent_t g,
                        DqRow&& dq_row, T* dk, T* dv) {
  const Dims& d = c.problem.dims;
  const moa::extent_t group = d.H / d.Hkv;
  std::vector<T> dq(static_cast<std::size_t>(d.D));
  std::fill(dk, dk + d.M * d.D, dnf::ScalarTraits<T>::zero());
  std::fill(dv, dv + d.M * d.D, dnf::ScalarTraits<T>::zero());
  StreamedRows<T> k = streamed_rows<T>(c, "k", b, g), v = streamed_rows<T>(c, "v", b, g);
  for (moa::extent_t hh = 0; hh < group; ++hh) {
    StreamedRows<T> q = streamed_rows<T>(c, "q", b, g * group + hh),
                    dout = streamed_rows<T>(c, "do", b, g * group + hh);
    for (moa::extent_t i = 0; i < d.N; ++i) {
      const moa::View<const T> qi = q.rows(i, 1).sub({0}), doi = dout.rows(i, 1).sub({0});
      streamed_backward_query_row<T, true>(qi, doi, k, v, scale, c.problem.mask(), i, d.N, d.M,
                                           dq.data(), dk, dv);
      dq_row(hh, i, dq.data());
    }
  }
}

// The key rows `keys` of kv group (b, g): dnf::attention_bwd_key_rows,
// dk_rows and dv_rows (keys · D, row-major), key keys[t] in row t.
template <class T>
void streamed_bwd_key_rows(const Case& c, const T& scale, moa::extent_t b, moa::extent_t g,
                           const std::vector<moa::extent_t>& keys, T* dk_rows, T* dv_rows) {
  using S = dnf::ScalarTraits<T>;
  const Dims& d = c.problem.dims;
  const causal::Mask causal = c.problem.mask();
  const moa::extent_t group = d.H / d.Hkv, D = d.D;
  const auto K = static_cast<moa::extent_t>(keys.size());
  std::fill(dk_rows, dk_rows + K * D, S::zero());
  std::fill(dv_rows, dv_rows + K * D, S::zero());
  StreamedRows<T> k = streamed_rows<T>(c, "k", b, g), v = streamed_rows<T>(c, "v", b, g);
  // The keys' own K and V rows, copied out of the blocks: held for every
  // query row while the blocks stream the others.
  std::vector<T> k_keys, v_keys;
  for (const moa::extent_t j : keys) {
    const moa::View<const T> kj = k.rows(j, 1), vj = v.rows(j, 1);
    for (moa::extent_t x = 0; x < D; ++x) {
      k_keys.push_back(kj(0, x));
      v_keys.push_back(vj(0, x));
    }
  }
  const moa::View<const T> v_of_keys(v_keys.data(), moa::Layout::row_major({K, D}));
  const moa::Layout row = moa::Layout::row_major({D}), key_row = moa::Layout::row_major({1, D});
  for (moa::extent_t hh = 0; hh < group; ++hh) {
    StreamedRows<T> q = streamed_rows<T>(c, "q", b, g * group + hh),
                    dout = streamed_rows<T>(c, "do", b, g * group + hh);
    for (moa::extent_t i0 = 0; i0 < d.N; i0 += dnf::kStatisticsRows) {
      const moa::extent_t R = std::min(dnf::kStatisticsRows, d.N - i0);
      const std::vector<moa::View<const T>> q_rows = each_row(q.rows(i0, R)),
                                            do_rows = each_row(dout.rows(i0, R));
      const dnf::ForwardRows<T> f =
          streamed_forward_rows<T>(q_rows, k, v, scale, causal, i0, d.N, d.M, d.M);
      for (moa::extent_t n = 0; n < R; ++n) {
        const moa::extent_t i = i0 + n;
        if (dnf::visible_keys(causal, i, d.N, d.M, d.M) == 0) continue;  // P = 0: no term
        const moa::View<const T>&qi = q_rows[std::size_t(n)], &doi = do_rows[std::size_t(n)];
        const T delta = dnf::row_delta(doi, f.o.data() + n * D);
        const dnf::Normaliser<T>& normaliser = f.normalisers[std::size_t(n)];
        for (moa::extent_t t = 0; t < K; ++t) {
          if (!dnf::visible(causal, i, keys[std::size_t(t)], d.N, d.M)) continue;
          T dot;
          dnf::Reductions<T>::dots(qi, moa::View<const T>(k_keys.data() + t * D, key_row), 1, &dot);
          const T p_ij = dnf::probability(normaliser, scale, dot);
          const T ds = dnf::backward_ds(p_ij, delta, doi, v_of_keys, t);
          dnf::accumulate_key_row(moa::View<T>(dk_rows + t * D, row),
                                  moa::View<T>(dv_rows + t * D, row), scale, ds, p_ij, qi, doi);
        }
      }
    }
  }
}

}  // namespace moacert::oracle::detail
