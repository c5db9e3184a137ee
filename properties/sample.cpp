#include "properties/sample.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "properties/check.hpp"

namespace moacert::properties {

using moa::extent_t;

double oracle_work(const Problem& p) {
  const Dims& d = p.dims;
  const double heads = double(d.B) * double(d.H),
               attention = heads * double(d.N) * double(d.M) * double(d.D);
  switch (p.op) {
    case Op::attention_fwd:
      return 2 * attention;
    case Op::attention_bwd:
      return 4 * attention;
    case Op::attention_fwdbwd:
      return 6 * attention;
    case Op::attention_decode:
      return 2 * heads * double(d.M) * double(d.D);
    case Op::rmsnorm:
      return double(d.T) * double(d.D);
    case Op::mlp_swiglu:
      return 3 * double(d.T) * double(d.Dm) * double(d.F);
    case Op::block:
      return 0;  // judged whole: one unit per batch holds all its rows anyway
  }
  return 0;
}

namespace {

// One kind of rows (query or key) laid out as `blocks` runs of `len` rows
// (a (b, head) each), with what each stratum needs to know of them.
struct RowSpace {
  extent_t blocks = 0, len = 0;
  bool positional = true;      // tile edges along the run mean something
  std::vector<extent_t> seen;  // per row: keys it sees (query) or queries that see it (key)
  std::vector<double> norm2;   // per row: the squared norm bounding its logits
};

// Sum of squares of each run of `per_row` consecutive elements (row-major)
// of t.
std::vector<double> row_norms(const AnyTensor& t, extent_t per_row) {
  std::vector<double> out(static_cast<std::size_t>(moa::tau(t.shape()) / per_row), 0.0);
  std::size_t n = 0;
  for (const moa::Index& i : moa::iota(t.shape())) {
    const double x = t.get(i);
    out[n / static_cast<std::size_t>(per_row)] += x * x;
    ++n;
  }
  return out;
}

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

// The query and key row spaces of a problem as its shape gives them: the
// runs, and the keys each row sees where the shape decides it (attention;
// decode's depend on lens). No norms: those are data.
std::pair<RowSpace, RowSpace> row_spaces(const Problem& p) {
  const Dims& d = p.dims;
  RowSpace query, key;
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd: {
      query = {d.B * d.H, d.N, true, {}, {}};
      key = {d.B * d.Hkv, d.M, true, {}, {}};
      for (extent_t i = 0; i < d.N; ++i)  // one run's counts: every run has the same
        query.seen.push_back(p.causal() ? std::clamp<extent_t>(i + (d.M - d.N) + 1, 0, d.M) : d.M);
      if (p.op != Op::attention_fwd) {
        for (extent_t j = 0; j < d.M; ++j)
          key.seen.push_back(p.causal() ? std::clamp<extent_t>(
                                              d.N - std::max<extent_t>(0, j - (d.M - d.N)), 0, d.N)
                                        : d.N);
      }
      break;
    }
    case Op::attention_decode:  // rows (b, h); every row spans the whole cache
      query = {1, d.B * d.H, false, {}, {}};
      break;
    case Op::rmsnorm:
    case Op::mlp_swiglu:
      query = {1, d.T, true, {}, {}};
      break;
    case Op::block:
      break;
  }
  return {query, key};
}

bool has_key_rows(Op op) {
  return op == Op::attention_bwd || op == Op::attention_fwdbwd;
}

bool judged_whole(const Problem& p, double whole_work) {
  return oracle_work(p) <= whole_work || p.op == Op::block;
}

}  // namespace

Sample sample_rows(const Case& c, const std::vector<extent_t>& variant_tiles, double whole_work) {
  Sample sample;
  const Problem& p = c.problem;
  if (judged_whole(p, whole_work)) return sample;
  const Dims& d = p.dims;
  const std::vector<extent_t> tiles = tiles_for(variant_tiles);
  std::vector<TensorRef> refs;
  for (const AnyTensor& t : c.inputs) refs.push_back(t.ref());
  std::mt19937_64 rng(schedule_seed_of(refs));

  auto [query, key] = row_spaces(p);
  switch (p.op) {  // what the data add: the norms bounding the logits, decode's keys seen
    case Op::attention_fwd:
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      query.norm2 = row_norms(c.inputs[0], d.D);
      if (has_key_rows(p.op)) key.norm2 = row_norms(c.inputs[1], d.D);
      break;
    case Op::attention_decode:
      query.norm2 = row_norms(c.inputs[0], d.D);
      for (extent_t b = 0; b < d.B; ++b)
        for (extent_t h = 0; h < d.H; ++h) query.seen.push_back(extent_t(c.inputs[3].get({b})));
      break;
    case Op::rmsnorm:
    case Op::mlp_swiglu:
      query.norm2 = row_norms(c.inputs[0], p.op == Op::rmsnorm ? d.D : d.Dm);
      break;
    case Op::block:
      break;
  }
  oracle::Selection rows;
  choose_by_shape(query, tiles, /*key=*/false, sample, rows.query_rows);
  choose_by_data(query, rng, /*key=*/false, sample, rows.query_rows);
  if (has_key_rows(p.op)) {
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
  const auto [query, key] = row_spaces(p);
  Sample fixed;  // the strata the shape fixes
  oracle::SelectionBound bound;
  choose_by_shape(query, tiles, /*key=*/false, fixed, bound.rows.query_rows);
  // The data's strata; decode's fewest/most keys too (up to three rows of
  // its one run, see choose_by_shape).
  const extent_t data_rows = kLargestLogitRows + kRandomRows;
  bound.more_query_rows = data_rows + (p.op == Op::attention_decode ? 3 : 0);
  if (has_key_rows(p.op)) {
    choose_by_shape(key, tiles, /*key=*/true, fixed, bound.rows.key_rows);
    bound.more_key_rows = data_rows;
  }
  bound.rows = oracle::normalised(std::move(bound.rows), p);
  return bound;
}

}  // namespace moacert::properties
