// attention.decode, cpu.split: split-K over the KV cache with an exact
// log-sum-exp merge of partial (max, sum, acc) triples (split.cpp). Its
// tile, read by the kernel, its cost and its registry entry, and its
// argument block. The scalar form of the loop nest is split_generic.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/common/strided.hpp"
#include "reference/format.hpp"
#include "reference/moa/moa.hpp"
#include "reference/problem.hpp"

namespace moacert::kernels::cpu {

// The tile of cpu.split: the cache is cut into chunks of split_len
// positions, the same on every target.
struct SplitTiles {
  static constexpr std::size_t split_len = 256;
};

// The tile extents cpu.split runs in format f on this machine: split_len.
std::vector<moa::extent_t> split_tiles(Format f);

// One call of cpu.split: the problem's dimensions (reference/problem.hpp's
// Dims: B, H, Hkv, D, and M, the cache length L) and q (B,H,1,D), k, v
// (B,Hkv,L,D), lens (B); the data in the storage type of the call's format.
struct DecodeArgs {
  Dims dims;
  std::size_t split_len = SplitTiles::split_len;  // cache positions per chunk
  double scale = 1;
  int threads = 1;
  bool keep_workspace = true;           // RunOptions::keep_workspaces
  Strided<const void, 4> q, k, v;       // (B, H, 1, D), (B, Hkv, L, D) twice
  Strided<const std::int64_t, 1> lens;  // (B)
  Strided<void, 4> o;                   // (B, H, 1, D)
  Strided<void, 3> lse;                 // (B, H, 1)
};

}  // namespace moacert::kernels::cpu
