// The ONF of attention.decode as a plain scalar template: split-K over the
// KV cache with an exact log-sum-exp merge. It includes neither Highway nor
// OpenMP, so the property engine can instantiate it with mpfr_float and prove
// the rewrite algorithmically equivalent to the DNF; cpu.split (split.cpp)
// is the same loop nest vectorised and run in parallel.
//
// The valid cache [0, lens[b]) is cut into chunks of `split_len` positions.
// Chunk c of query head h yields a partial triple over its keys J_c:
//   m_c = max_{j∈J_c} S_j,  l_c = Σ_{j∈J_c} exp(S_j - m_c),  acc_c = Σ_{j∈J_c} exp(S_j - m_c) V_j
// and the triples merge exactly, in ascending chunk order:
//   m = max_c m_c,  l = Σ_c exp(m_c - m) l_c,  acc = Σ_c exp(m_c - m) acc_c,
//   O = acc / l,  LSE = m + log l.
// Positions j >= lens[b] are never read: chunks stop at lens[b].
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reference/dnf/attention.hpp"
#include "reference/dnf/scalar.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

using moa::extent_t;
using moa::View;

// A partial softmax over one chunk of the cache: the triple (m, l, acc).
template <class T>
struct DecodePartial {
  T m;
  T l;
  std::vector<T> acc;  // (D)
  bool empty;          // the chunk holds no valid position
};

// The number of chunks of `split_len` covering `len` positions.
inline extent_t decode_chunks(extent_t len, extent_t split_len) {
  return (len + split_len - 1) / split_len;
}

// @pre q (B,H,1,D), k and v (B,Hkv,L,D), lens (B) with 1 <= lens[b] <= L,
//      o (B,H,1,D), lse (B,H,1); split_len >= 1
// @post o and lse equal dnf::attention_decode in exact arithmetic; k and v
//       are read at positions < lens[b] only
template <class T>
void decode_split_generic(View<const T> q, View<const T> k, View<const T> v,
                          View<const std::int64_t> lens, double scale_d, View<T> o, View<T> lse,
                          extent_t split_len) {
  using Tr = dnf::ScalarTraits<T>;
  using std::exp;
  using std::log;
  const Dims s = dnf::attention_dims(q, k);
  const extent_t B = s.B, H = s.H, D = s.D, group = s.H / s.Hkv;
  const T scale = Tr::from_double(scale_d);

  for (extent_t b = 0; b < B; ++b) {
    const extent_t len = lens(b);
    const extent_t chunks = decode_chunks(len, split_len);
    for (extent_t h = 0; h < H; ++h) {
      const View<const T> qh = q.sub({b, h, 0});                                   // (D)
      const View<const T> kh = k.sub({b, h / group}), vh = v.sub({b, h / group});  // (L, D)

      // split: one partial triple per chunk
      std::vector<DecodePartial<T>> parts;
      for (extent_t c = 0; c < chunks; ++c) {
        const extent_t j0 = c * split_len, j1 = std::min(len, j0 + split_len);
        DecodePartial<T> part{Tr::neg_inf(), Tr::zero(), std::vector<T>(D, Tr::zero()), j1 <= j0};
        if (part.empty) {  // zero-length chunk: the neutral triple (-inf, 0, 0)
          parts.push_back(std::move(part));
          continue;
        }
        std::vector<T> scores(j1 - j0);  // (chunk)
        for (extent_t j = j0; j < j1; ++j) {
          T dot = Tr::zero();
          for (extent_t d = 0; d < D; ++d) dot += qh(d) * kh(j, d);
          scores[j - j0] = scale * dot;
        }
        // row_max
        T m = scores[0];
        for (extent_t j = j0 + 1; j < j1; ++j) m = Tr::max(m, scores[j - j0]);
        part.m = Tr::shift(m);
        // exp, row_sum, accumulate
        for (extent_t j = j0; j < j1; ++j) {
          const T p = exp(scores[j - j0] - part.m);
          part.l += p;
          for (extent_t d = 0; d < D; ++d) part.acc[d] += p * vh(j, d);
        }
        parts.push_back(std::move(part));
      }

      // merge: rescale each triple to the common max, in ascending chunk order
      T m = Tr::neg_inf();
      bool any = false;
      for (const DecodePartial<T>& part : parts) {
        if (part.empty) continue;
        m = any ? Tr::max(m, part.m) : part.m;
        any = true;
      }
      const T shift = Tr::shift(m);
      T l = Tr::zero();
      std::vector<T> acc(D, Tr::zero());  // (D)
      for (const DecodePartial<T>& part : parts) {
        if (part.empty) continue;
        const T alpha = exp(part.m - shift);
        l += alpha * part.l;
        for (extent_t d = 0; d < D; ++d) acc[d] += alpha * part.acc[d];
      }
      // lens[b] >= 1, so every decode row sees at least one key and l >= 1.
      for (extent_t d = 0; d < D; ++d) o(b, h, 0, d) = acc[d] / l;
      lse(b, h, 0) = shift + log(l);
    }
  }
}

}  // namespace moacert::kernels::cpu
