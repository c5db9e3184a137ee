// The sampled oracle (docs/oracle.md#sampled): a selection of rows answers,
// element for element and bit for bit, what the whole oracle answers, for
// every op, both through the first pass (f32) and through MPFI (f64), and
// marks every other element as not evaluated.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "oracle/bounds.hpp"
#include "oracle/detail/bound_helpers.hpp"
#include "oracle/detail/forward_memo.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/memory.hpp"
#include "oracle/ops/table.hpp"
#include "oracle/oracle.hpp"
#include "oracle/selection.hpp"
#include "tests/support/harness.hpp"

namespace moacert::oracle {
namespace {

using moa::extent_t;

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// About a third of the rows of each kind, drawn from `seed`, the last row
// always among them (it is where causal prefixes are longest).
Selection some_rows(const Problem& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Selection s;
  auto draw = [&](extent_t count, std::vector<extent_t>& rows) {
    for (extent_t r = 0; r < count; ++r)
      if (rng() % 3 == 0 || r == count - 1) rows.push_back(r);
  };
  draw(query_row_count(p), s.query_rows);
  draw(key_row_count(p), s.key_rows);
  return s;
}

// Shapes that give the backward a group of two query heads per kv head and
// causal rows that see no key (N > M) or all keys (N < M); and one long
// enough that rows and keys cross the blocks the first pass and the bounds
// share reads in (16 and 8 query rows, 32 and 64 keys): the sampled key
// rows' statistics and a selection's forward bounds are computed in other
// blocks than the whole problem's, and must not differ in a bit.
std::vector<Dims> shapes_for(Op op) {
  std::vector<Dims> out{test::small_dims(op)};
  if (op == Op::attention_fwd || op == Op::attention_bwd || op == Op::attention_fwdbwd) {
    out.push_back({.B = 2, .H = 4, .Hkv = 2, .N = 5, .M = 3, .D = 4});
    out.push_back({.B = 1, .H = 2, .Hkv = 2, .N = 3, .M = 6, .D = 2});
    out.push_back({.B = 1, .H = 2, .Hkv = 1, .N = 37, .M = 150, .D = 20});
  }
  return out;
}

class SampledFormat : public ::testing::TestWithParam<Format> {};
INSTANTIATE_TEST_SUITE_P(Oracle, SampledFormat, ::testing::Values(Format::f32, Format::f64),
                         [](const auto& p) { return std::string(name(p.param)); });

TEST_P(SampledFormat, SelectedRowsAreTheWholeOraclesAnswer) {
  const Format f = GetParam();
  std::uint64_t seed = 40;
  for (const OpInfo& op : all_ops()) {
    for (const Dims& dims : shapes_for(op.op)) {
      for (const bool causal : {false, true}) {
        ++seed;
        SCOPED_TRACE(std::string(op.name) + (causal ? " causal" : "") + " seed " +
                     std::to_string(seed));
        const Case c = test::make_case(op.op, f, dims, seed, causal);
        const Answer whole = evaluate(c);
        const Selection rows = some_rows(c.problem, seed);
        const Answer part = evaluate(c, {.rows = rows});
        std::int64_t evaluated = 0;
        for (std::size_t k = 0; k < whole.outputs.size(); ++k) {
          const TensorAnswer &w = whole.outputs[k], &s = part.outputs[k];
          const auto& chosen = is_key_output(op.op, int(k)) ? rows.key_rows : rows.query_rows;
          const extent_t per_row = row_length(c.problem, int(k));
          for (std::size_t i = 0; i < w.rounded.size(); ++i) {
            const bool selected =
                std::binary_search(chosen.begin(), chosen.end(), extent_t(i) / per_row);
            ASSERT_EQ(s.evaluated[i], selected) << s.name << "[" << i << "]";
            EXPECT_TRUE(w.evaluated[i]);
            if (!selected) {
              EXPECT_TRUE(std::isnan(s.rounded[i]) && std::isnan(s.exact[i].hi));
              EXPECT_FALSE(s.undetermined[i]);
              continue;
            }
            ++evaluated;
            EXPECT_TRUE(
                same_bits(s.rounded[i], w.rounded[i]) && same_bits(s.exact[i].hi, w.exact[i].hi) &&
                same_bits(s.exact[i].lo, w.exact[i].lo) && s.undetermined[i] == w.undetermined[i])
                << s.name << "[" << i << "]: sampled " << s.rounded[i] << " (" << s.exact[i].hi
                << " + " << s.exact[i].lo << "), whole " << w.rounded[i] << " (" << w.exact[i].hi
                << " + " << w.exact[i].lo << ")";
          }
        }
        EXPECT_EQ(part.elements, evaluated);
        EXPECT_GT(evaluated, 0);
      }
    }
  }
}

// The op table's rows (oracle/ops/): each output's elements are those of
// its rows, query rows or, for the outputs the table names, key rows, each
// row_length elements, none left over; and the key outputs it names are
// outputs of the op.
TEST(OracleOpTable, RowsHoldEveryOutputElement) {
  for (const OpInfo& op : all_ops()) {
    const Case c = test::make_case(op.op, Format::f32, test::small_dims(op.op), 1);
    const Problem& p = c.problem;
    const std::vector<moa::Shape> shapes = output_shapes(p);
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const bool key = is_key_output(op.op, int(k));
      const extent_t rows = key ? key_row_count(p) : query_row_count(p);
      EXPECT_EQ(rows * row_length(p, int(k)), moa::tau(shapes[k]))
          << op.name << " " << op.outputs[k] << (key ? " (key rows)" : " (query rows)");
    }
    for (const std::string_view name : oracle_op(op.op).key_outputs)
      EXPECT_NE(std::find(op.outputs.begin(), op.outputs.end(), name), op.outputs.end())
          << op.name << " has no output " << name;
  }
}

// The backward's key rows alone, with no query row: dk and dv are the
// whole oracle's, dq is not evaluated.
TEST(SampledOracle, KeyRowsAlone) {
  const Case c = test::make_case(Op::attention_bwd, Format::f32,
                                 {.B = 1, .H = 4, .Hkv = 2, .N = 6, .M = 5, .D = 3}, 7, true);
  const Answer whole = evaluate(c);
  const Answer part = evaluate(c, {.rows = Selection{{}, {0, 4, 7}}});
  for (std::size_t i = 0; i < part.outputs[0].evaluated.size(); ++i)
    EXPECT_FALSE(part.outputs[0].evaluated[i]);
  for (const int k : {1, 2}) {
    for (const extent_t row : {0, 4, 7}) {
      for (extent_t x = 0; x < 3; ++x) {
        const auto i = static_cast<std::size_t>(row * 3 + x);
        ASSERT_TRUE(part.outputs[k].evaluated[i]);
        EXPECT_TRUE(same_bits(part.outputs[k].exact[i].hi, whole.outputs[k].exact[i].hi));
      }
    }
  }
}

// A generated backward's forward (properties::make_case evaluates it with
// keep_forward_rows) leaves its first-pass rows for the backward's own key
// rows (detail/forward_memo.hpp): taken, the answer is bit for bit the one
// computed without them; and taken only by a case whose q, k, v, scale and
// mask are the forward's. Two batches and two kv heads, so that a row
// taken from another batch, head or group would show.
TEST(SampledOracle, ABackwardTakesItsOwnForwardsRowsAndNoOthers) {
  for (const bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    const Case c =
        test::make_case(Op::attention_bwd, Format::f32,
                        {.B = 2, .H = 4, .Hkv = 2, .N = 37, .M = 150, .D = 20}, 61, causal);
    const Selection rows = some_rows(c.problem, 61);
    detail::keep_forward_memo(nullptr);
    const Answer alone = evaluate(c, {.rows = rows});
    EXPECT_EQ(alone.forward_rows_given, 0);

    // The forward of c's q, k, v, its rows kept.
    Case fwd{c.problem, {}};
    fwd.problem.op = Op::attention_fwd;
    for (const char* name : {"q", "k", "v"})
      fwd.inputs.push_back(c.inputs[input_position(Op::attention_bwd, name)]);
    evaluate(fwd, {.exact_ulp_bits = 0, .keep_forward_rows = true});

    const Answer given = evaluate(c, {.rows = rows});
    EXPECT_GT(given.forward_rows_given, 0);
    for (std::size_t k = 0; k < alone.outputs.size(); ++k) {
      const TensorAnswer &a = alone.outputs[k], &g = given.outputs[k];
      for (std::size_t i = 0; i < a.rounded.size(); ++i) {
        ASSERT_EQ(a.evaluated[i], g.evaluated[i]);
        EXPECT_TRUE(
            same_bits(a.rounded[i], g.rounded[i]) && same_bits(a.exact[i].hi, g.exact[i].hi) &&
            same_bits(a.exact[i].lo, g.exact[i].lo) && a.undetermined[i] == g.undetermined[i])
            << a.name << "[" << i << "]: " << a.exact[i].hi << " alone, " << g.exact[i].hi
            << " with the forward's rows";
      }
    }

    // One element of q, k or v other (the last row's last element, which
    // every causal row sees of k and v), or another scale: not its forward.
    for (const char* name : {"q", "k", "v"}) {
      Case other = c;
      AnyTensor& t = other.inputs[input_position(Op::attention_bwd, name)];
      const moa::Shape s = t.shape();
      const moa::Index last{s[0] - 1, s[1] - 1, s[2] - 1, s[3] - 1};
      t.set(last, t.get(last) / 2);
      EXPECT_EQ(evaluate(other, {.rows = rows}).forward_rows_given, 0) << name << " other";
    }
    Case rescaled = c;
    rescaled.problem.params.scale = 0.25;
    EXPECT_EQ(evaluate(rescaled, {.rows = rows}).forward_rows_given, 0) << "scale other";
  }
  detail::keep_forward_memo(nullptr);
}

// The a priori bounds of the selected rows (apriori_bounds with rows) are
// the whole bounds' on those rows, for every op (those that bound every row
// anyway included).
TEST(SampledOracle, BoundsOfSelectedRowsAreTheWholeBounds) {
  std::uint64_t seed = 90;
  for (const OpInfo& op : all_ops()) {
    for (const Dims& dims : shapes_for(op.op)) {
      for (const bool causal : {false, true}) {
        SCOPED_TRACE(std::string(op.name) + " N=" + std::to_string(dims.N) +
                     (causal ? " causal" : ""));
        const Case c = test::make_case(op.op, Format::f32, dims, ++seed, causal);
        const Selection rows = some_rows(c.problem, seed);
        const auto whole = apriori_bounds(c), part = apriori_bounds(c, {}, &rows);
        for (std::size_t k = 0; k < whole.size(); ++k) {
          const auto& chosen = is_key_output(op.op, int(k)) ? rows.key_rows : rows.query_rows;
          const extent_t per_row = row_length(c.problem, int(k));
          for (std::size_t i = 0; i < whole[k].size(); ++i) {
            if (std::binary_search(chosen.begin(), chosen.end(), extent_t(i) / per_row)) {
              EXPECT_TRUE(same_bits(part[k][i], whole[k][i])) << k << "[" << i << "]";
            }
          }
        }
      }
    }
  }
}

// The backward's bounds of the selected rows alone (dQ's rows; dK's and
// dV's key rows, their sums over every query row of the group) are bit for
// bit the whole problem's on those rows: over several seeds, grouped heads,
// more queries than keys and fewer, causal or not. Were a key row's sums cut
// to the selected query rows (a third of them), this would fail.
TEST(SampledOracle, BackwardBoundsOfSelectedRowsAreTheWholeBounds) {
  for (const Op op : {Op::attention_bwd, Op::attention_fwdbwd}) {
    for (const Dims& d : {Dims{.B = 2, .H = 4, .Hkv = 2, .N = 7, .M = 9, .D = 3},
                          Dims{.B = 1, .H = 3, .Hkv = 1, .N = 11, .M = 5, .D = 4},
                          Dims{.B = 1, .H = 2, .Hkv = 1, .N = 37, .M = 150, .D = 20}}) {
      for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        const bool causal = seed % 2 == 0;
        SCOPED_TRACE(std::string(info(op).name) + " N=" + std::to_string(d.N) + " seed " +
                     std::to_string(seed) + (causal ? " causal" : ""));
        const Case c = test::make_case(op, Format::f32, d, seed, causal);
        const Selection rows = some_rows(c.problem, seed);
        const auto whole = apriori_bounds(c), part = apriori_bounds(c, {}, &rows);
        int compared = 0;
        for (std::size_t k = 0; k < whole.size(); ++k) {
          const auto& chosen = is_key_output(op, int(k)) ? rows.key_rows : rows.query_rows;
          const extent_t per_row = row_length(c.problem, int(k));
          for (std::size_t i = 0; i < whole[k].size(); ++i) {
            if (!std::binary_search(chosen.begin(), chosen.end(), extent_t(i) / per_row)) continue;
            ++compared;
            EXPECT_TRUE(same_bits(part[k][i], whole[k][i]))
                << info(op).outputs[k] << "[" << i << "]: " << part[k][i] << " vs " << whole[k][i];
          }
        }
        EXPECT_GT(compared, 0);
      }
    }
  }
}

// Decode's bounds, computed one kv head at a time from that head's rows
// alone (ops/attention.cpp, decode_bounds), are bit for bit the forward's
// bounds over the whole widened tensors, for every row and for a selection
// of rows, over batches with other cache lengths and grouped heads. Were a
// head's cache taken from the wrong batch or group, or a batch's length
// from another, this would fail.
TEST(SampledOracle, DecodeBoundsByKvHeadAreTheWholeTensorsBounds) {
  const Dims d{.B = 3, .H = 6, .Hkv = 3, .N = 1, .M = 9, .D = 5};
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Case c = test::make_case(Op::attention_decode, Format::f32, d, seed);
    const auto in = inputs_by_name(c.problem.op, c.inputs);
    std::vector<extent_t> lens;
    for (extent_t b = 0; b < d.B; ++b) lens.push_back(extent_t(in["lens"].get({b})));
    auto whole = [&](const AnyTensor& t) {
      detail::Mat m(t.shape());
      detail::widen_rows(t, 0, m);
      return m;
    };
    const Selection rows = some_rows(c.problem, seed);
    std::vector<std::uint8_t> wanted(std::size_t(d.B * d.H), 0);
    for (extent_t r : rows.query_rows) wanted[std::size_t(r)] = 1;
    const detail::RoundingUnits u = detail::rounding_units(Format::f32, {});
    for (const bool sampled : {false, true}) {
      const detail::ForwardBounds f = detail::attention_forward_bounds(
          whole(in["q"]), whole(in["k"]), whole(in["v"]), c.problem.scale(), /*causal=*/false,
          &lens, u, {}, sampled ? &wanted : nullptr);
      const auto by_head = sampled ? apriori_bounds(c, {}, &rows) : apriori_bounds(c);
      const auto y = outputs_by_name(c.problem.op, by_head);
      ASSERT_EQ(y["o"].size(), f.o.storage().size());
      for (std::size_t i = 0; i < y["o"].size(); ++i)
        EXPECT_TRUE(same_bits(y["o"][i], f.o.storage()[i])) << "o[" << i << "]";
      for (std::size_t i = 0; i < y["lse"].size(); ++i)
        EXPECT_TRUE(same_bits(y["lse"][i], f.lse.storage()[i])) << "lse[" << i << "]";
    }
  }
}

// The sampled oracle converts only the input rows its units read
// (detail/units.hpp, make_inputs): for a query row of the forward, its q
// row and the keys and values it sees of its own kv head, nothing of the
// other heads; for the backward's key rows, the group's q and dO and the
// head's k, v, and never o or lse (the backward recomputes them).
TEST(SampledOracle, ConvertsOnlyTheRowsItsUnitsRead) {
  const Dims d{.B = 1, .H = 2, .Hkv = 2, .N = 5, .M = 6, .D = 3};
  auto converted = [](const Case& c, const Selection* rows) {
    const std::vector<detail::Unit> units = detail::units_of(c.problem, rows);
    const detail::Inputs<double> in =
        detail::make_inputs<double>(c, units, detail::Conversion::every_read);
    std::vector<std::size_t> n;
    for (const auto& t : in.t) n.push_back(t.rows.size());
    return n;
  };
  using Sizes = std::vector<std::size_t>;
  const auto D = std::size_t(d.D), M = std::size_t(d.M), N = std::size_t(d.N);
  const Case fwd = test::make_case(Op::attention_fwd, Format::f32, d, 3);
  const Selection row_7{{7}, {}};  // (b 0, h 1, i 2): kv head 1
  EXPECT_EQ(converted(fwd, &row_7), (Sizes{D, M * D, M * D}));
  EXPECT_EQ(converted(fwd, nullptr), (Sizes{2 * N * D, 2 * M * D, 2 * M * D}));
  // Causal: row i sees keys j <= i + (M - N), the first row two of them.
  const Case causal = test::make_case(Op::attention_fwd, Format::f32, d, 3, /*causal=*/true);
  const Selection row_0{{0}, {}};
  EXPECT_EQ(converted(causal, &row_0), (Sizes{D, 2 * D, 2 * D}));

  const Case bwd = test::make_case(Op::attention_bwd, Format::f32, d, 4);
  const Selection key_row_8{{}, {8}};  // (b 0, g 1, j 2)
  // q k v o lse do: one head's q and do, its k and v; o and lse not at all.
  EXPECT_EQ(converted(bwd, &key_row_8), (Sizes{N * D, M * D, M * D, 0, 0, N * D}));

  // Decode: a (b, h) reads its q and its kv head's whole cache.
  const Dims dd{.B = 2, .H = 4, .Hkv = 2, .N = 1, .M = 7, .D = 3};
  const Case decode = test::make_case(Op::attention_decode, Format::f32, dd, 5);
  const Selection head_5{{5}, {}};  // (b 1, h 1): kv head (1, 0)
  EXPECT_EQ(converted(decode, &head_5), (Sizes{D, 7 * D, 7 * D, 0}));
}

// A unit may read only rows that were converted for it: a view of others
// is refused, never handed out.
TEST(SampledOracle, RefusesAViewOfRowsNotConverted) {
  const Dims d{.B = 1, .H = 2, .Hkv = 2, .N = 5, .M = 6, .D = 3};
  const Case c = test::make_case(Op::attention_fwd, Format::f32, d, 3);
  const Selection row_7{{7}, {}};
  const std::vector<detail::Unit> units = detail::units_of(c.problem, &row_7);
  const detail::Inputs<double> in =
      detail::make_inputs<double>(c, units, detail::Conversion::every_read);
  const detail::Unit other{detail::UnitKind::fwd_row, 0, 0, 1};  // head 0: not converted
  for (const detail::Read& r : detail::reads_of(c.problem, other))
    EXPECT_THROW((void)in.view(r), std::logic_error) << "input " << r.input;
}

// The statement of a sample grows with the rows its units read: below the
// whole oracle's when the sample leaves heads out, and a bound with more
// rows states at least what any of those rows adds.
TEST(SampledOracle, MemoryStatementCountsTheRowsRead) {
  Problem p;
  p.op = Op::attention_decode;
  p.dims = {.B = 4, .H = 4, .Hkv = 4, .N = 1, .M = 1000, .D = 64};
  const SelectionBound one{{{5}, {}}}, two{{{5, 6}, {}}}, one_and_more{{{5}, {}}, 1, 0};
  const double whole = memory_needed(p, 1024, 1), a = memory_needed(p, 1024, 1, &one),
               b = memory_needed(p, 1024, 1, &two),
               bound = memory_needed(p, 1024, 1, &one_and_more);
  EXPECT_LT(a, b);
  EXPECT_LE(b, bound);
  EXPECT_LT(bound, whole);
  // Every row in the selection: the whole oracle's inputs exactly.
  SelectionBound all;
  for (extent_t r = 0; r < query_row_count(p); ++r) all.rows.query_rows.push_back(r);
  EXPECT_DOUBLE_EQ(memory_needed(p, 1024, 1, &all), whole);
}

TEST(SampledOracle, RefusesRowsOutOfRange) {
  const Case c =
      test::make_case(Op::attention_fwd, Format::f32, test::small_dims(Op::attention_fwd), 3);
  EXPECT_THROW(evaluate(c, {.rows = Selection{{6}, {}}}), std::invalid_argument);
  EXPECT_THROW(evaluate(c, {.rows = Selection{{0}, {0}}}), std::invalid_argument);
}

TEST(SampledOracle, SelectionSyntax) {
  Problem p;
  p.op = Op::attention_bwd;
  p.dims = {.B = 1, .H = 2, .Hkv = 1, .N = 8, .M = 9, .D = 2};
  const Selection s = parse_selection("q=3,0..2,2;k=8,1", p);
  EXPECT_EQ(s.query_rows, (std::vector<extent_t>{0, 1, 2, 3}));
  EXPECT_EQ(s.key_rows, (std::vector<extent_t>{1, 8}));
  EXPECT_EQ(str(s), "q=0..3;k=1,8");
  EXPECT_EQ(parse_selection("15", p).query_rows, std::vector<extent_t>{15});
  for (const char* bad : {"", "q=", "q=16", "k=9", "q=3..1", "q=0..99999999999", "x=1", "q=1;",
                          "q=a", "q=-1", "q=1.5"}) {
    EXPECT_THROW(parse_selection(bad, p), std::invalid_argument) << bad;
  }
  p.op = Op::attention_fwd;
  EXPECT_THROW(parse_selection("k=0", p), std::invalid_argument);
}

}  // namespace
}  // namespace moacert::oracle
