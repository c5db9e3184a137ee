// The rows certify judges where the whole oracle would be too slow
// (docs/design.md, "Sampled certification"): a stratified sample of output
// rows (oracle/selection.hpp), or every row where the whole oracle is cheap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oracle/memory.hpp"  // SelectionBound
#include "oracle/selection.hpp"
#include "properties/case_gen.hpp"  // kCommonTiles: the tiles every sample straddles
#include "reference/case.hpp"

namespace moacert::properties {

// The multiply-adds of the whole oracle's first pass on a problem (its
// cost in the DNF's loops): B·H·N·M·D times 2 for the forward (scores, P·V),
// 4 for the backward, 6 for both, B·H·L·D·2 for decode, T·D for rmsnorm,
// 3·T·Dm·F for mlp.swiglu.
double oracle_work(const Problem& p);
// Up to this much work (about a quarter of a second of the first pass on
// one core) certify judges every element; past it, a sample.
inline constexpr double kWholeOracleWork = 0x1p26;

// One kind of rows (query or key) laid out as `blocks` runs of `len` rows
// (a (b, head) each), with what each stratum needs to know of them; each
// op's (properties/ops/) from its shape, then its data.
struct RowSpace {
  moa::extent_t blocks = 0, len = 0;
  bool positional = true;           // tile edges along the run mean something
  std::vector<moa::extent_t> seen;  // per row: keys it sees (query) or queries that see it (key)
  std::vector<double> norm2;        // per row: the squared norm bounding its logits
};

// Sum of squares of each run of `per_row` consecutive elements (row-major)
// of t. Inline: the op table's row spaces (properties/ops/) use it, and the
// token fuzzer links those without the sampler.
inline std::vector<double> row_norms(const AnyTensor& t, moa::extent_t per_row) {
  std::vector<double> out(static_cast<std::size_t>(moa::tau(t.shape()) / per_row), 0.0);
  std::size_t n = 0;
  for (const moa::Index& i : moa::iota(t.shape())) {
    const double x = t.get(i);
    out[n / static_cast<std::size_t>(per_row)] += x * x;
    ++n;
  }
  return out;
}

struct Sample {
  // The rows to judge; nullopt: every element (the whole oracle is cheap).
  std::optional<oracle::Selection> rows;
  // How they were chosen: per stratum, the query rows and key rows it
  // contributed (a row may be in several strata; rows counts it once).
  struct Stratum {
    std::string name;
    std::int64_t query_rows = 0, key_rows = 0;
  };
  std::vector<Stratum> strata;
};

// The sample for a case: the whole case when oracle_work is at most
// `whole_work`; else, in every (b, head) of query rows and every (b, kv
// head) of key rows, the strata
//   first/last          the first and last row
//   tile edges          rows t-1 and t, and either side of the last multiple
//                       of t (the partial last tile), for t in kCommonTiles
//                       and the variant's `tiles`
//   fewest/most keys    the rows that see the fewest and the most keys
//                       (causal: the first rows, and the first that sees
//                       one; decode: the shortest and longest lens[b]); for
//                       key rows, the keys seen by the fewest query rows
//   largest logits      the kLargestLogitRows rows whose logits can be largest: the largest
//                       ||q_i|| (S_ij <= scale ||q_i|| ||k_j||), ||k_j|| for
//                       key rows, ||x_t|| for rmsnorm and mlp.swiglu
//   random              kRandomRows rows drawn from a seed that is a hash
//                       of the case's inputs, so `reproduce` judges the
//                       same rows
Sample sample_rows(const Case& c, const std::vector<moa::extent_t>& variant_tiles,
                   double whole_work = kWholeOracleWork);
inline constexpr int kRandomRows = 16;
inline constexpr int kLargestLogitRows = 4;

// What sample_rows will choose for any case of problem `p`, from its shape
// alone (certify's memory budget checks every case before its data exist):
// nullopt where the case is judged whole; else the rows the shape fixes
// (first/last, tile edges, and the fewest/most keys where the shape decides
// them) and how many more the data can add (largest logits, random rows;
// decode's fewest/most keys). Every sample_rows(c, ...) of a case c of `p`
// is those rows and at most that many more.
std::optional<oracle::SelectionBound> sample_bound(const Problem& p,
                                                   const std::vector<moa::extent_t>& variant_tiles,
                                                   double whole_work = kWholeOracleWork);

}  // namespace moacert::properties
