#include "properties/sample.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "properties/check.hpp"
#include "properties/ops/table.hpp"

namespace moacert::properties {

using moa::extent_t;

double oracle_work(const Problem& p) {
  return property_op(p.op).oracle_work(p);
}

namespace {

void add(Sample& s, std::vector<extent_t>& rows, std::size_t before, const char* stratum,
         bool key) {
  auto it = std::find_if(s.strata.begin(), s.strata.end(),
                         [&](const Sample::Stratum& x) { return x.name == stratum; });
  if (it == s.strata.end()) it = s.strata.insert(s.strata.end(), {stratum, 0, 0});
  (key ? it->key_rows : it->query_rows) += std::int64_t(rows.size() - before);
}

// The strata a row space's shape fixes: first/last, tile edges, and the
// rows seeing the fewest and the most keys where the shape decides them
// (`seen`; decode's come from lens, data).
void choose_by_shape(const RowSpace& space, const std::vector<extent_t>& tiles, bool key,
                     Sample& sample, std::vector<extent_t>& rows) {
  if (space.blocks * space.len == 0) return;
  auto in_every_block = [&](auto&& positions) {
    for (extent_t blk = 0; blk < space.blocks; ++blk)
      for (extent_t pos : positions)
        if (pos >= 0 && pos < space.len) rows.push_back(blk * space.len + pos);
  };
  std::size_t before = rows.size();
  in_every_block(std::vector<extent_t>{0, space.len - 1});
  add(sample, rows, before, "first/last", key);

  before = rows.size();
  if (space.positional) {
    std::vector<extent_t> edges;
    for (extent_t t : tiles) {
      if (t <= 0 || t >= space.len) continue;
      const extent_t last = (space.len - 1) / t * t;  // where the last (partial) tile starts
      for (extent_t pos : {t - 1, t, last - 1, last}) edges.push_back(pos);
    }
    in_every_block(edges);
  }
  add(sample, rows, before, "tile edges", key);

  before = rows.size();
  if (!space.seen.empty()) {  // positions in one run (every run has the same counts)
    const auto [lo, hi] = std::minmax_element(space.seen.begin(), space.seen.end());
    std::vector<extent_t> positions{
        extent_t(lo - space.seen.begin()),
        // the last with the most: causal, the bottom row
        extent_t(space.seen.rend() - std::find(space.seen.rbegin(), space.seen.rend(), *hi) - 1)};
    if (*lo == 0) {  // rows that see nothing: also the first that sees something
      const auto some =
          std::find_if(space.seen.begin(), space.seen.end(), [](extent_t n) { return n > 0; });
      if (some != space.seen.end()) positions.push_back(extent_t(some - space.seen.begin()));
    }
    in_every_block(positions);
  }
  add(sample, rows, before, "fewest/most keys", key);
}

// The strata the data decide: the largest logits (norm2) and the random
// rows, at most kLargestLogitRows + kRandomRows rows in all.
void choose_by_data(const RowSpace& space, std::mt19937_64& rng, bool key, Sample& sample,
                    std::vector<extent_t>& rows) {
  const extent_t total = space.blocks * space.len;
  if (total == 0) return;
  std::size_t before = rows.size();
  if (!space.norm2.empty()) {
    std::vector<extent_t> order(space.norm2.size());
    std::iota(order.begin(), order.end(), 0);
    const std::size_t k = std::min<std::size_t>(kLargestLogitRows, order.size());
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                      [&](extent_t a, extent_t b) {
                        return space.norm2[std::size_t(a)] > space.norm2[std::size_t(b)];
                      });
    rows.insert(rows.end(), order.begin(), order.begin() + std::ptrdiff_t(k));
  }
  add(sample, rows, before, "largest logits", key);

  before = rows.size();
  std::uniform_int_distribution<extent_t> any(0, total - 1);
  for (int r = 0; r < kRandomRows; ++r) rows.push_back(any(rng));
  add(sample, rows, before, "random", key);
}

// The tiles every sample straddles: the common ones and the variant's.
std::vector<extent_t> tiles_for(const std::vector<extent_t>& variant_tiles) {
  std::vector<extent_t> tiles(std::begin(kCommonTiles), std::end(kCommonTiles));
  tiles.insert(tiles.end(), variant_tiles.begin(), variant_tiles.end());
  std::sort(tiles.begin(), tiles.end());
  tiles.erase(std::unique(tiles.begin(), tiles.end()), tiles.end());
  return tiles;
}

bool judged_whole(const Problem& p, double whole_work) {
  return oracle_work(p) <= whole_work || property_op(p.op).judged_whole;
}

}  // namespace

Sample sample_rows(const Case& c, const std::vector<extent_t>& variant_tiles, double whole_work) {
  Sample sample;
  const Problem& p = c.problem;
  if (judged_whole(p, whole_work)) return sample;
  const std::vector<extent_t> tiles = tiles_for(variant_tiles);
  std::vector<TensorRef> refs;
  for (const AnyTensor& t : c.inputs) refs.push_back(t.ref());
  std::mt19937_64 rng(schedule_seed_of(refs));

  const PropertyOp& op = property_op(p.op);
  auto [query, key] = op.row_spaces(p);
  op.add_data(c, query, key);
  oracle::Selection rows;
  choose_by_shape(query, tiles, /*key=*/false, sample, rows.query_rows);
  choose_by_data(query, rng, /*key=*/false, sample, rows.query_rows);
  if (op.samples_key_rows) {
    choose_by_shape(key, tiles, /*key=*/true, sample, rows.key_rows);
    choose_by_data(key, rng, /*key=*/true, sample, rows.key_rows);
  }
  sample.rows = oracle::normalised(std::move(rows), p);
  return sample;
}

std::optional<oracle::SelectionBound> sample_bound(const Problem& p,
                                                   const std::vector<extent_t>& variant_tiles,
                                                   double whole_work) {
  if (judged_whole(p, whole_work)) return std::nullopt;
  const std::vector<extent_t> tiles = tiles_for(variant_tiles);
  const PropertyOp& op = property_op(p.op);
  const auto [query, key] = op.row_spaces(p);
  Sample fixed;  // the strata the shape fixes
  oracle::SelectionBound bound;
  choose_by_shape(query, tiles, /*key=*/false, fixed, bound.rows.query_rows);
  // The data's strata; decode's fewest/most keys too (up to three rows of
  // its one run, see choose_by_shape).
  const extent_t data_rows = kLargestLogitRows + kRandomRows;
  bound.more_query_rows = data_rows + (has_index_input(p.op) ? 3 : 0);
  if (op.samples_key_rows) {
    choose_by_shape(key, tiles, /*key=*/true, fixed, bound.rows.key_rows);
    bound.more_key_rows = data_rows;
  }
  bound.rows = oracle::normalised(std::move(bound.rows), p);
  return bound;
}

}  // namespace moacert::properties
