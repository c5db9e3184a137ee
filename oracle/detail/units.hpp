// The oracle's units of work: independent slices of a case on which the
// DNF is called unchanged. Each output element belongs to exactly one unit,
// so the passes can run units in parallel (deterministically: an element's
// enclosure never depends on the schedule) and the Ziv loop can narrow only
// the units that still hold an undecided element. Each op lists its units,
// their scratch and their reads in its row of the op table
// (oracle/ops/table.hpp, written in oracle/ops/<family>.cpp):
//
//   attention.fwd        one unit per query row (b, h, i): the DNF on q_i
//                        against the keys row i sees, which under the causal
//                        mask are the prefix j <= i + (M - N) (non-causal
//                        call on that prefix: the same sum, by the definition
//                        of `visible`)
//   attention.bwd        one unit per (b, kv head g): the DNF backward on the
//                        query heads that share g (dk, dv sum over them)
//   attention.fwdbwd     fwd rows, then bwd groups (the DNF fwdbwd is the
//                        two of them)
//   attention.decode     one unit per (b, h)
//   rmsnorm, mlp.swiglu  one unit per row t (an mlp.swiglu unit reads its
//                        row of x alone: its weights are streamed from the
//                        case, detail/streamed_mlp.hpp)
//   block                one unit per batch b (attention mixes the rows)
//
// With a Selection (the sampled oracle, oracle/selection.hpp) only the units
// holding a selected row run, and the backward's are finer: a dQ row
// (b, h, i) is the DNF backward on that one query row against the prefix
// of keys it sees (as fwd_row: O(M·D)); the selected key rows of one
// (b, kv head) are one unit, dnf::attention_bwd_key_rows, which goes once
// over the group's query rows (a key row's dS needs every row's softmax
// normaliser and D_i: O(G·N·M·D) for the group, then O(G·N·D) per key row).
//
// At the MPFI pass, attention's and rmsnorm's units convert none of their
// reads: they stream their rows from the case
// (detail/streamed_attention.hpp, detail/streamed_norm.hpp).
//
// This file holds what is common to every op: the table's lookups, the
// conversion of the rows the units read, and the running of a unit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/detail/streamed_attention.hpp"
#include "oracle/detail/streamed_mlp.hpp"
#include "oracle/detail/streamed_norm.hpp"
#include "oracle/ops/table.hpp"
#include "oracle/selection.hpp"
#include "reference/case.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/block.hpp"
#include "reference/dnf/norm_mlp.hpp"
#include "reference/named.hpp"

namespace moacert::oracle::detail {

using moa::extent_t;
using moa::Index;
using moa::Layout;
using moa::Shape;
using moa::View;

// The units that hold the selected rows (every unit without a selection).
inline std::vector<Unit> units_of(const Problem& p, const Selection* rows = nullptr) {
  return oracle_op(p.op).units(p, rows);
}

// The most scratch one unit's DNF call holds at once, in elements of the
// enclosure type (oracle/memory.cpp multiplies by an element's size).
// At the pass of `conversion` (the MPFI pass's units may hold blocks of
// the rows they stream instead: OracleOp::mpfi_unit_scratch_elements).
inline double unit_scratch_elements(const Problem& p, const Unit& u,
                                    Conversion conversion = Conversion::every_read) {
  const OracleOp& op = oracle_op(p.op);
  if (conversion == Conversion::mpfi && op.mpfi_unit_scratch_elements)
    return op.mpfi_unit_scratch_elements(p, u);
  return op.unit_scratch_elements(p, u);
}

// Whether the pass of `conversion` streams `input` from the case rather
// than converting its rows (OracleOp::streamed_at_mpfi).
inline bool streamed(const Problem& p, Conversion conversion, std::string_view input) {
  if (conversion != Conversion::mpfi) return false;
  const auto& names = oracle_op(p.op).streamed_at_mpfi;
  return std::find(names.begin(), names.end(), input) != names.end();
}

// The reads of one unit a pass converts: one per input its DNF call takes
// (run_unit finds each by the input's name), but those the pass streams.
inline std::vector<Read> reads_of(const Problem& p, const Unit& u,
                                  Conversion conversion = Conversion::every_read) {
  std::vector<Read> reads = oracle_op(p.op).reads(p, u);
  std::erase_if(reads, [&](const Read& r) {
    return streamed(p, conversion, info(p.op).inputs[static_cast<std::size_t>(r.input)]);
  });
  return reads;
}

// Calls f(r) for each query row r (flat, as in selection.hpp) that is
// selected, or for every query row without a selection: the units of most
// ops are one per query row, or per run of them.
template <class F>
void for_each_query_row(const Problem& p, const Selection* rows, F&& f) {
  if (!rows) {
    for (extent_t r = 0; r < query_row_count(p); ++r) f(r);
  } else {
    for (extent_t r : rows->query_rows) f(r);
  }
}

// The reads of a unit of rmsnorm, mlp.swiglu or block: the rows of x at
// `start` of extents `extent`, then every other input (a weight) whole.
inline std::vector<Read> rows_of_x_and_every_weight(const Problem& p, Index start, Shape extent) {
  const std::vector<Shape> shapes = input_shapes(p);
  const std::vector<std::string_view>& names = info(p.op).inputs;
  std::vector<Read> reads{
      {static_cast<int>(input_position(p.op, "x")), std::move(start), std::move(extent)}};
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k] == "x") continue;
    Index zero;
    for (int a = 0; a < shapes[k].rank(); ++a) zero.push_back(0);
    reads.push_back({static_cast<int>(k), zero, shapes[k]});
  }
  return reads;
}

// The rows of one input a read covers: [first, first + count).
struct RowRun {
  extent_t first = 0, count = 0;
};
inline RowRun rows_of(const Shape& input, const Read& r) {
  const extent_t width = input[input.rank() - 1];
  if (width == 0) return {};
  return {moa::row_major_offset(input, r.start) / width, moa::tau(r.extent) / width};
}

// How many rows an input has (the product of its extents but the last).
inline extent_t row_count(const Shape& input) {
  extent_t rows = 1;
  for (int a = 0; a + 1 < input.rank(); ++a) rows *= input[a];
  return rows;
}

// Which rows of each input the units read, as prefix counts: kept[k][r] is
// how many rows of input k before row r some unit reads (size rows + 1, so
// that kept[k][r + n] - kept[k][r] == n says rows r .. r + n - 1 are all
// read). Index inputs (decode's lens) have none: they are kept whole.
using RowsRead = std::vector<std::vector<extent_t>>;
inline RowsRead rows_read(const Problem& p, std::span<const Unit> units,
                          Conversion conversion = Conversion::every_read) {
  const std::vector<Shape> shapes = input_shapes(p);
  RowsRead kept(shapes.size());
  // Each read adds 1 over its run (a difference array), then the runs
  // covered at least once count.
  for (std::size_t k = 0; k < shapes.size(); ++k)
    if (!is_index_input(p, static_cast<int>(k)))
      kept[k].assign(static_cast<std::size_t>(row_count(shapes[k]) + 1), 0);
  for (const Unit& u : units) {
    for (const Read& r : reads_of(p, u, conversion)) {
      const RowRun run = rows_of(shapes[static_cast<std::size_t>(r.input)], r);
      auto& diff = kept[static_cast<std::size_t>(r.input)];
      diff[static_cast<std::size_t>(run.first)] += 1;
      diff[static_cast<std::size_t>(run.first + run.count)] -= 1;
    }
  }
  for (auto& prefix : kept) {
    extent_t cover = 0, before = 0;
    for (extent_t& x : prefix) {
      cover += x;
      x = before;
      before += cover > 0 ? 1 : 0;
    }
  }
  return kept;
}

// The elements of the input rows one unit reads (index inputs aside: kept
// whole, and tiny).
inline double read_elements(const Problem& p, const Unit& u,
                            Conversion conversion = Conversion::every_read) {
  double n = 0;
  for (const Read& r : reads_of(p, u, conversion))
    if (!is_index_input(p, r.input)) n += double(moa::tau(r.extent));
  return n;
}

// The most input elements a pass holds converted at once: enough for
// `threads` units side by side (units reading disjoint rows still run in
// parallel) while that stays within kChunkCapBytes, else one unit's rows
// (a decode kv head's K and V at L = 131072 are 1 GiB of double-double
// intervals; its sampled query heads still share the threads); and at least
// kChunkFloorBytes' worth, so that small units that share their reads (rows
// of rmsnorm reading one weight) are not converted a few at a time. A pass
// holding every kept row instead held a decode sample's eight kv heads as
// double-double intervals, 8 GiB, and would have held them in MPFI at the
// precision cap (docs/oracle.md, "Memory"); resident memory past a couple
// of GiB is what this machine's kind charges most for
// (docs/performance-history.md, "Fresh pages").
inline constexpr double kChunkFloorBytes = 16.0 * 1024 * 1024;
inline constexpr double kChunkCapBytes = 512.0 * 1024 * 1024;
inline double chunk_limit(double largest_unit, int threads, double element_bytes) {
  const double side_by_side = std::max(
      largest_unit, std::min(double(threads) * largest_unit, kChunkCapBytes / element_bytes));
  return std::max(side_by_side, kChunkFloorBytes / element_bytes);
}

// Cuts `units` into consecutive runs whose reads together hold at most
// `limit` elements (rows two units share count once), calling
// f(first, count) for each run in order. A run holds at least one unit, so
// `limit` should be at least the largest unit's read_elements.
template <class F>
void for_each_chunk(const Problem& p, std::span<const Unit> units, Conversion conversion,
                    double limit, F&& f) {
  const std::vector<Shape> shapes = input_shapes(p);
  // The run each row was last counted in (0: none yet).
  std::vector<std::vector<std::uint32_t>> seen(shapes.size());
  for (std::size_t k = 0; k < shapes.size(); ++k)
    if (!is_index_input(p, static_cast<int>(k)))
      seen[k].assign(static_cast<std::size_t>(row_count(shapes[k])), 0);
  std::uint32_t run = 1;
  std::size_t first = 0;
  double held = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const std::vector<Read> reads = reads_of(p, units[u], conversion);
    // The elements unit u adds to the run: its rows the run does not hold.
    auto adds = [&] {
      double n = 0;
      for (const Read& r : reads) {
        if (is_index_input(p, r.input)) continue;
        const Shape& shape = shapes[static_cast<std::size_t>(r.input)];
        const RowRun rows = rows_of(shape, r);
        const auto& s = seen[static_cast<std::size_t>(r.input)];
        for (extent_t row = rows.first; row < rows.first + rows.count; ++row)
          if (s[static_cast<std::size_t>(row)] != run) n += double(shape[shape.rank() - 1]);
      }
      return n;
    };
    double more = adds();
    if (u > first && held + more > limit) {
      f(first, u - first);
      first = u;
      held = 0;
      ++run;
      more = adds();
    }
    for (const Read& r : reads) {
      if (is_index_input(p, r.input)) continue;
      const RowRun rows = rows_of(shapes[static_cast<std::size_t>(r.input)], r);
      auto& s = seen[static_cast<std::size_t>(r.input)];
      for (extent_t row = rows.first; row < rows.first + rows.count; ++row)
        s[static_cast<std::size_t>(row)] = run;
    }
    held += more;
  }
  if (first < units.size()) f(first, units.size() - first);
}

// The largest read_elements of `units` (0 for none).
inline double largest_unit(const Problem& p, std::span<const Unit> units,
                           Conversion conversion = Conversion::every_read) {
  double most = 0;
  for (const Unit& u : units) most = std::max(most, read_elements(p, u, conversion));
  return most;
}

// A unit's DNF call asked for an input its reads (reads_of) do not hold: a
// bug in the op's row of the table.
[[noreturn, gnu::cold, gnu::noinline]] inline void not_read(std::string_view input) {
  throw std::logic_error("oracle: a unit reads no rows of input " + std::string(input));
}

// A unit asked for rows its pass did not convert: a bug in reads_of or in
// the units the pass was given, never a property of the case.
[[noreturn, gnu::cold, gnu::noinline]] inline void not_converted(int input) {
  throw std::logic_error("oracle: a unit reads rows of input " + std::to_string(input) +
                         " that were not converted");
}

// The case's inputs as row-major tensors of the enclosure type T (points:
// every input value is exact in T), holding only the rows the units read
// (rows_read), and decode's lens: the sampled oracle converts the q rows of
// its selected rows and the k, v of their kv heads, not the whole case.
//
// `scale` is Problem::scale() computed here, once: make_inputs runs under
// the default rounding mode, while the first pass runs the units under
// round-upward, where 1/sqrt(D) would come out as another double.
template <class T>
struct Inputs {
  struct Converted {
    Shape shape;                 // the input's whole shape
    std::vector<extent_t> kept;  // rows_read's prefix counts
    std::vector<T> rows;         // the kept rows, in order, row-major
  };
  std::vector<Converted> t;  // ops-table order; lens' slot left empty
  moa::Tensor<std::int64_t> lens;
  double scale = 0;
  const Case* source = nullptr;  // the case itself: the inputs streamed are read from it
  Conversion conversion = Conversion::every_read;  // which reads were converted

  // The read's sub-array, strided as in the whole row-major input.
  // @pre every row of the read was kept (a unit among those make_inputs had)
  View<const T> view(const Read& r) const {
    const Converted& in = t[static_cast<std::size_t>(r.input)];
    const RowRun run = rows_of(in.shape, r);
    const auto first = static_cast<std::size_t>(run.first);
    if (in.kept[first + static_cast<std::size_t>(run.count)] - in.kept[first] != run.count)
      not_converted(r.input);
    const extent_t width = in.shape[in.shape.rank() - 1];
    return View<const T>(in.rows.data() + in.kept[first] * width,
                         Layout::strided(r.extent, Layout::row_major(in.shape).strides()));
  }
};

// make_inputs: `recycled`, a previous run's inputs of the same pass, lends
// its rows' storage, so that a pass converts its runs into memory it has
// already touched. Fresh pages are what large runs cost (a decode kv head's
// K and V are 1 GiB of double-double intervals at L = 131072): on this
// project's machines, memory past about 2 GiB resident took 5-8 s per GiB
// to fault in (docs/performance-history.md, "Fresh pages").
template <class T>
Inputs<T> make_inputs(const Case& c, std::span<const Unit> units, Conversion conversion,
                      Inputs<T> recycled = {}) {
  Inputs<T> in;
  in.conversion = conversion;
  in.scale = c.problem.scale();
  in.source = &c;
  RowsRead kept = rows_read(c.problem, units, conversion);
  // Reused only where every input's rows fit in what they held before: a
  // larger run drops the old storage first, so that a pass never holds two
  // runs at once (the memory statement, oracle/memory.cpp).
  for (std::size_t k = 0; k < recycled.t.size() && k < kept.size(); ++k) {
    const Shape& shape = c.inputs[k].shape();
    if (!kept[k].empty() && double(kept[k].back()) * double(shape[shape.rank() - 1]) >
                                double(recycled.t[k].rows.capacity())) {
      recycled = {};
      break;
    }
  }
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const AnyTensor& src = c.inputs[k];
    if (is_index_input(c.problem, static_cast<int>(k))) {
      in.t.emplace_back();
      in.lens = moa::Tensor<std::int64_t>(src.shape());
      for (const Index& idx : moa::iota(src.shape()))
        in.lens.view()(idx) = static_cast<std::int64_t>(src.get(idx));
      continue;
    }
    typename Inputs<T>::Converted t{src.shape(), std::move(kept[k]), {}};
    if (k < recycled.t.size()) {
      t.rows = std::move(recycled.t[k].rows);
      t.rows.clear();  // keeps the capacity
    }
    const extent_t width = t.shape[t.shape.rank() - 1];
    t.rows.reserve(static_cast<std::size_t>(t.kept.back() * width));
    // Visits the kept rows only: a sampled decode keeps a few kv heads of
    // K and V, and walking all their elements cost seconds per pass.
    const auto row_count = static_cast<extent_t>(t.kept.size()) - 1;
    std::vector<double> row(static_cast<std::size_t>(width));
    for (extent_t r = 0; r < row_count; ++r) {
      if (t.kept[static_cast<std::size_t>(r) + 1] == t.kept[static_cast<std::size_t>(r)]) continue;
      src.get_rows(r, 1, row.data());
      for (double x : row) t.rows.push_back(dnf::ScalarTraits<T>::from_double(x));
    }
    in.t.push_back(std::move(t));
  }
  return in;
}

// The sub-array of `v` starting at `start` with extents `extent` (same
// strides): a slice seen as an array of the original rank.
template <class T>
View<T> slice(const View<T>& v, const Index& start, const Shape& extent) {
  const Layout& l = v.layout();
  return View<T>(v.data() + l(start), Layout::strided(extent, l.strides()));
}

// How many of units[first, end) a pass may run, from `first`, as one call
// of the DNF's block of forward rows (dnf::attention_fwd_rows): fwd_row
// units of one (b, h) with consecutive rows i, at most
// dnf::kStatisticsRows of them; 1 for any other unit. Each row's values are
// its unit's alone; the block's reductions meet each block of keys with
// every row while it is in cache (docs/oracle.md, "Sampled").
inline std::size_t forward_run(std::span<const Unit> units, std::size_t first, std::size_t end) {
  const Unit& u = units[first];
  std::size_t n = 1;
  if (u.kind != UnitKind::fwd_row) return n;
  while (first + n < end && n < std::size_t(dnf::kStatisticsRows)) {
    const Unit& next = units[first + n];
    if (next.kind != UnitKind::fwd_row || next.a != u.a || next.b != u.b ||
        next.c != u.c + extent_t(n))
      break;
    ++n;
  }
  return n;
}

// The most scratch one thread of the first pass holds for unit u: a
// forward row's times the rows of its run (forward_run); mlp.swiglu's
// rows all run at once (fast_mlp.cpp), at most T of them (counted per
// thread: an upper bound), and each thread its block of a weight's rows
// (doubles, counted as elements).
inline double first_pass_scratch_elements(const Problem& p, const Unit& u) {
  if (u.kind == UnitKind::mlp_row)
    return double(p.dims.T) * unit_scratch_elements(p, u) + streamed_block_doubles(p.dims);
  const double rows = u.kind == UnitKind::fwd_row ? double(dnf::kStatisticsRows) : 1.0;
  return rows * unit_scratch_elements(p, u);
}

// Runs a forward_run of units as one DNF call, handing each element to
// emit(k, output, flat, value), k the position in `run` of its row's unit,
// and the rows whole to `keep` if given (the first pass's forward memo,
// forward_memo.hpp). The keys and values read are the last row's (under
// the causal mask, the longest prefix; each row sees its own, as its unit
// alone does).
template <class T, class Emit>
void run_forward_rows(const Problem& p, const Inputs<T>& in, std::span<const Unit> run, Emit&& emit,
                      const std::function<void(const dnf::ForwardRows<T>&)>& keep = {}) {
  const Dims& d = p.dims;
  const auto q_input = static_cast<int>(input_position(p.op, "q"));
  const auto k_input = static_cast<int>(input_position(p.op, "k"));
  const auto v_input = static_cast<int>(input_position(p.op, "v"));
  const extent_t b = run.front().a, h = run.front().b, i0 = run.front().c;
  const T scale = dnf::ScalarTraits<T>::from_double(in.scale);
  auto rows = [&] {
    if (streamed(p, in.conversion, "k"))
      return streamed_fwd_rows<T>(*in.source, scale, b, h, i0, extent_t(run.size()));
    std::vector<View<const T>> q_rows;
    View<const T> kh, vh;
    for (const Unit& u : run) {
      for (const Read& r : reads_of(p, u, in.conversion)) {
        if (r.input == q_input) q_rows.push_back(in.view(r).sub({0, 0, 0}));  // (D)
        if (&u != &run.back()) continue;
        if (r.input == k_input) kh = in.view(r).sub({0, 0});  // (seen, D)
        if (r.input == v_input) vh = in.view(r).sub({0, 0});
      }
    }
    return dnf::attention_fwd_rows<T>(q_rows, kh, vh, scale, p.mask(), i0, d.N, d.M);
  };
  const dnf::ForwardRows<T> f = rows();
  if (keep) keep(f);
  const std::vector<Shape> outputs = output_shapes(p);
  const int o_out = static_cast<int>(output_position(p.op, "o")),
            lse_out = static_cast<int>(output_position(p.op, "lse"));
  for (std::size_t k = 0; k < run.size(); ++k) {
    const extent_t i = i0 + extent_t(k);
    for (extent_t x = 0; x < d.D; ++x)
      emit(k, o_out, moa::row_major_offset(outputs[std::size_t(o_out)], {b, h, i, x}),
           f.o[k * std::size_t(d.D) + std::size_t(x)]);
    emit(k, lse_out, moa::row_major_offset(outputs[std::size_t(lse_out)], {b, h, i}), f.lse[k]);
  }
}

// Runs the DNF on one unit and hands every output element it produces to
// emit(output, row_major_flat_index, value). The unit's inputs are its
// reads (reads_of), each found by its input's name. `given`: a
// bwd_key_rows unit's forward rows where the caller has them
// (dnf::attention_bwd_key_rows).
template <class T, class Emit>
void run_unit(const Problem& p, const Inputs<T>& in, const Unit& u, Emit&& emit,
              const dnf::GivenForwardRows<T>& given = {}) {
  using Tensor = moa::Tensor<T>;
  const Dims& d = p.dims;
  const std::vector<Read> reads = reads_of(p, u, in.conversion);
  // The unit's read of input `name` (reads_of: one per input it reads).
  auto input = [&](std::string_view name) {
    const auto k = static_cast<int>(input_position(p.op, name));
    for (const Read& r : reads)
      if (r.input == k) return in.view(r);
    not_read(name);
  };
  // Output k's row-major offset of index i (its shape from the ops table).
  const std::vector<Shape> outputs = output_shapes(p);
  auto flat = [&](int k, const Index& i) {
    return moa::row_major_offset(outputs[static_cast<std::size_t>(k)], i);
  };
  // Output `name`'s position in the signature (dq is output 0 of
  // attention.bwd, 2 of attention.fwdbwd).
  auto output = [&](std::string_view name) {
    return static_cast<int>(output_position(p.op, name));
  };
  // A backward unit's inputs, q k v do (where the pass converted them), and
  // the positions of its outputs dq dk dv (attention.bwd's 0 1 2, fwdbwd's
  // 2 3 4).
  struct Backward {
    View<const T> q, k, v, dout;
    int dq, dk, dv;  // output positions
  };
  // At the MPFI pass attention's units read their rows from the case
  // (OracleOp::streamed_at_mpfi, detail/streamed_attention.hpp).
  const bool streaming = streamed(p, in.conversion, "k");
  auto backward = [&] {
    Backward bwd{{}, {}, {}, {}, output("dq"), output("dk"), output("dv")};
    if (!streaming) {
      bwd.q = input("q");
      bwd.k = input("k");
      bwd.v = input("v");
      bwd.dout = input("do");
    }
    return bwd;
  };
  const T scale = dnf::ScalarTraits<T>::from_double(in.scale);

  switch (u.kind) {
    case UnitKind::fwd_row:  // a run of one
      run_forward_rows(p, in, std::span<const Unit>(&u, 1),
                       [&](std::size_t, int k, moa::extent_t at, const T& x) { emit(k, at, x); });
      return;
    case UnitKind::bwd_group: {
      const extent_t b = u.a, g = u.b, group = d.H / d.Hkv;
      const Backward bwd = backward();
      const Shape qs{1, group, d.N, d.D}, ks{1, 1, d.M, d.D};
      Tensor dk(ks), dv(ks);
      if (streaming) {  // each dQ row handed on as it is done
        streamed_bwd_group<T>(
            *in.source, scale, b, g,
            [&](extent_t hh, extent_t i, const T* row) {
              for (extent_t x = 0; x < d.D; ++x)
                emit(bwd.dq, flat(bwd.dq, {b, g * group + hh, i, x}), row[x]);
            },
            dk.storage().data(), dv.storage().data());
      } else {
        Tensor dq(qs);
        dnf::attention_bwd<T>(bwd.q, bwd.k, bwd.v, bwd.dout, in.scale, p.mask(), dq.view(),
                              dk.view(), dv.view());
        for (const Index& i : moa::iota(qs))
          emit(bwd.dq, flat(bwd.dq, {b, g * group + i[1], i[2], i[3]}), dq.view()(i));
      }
      for (const Index& i : moa::iota(ks)) {
        const auto at = flat(bwd.dk, {b, g, i[2], i[3]});  // dk and dv alike
        emit(bwd.dk, at, dk.view()(i));
        emit(bwd.dv, at, dv.view()(i));
      }
      return;
    }
    case UnitKind::bwd_query_row: {
      // dq row (b, h, i): the DNF backward's dQ row against the keys it
      // sees (as fwd_row), (1,1,1,D) against (1,1,seen,D).
      const extent_t b = u.a, h = u.b, i = u.c;
      const Backward bwd = backward();
      Tensor dq(Shape{d.D});
      if (streaming)
        streamed_bwd_query_row<T>(*in.source, scale, b, h, i,
                                  dnf::visible_keys(p.mask(), i, d.N, d.M, d.M),
                                  dq.storage().data());
      else
        dnf::attention_bwd_query_row<T>(bwd.q, bwd.k, bwd.v, bwd.dout, in.scale, dq.view());
      for (extent_t x = 0; x < d.D; ++x) emit(bwd.dq, flat(bwd.dq, {b, h, i, x}), dq.view()(x));
      return;
    }
    case UnitKind::bwd_key_rows: {
      const extent_t b = u.a, g = u.b;
      const Backward bwd = backward();
      const auto rows = static_cast<extent_t>(u.keys.size());
      Tensor dk(Shape{rows, d.D}), dv(Shape{rows, d.D});
      if (streaming)
        streamed_bwd_key_rows<T>(*in.source, scale, b, g, u.keys, dk.storage().data(),
                                 dv.storage().data());
      else
        dnf::attention_bwd_key_rows<T>(bwd.q, bwd.k, bwd.v, bwd.dout, in.scale, p.mask(), u.keys,
                                       dk.view(), dv.view(), given);
      for (extent_t t = 0; t < rows; ++t) {
        for (extent_t x = 0; x < d.D; ++x) {
          const auto at = flat(bwd.dk, {b, g, u.keys[static_cast<std::size_t>(t)], x});
          emit(bwd.dk, at, dk.view()(t, x));
          emit(bwd.dv, at, dv.view()(t, x));
        }
      }
      return;
    }
    case UnitKind::decode_head: {
      const extent_t b = u.a, h = u.b;
      const View<const std::int64_t> lens =
          slice(View<const std::int64_t>(in.lens.view()), {b}, {1});
      Tensor o(Shape{1, 1, 1, d.D}), lse(Shape{1, 1, 1});
      if (streaming)
        streamed_decode_head<T>(*in.source, scale, b, h, lens(0), o.storage().data(),
                                lse.storage()[0]);
      else  // q (1,1,1,D), k and v (1,1,L,D)
        dnf::attention_decode<T>(input("q"), input("k"), input("v"), lens, in.scale, o.view(),
                                 lse.view());
      // o (B,H,1,D) and lse (B,H,1), row-major: head b·H + h.
      const extent_t head = b * d.H + h;
      const int o_out = output("o"), lse_out = output("lse");
      for (extent_t x = 0; x < d.D; ++x) emit(o_out, head * d.D + x, o.view()(0, 0, 0, x));
      emit(lse_out, head, lse.view()(0, 0, 0));
      return;
    }
    case UnitKind::norm_row: {
      const extent_t t = u.a;
      if (streamed(p, in.conversion, "x")) {  // at the MPFI pass (detail/streamed_norm.hpp)
        streamed_norm_row<T>(*in.source, t, emit);
        return;
      }
      const auto x = input("x");  // (1,D)
      Tensor y(Shape{1, d.D});
      dnf::rmsnorm<T>(x, input("w"), p.params.eps, y.view());
      const int y_out = output("y");
      for (extent_t c = 0; c < d.D; ++c) emit(y_out, t * d.D + c, y.view()(0, c));
      return;
    }
    case UnitKind::mlp_row:  // the weights streamed from the case, not converted
      streamed_mlp_row<T>(*in.source, u.a, emit);
      return;
    case UnitKind::batch: {
      const extent_t b = u.a;
      const auto x = input("x");  // (1,N,Dm)
      Tensor y(Shape{1, d.N, d.Dm});
      dnf::block<T>(x, input("attn_norm"), input("wq"), input("wk"), input("wv"), input("wo"),
                    input("mlp_norm"), input("w1"), input("w3"), input("w2"), d.H, d.Hkv,
                    p.params.eps, y.view());
      const int y_out = output("y");
      for (const Index& i : moa::iota(y.shape()))
        emit(y_out, (b * d.N + i[1]) * d.Dm + i[2], y.view()(i));
      return;
    }
  }
}

}  // namespace moacert::oracle::detail
