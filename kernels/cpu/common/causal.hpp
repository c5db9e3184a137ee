// Causal visibility (reference/causal.hpp: query row i of N sees key j of M
// when j <= i + (M - N)) as the CPU kernels and their scalar forms loop over
// it: the prefix of keys a row sees, the suffix of rows that see a key, a
// row's keys in a tile. Includes only reference/, so the *_generic.hpp loop
// nests may use it.
#pragma once

#include <algorithm>

#include "reference/causal.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

// The first key row i may not see: keys [0, key_end(i)) are visible.
// @post 0 <= result <= M; 0 means the row sees no key;
//       j < result  <=>  dnf::visible(causal, i, j, N, M) for 0 <= j < M
inline moa::extent_t key_end(bool causal, moa::extent_t i, moa::extent_t N, moa::extent_t M) {
  if (!causal) return M;
  return std::clamp<moa::extent_t>(causal::last_key(i, N, M) + 1, 0, M);
}

// The first query row that sees key j: rows [row_begin(j), N).
// @post 0 <= result <= N;  i >= result  <=>  j < key_end(causal, i, N, M)
inline moa::extent_t row_begin(bool causal, moa::extent_t j, moa::extent_t N, moa::extent_t M) {
  if (!causal) return 0;
  return std::clamp<moa::extent_t>(causal::first_row(j, N, M), 0, N);
}

// How many of the keys [j0, j0 + cols) row i sees: a prefix of the tile.
// @post 0 <= result <= cols
inline moa::extent_t visible_in_tile(bool causal, moa::extent_t i, moa::extent_t j0,
                                     moa::extent_t cols, moa::extent_t N, moa::extent_t M) {
  return std::clamp<moa::extent_t>(key_end(causal, i, N, M) - j0, 0, cols);
}

// The number of (query row, key) pairs a head sees: N·M, or fewer with causal.
inline double visible_pairs(bool causal, moa::extent_t N, moa::extent_t M) {
  double pairs = 0;
  for (moa::extent_t i = 0; i < N; ++i) pairs += double(key_end(causal, i, N, M));
  return pairs;
}

}  // namespace moacert::kernels::cpu
