// The oracle's units of work: independent slices of a case on which the
// DNF is called unchanged. Each output element belongs to exactly one unit,
// so the passes can run units in parallel (deterministically: an element's
// enclosure never depends on the schedule) and the Ziv loop can narrow only
// the units that still hold an undecided element.
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
//   rmsnorm, mlp.swiglu  one unit per row t
//   block                one unit per batch b (attention mixes the rows)
//
// With a Selection (the sampled oracle, oracle/selection.hpp) only the units
// holding a selected row run, and the backward's are finer: a dQ row
// (b, h, i) is the DNF backward on that one query row against the prefix
// of keys it sees (as fwd_row: O(M·D)); the selected key rows of one
// (b, kv head) are one unit, dnf::attention_bwd_key_rows, which goes once
// over the group's query rows (a key row's dS needs every row's softmax
// normaliser and D_i: O(G·N·M·D) for the group, then O(G·N·D) per key row).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/selection.hpp"
#include "reference/case.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/block.hpp"
#include "reference/dnf/norm_mlp.hpp"

namespace moacert::oracle::detail {

using moa::extent_t;
using moa::Index;
using moa::Layout;
using moa::Shape;
using moa::View;

enum class UnitKind : std::uint8_t {
  fwd_row,
  bwd_group,
  bwd_query_row,  // sampled: dq[b,h,i,:]
  bwd_key_rows,   // sampled: dk, dv rows `keys` of (b, g)
  decode_head,
  row,
  batch
};

struct Unit {
  UnitKind kind;
  extent_t a = 0, b = 0, c = 0;  // (b, h, i) for fwd_row; (b, g) for bwd_group; ...
  std::vector<extent_t> keys;    // bwd_key_rows: the key rows j, ascending
};

// The units that hold the selected rows (every unit without a selection).
inline std::vector<Unit> units_of(const Problem& p, const Selection* rows = nullptr) {
  const Dims& d = p.dims;
  std::vector<Unit> units;
  // Query row r = (b·H + h)·N + i, selected or all.
  auto each_query_row = [&](auto&& f) {
    if (!rows) {
      for (extent_t r = 0; r < query_row_count(p); ++r) f(r);
    } else {
      for (extent_t r : rows->query_rows) f(r);
    }
  };
  auto fwd_rows = [&] {
    each_query_row([&](extent_t r) {
      units.push_back({UnitKind::fwd_row, r / (d.H * d.N), r / d.N % d.H, r % d.N});
    });
  };
  auto bwd_groups = [&] {
    if (!rows) {
      for (extent_t b = 0; b < d.B; ++b)
        for (extent_t g = 0; g < d.Hkv; ++g) units.push_back({UnitKind::bwd_group, b, g, 0});
      return;
    }
    for (extent_t r : rows->query_rows)
      units.push_back({UnitKind::bwd_query_row, r / (d.H * d.N), r / d.N % d.H, r % d.N});
    for (extent_t r : rows->key_rows) {  // ascending: one unit per (b, g) met
      const extent_t bg = r / d.M;
      if (units.empty() || units.back().kind != UnitKind::bwd_key_rows ||
          units.back().a * d.Hkv + units.back().b != bg)
        units.push_back({UnitKind::bwd_key_rows, bg / d.Hkv, bg % d.Hkv, 0});
      units.back().keys.push_back(r % d.M);
    }
  };
  switch (p.op) {
    case Op::attention_fwd:
      fwd_rows();
      break;
    case Op::attention_bwd:
      bwd_groups();
      break;
    case Op::attention_fwdbwd:
      fwd_rows();
      bwd_groups();
      break;
    case Op::attention_decode:
      each_query_row([&](extent_t r) {
        units.push_back({UnitKind::decode_head, r / d.H, r % d.H, 0});
      });
      break;
    case Op::rmsnorm:
    case Op::mlp_swiglu:
      each_query_row([&](extent_t t) { units.push_back({UnitKind::row, t, 0, 0}); });
      break;
    case Op::block:  // a batch holds rows b·N .. b·N + N - 1
      each_query_row([&](extent_t r) {
        if (units.empty() || units.back().a != r / d.N)
          units.push_back({UnitKind::batch, r / d.N, 0, 0});
      });
      break;
  }
  return units;
}

// The most scratch one unit's DNF call holds at once, in elements of the
// enclosure type (oracle/memory.cpp multiplies by an element's size): a
// query row's scores and probabilities (and, for a dQ row, the partial dK,
// dV it drops), a kv group's probabilities and their gradients, the key
// rows' dK, dV with one query row's statistics, a row's hidden layer, a
// batch's attention and MLP.
inline double unit_scratch_elements(const Problem& p, const Unit& u) {
  const Dims& d = p.dims;
  const double group = double(d.H) / double(std::max<extent_t>(1, d.Hkv));
  const double row = 4.0 * double(d.M) + 2.0 * double(d.D);  // one query row's softmax
  switch (u.kind) {
    case UnitKind::fwd_row:
    case UnitKind::decode_head:
      return row;
    case UnitKind::bwd_group:
      return 4.0 * group * double(d.N) * double(d.M) + 4.0 * group * double(d.N) * double(d.D);
    case UnitKind::bwd_query_row:
      return row + 2.0 * double(d.M) * double(d.D);
    case UnitKind::bwd_key_rows:
      return row + 2.0 * double(u.keys.size()) * double(d.D);
    case UnitKind::row:
      return p.op == Op::rmsnorm ? 2.0 * double(d.D) : 3.0 * double(d.F) + double(d.Dm);
    case UnitKind::batch:
      return 2.0 * double(d.H) * double(d.N) * double(d.N) +
             double(d.N) *
                 (4.0 * double(d.H) * double(d.D) + 3.0 * double(d.F) + 4.0 * double(d.Dm));
  }
  return 0;
}

// What a unit reads of one (non-index) input: the sub-array at `start` of
// extents `extent`. Every read is a run of whole consecutive rows of the
// input (a row: the elements that share every index but the last), which
// is what lets Inputs convert only the rows some unit reads and still hand
// each unit a strided view.
struct Read {
  int input;  // ops-table order
  Index start;
  Shape extent;
};

// The reads of one unit, in the order run_unit takes them (see there).
inline std::vector<Read> reads_of(const Problem& p, const Unit& u) {
  const Dims& d = p.dims;
  const bool fused = p.op == Op::attention_fwdbwd;
  const int do_input = fused ? 3 : 5;  // bwd: q k v o lse do; fwdbwd: q k v do
  const extent_t group = d.H / std::max<extent_t>(1, d.Hkv);
  // Keys query row i sees: all, or the causal prefix j <= i + (M - N).
  auto seen = [&](extent_t i) {
    return p.causal() ? std::clamp<extent_t>(i + (d.M - d.N) + 1, 0, d.M) : d.M;
  };
  // Query row (b, h, i), then the keys and the values it sees: a forward
  // row's reads, and a backward query row's but its do row.
  auto query_row = [&](extent_t b, extent_t h, extent_t i) {
    const extent_t g = h / group;
    return std::vector<Read>{{0, {b, h, i, 0}, {1, 1, 1, d.D}},
                             {1, {b, g, 0, 0}, {1, 1, seen(i), d.D}},
                             {2, {b, g, 0, 0}, {1, 1, seen(i), d.D}}};
  };
  auto whole = [&](int k) {
    const Shape s = input_shapes(p)[static_cast<std::size_t>(k)];
    Index zero;
    for (int a = 0; a < s.rank(); ++a) zero.push_back(0);
    return Read{k, zero, s};
  };
  switch (u.kind) {
    case UnitKind::fwd_row:  // q row, then the keys and values it sees
      return query_row(u.a, u.b, u.c);
    case UnitKind::bwd_group:
    case UnitKind::bwd_key_rows: {  // the group's q, its k, v, the group's do
      const extent_t b = u.a, g = u.b;
      const Shape qs{1, group, d.N, d.D}, ks{1, 1, d.M, d.D};
      return {{0, {b, g * group, 0, 0}, qs},
              {1, {b, g, 0, 0}, ks},
              {2, {b, g, 0, 0}, ks},
              {do_input, {b, g * group, 0, 0}, qs}};
    }
    case UnitKind::bwd_query_row: {  // q row, the keys and values it sees, do row
      std::vector<Read> r = query_row(u.a, u.b, u.c);
      r.push_back({do_input, {u.a, u.b, u.c, 0}, {1, 1, 1, d.D}});
      return r;
    }
    case UnitKind::decode_head: {  // q, the whole cache of its kv head (lens: Inputs::lens)
      const extent_t b = u.a, h = u.b, g = h / group;
      return {{0, {b, h, 0, 0}, {1, 1, 1, d.D}},
              {1, {b, g, 0, 0}, {1, 1, d.M, d.D}},
              {2, {b, g, 0, 0}, {1, 1, d.M, d.D}}};
    }
    case UnitKind::row: {  // row t of x, then every weight whole
      const extent_t t = u.a, width = p.op == Op::rmsnorm ? d.D : d.Dm;
      std::vector<Read> r{{0, {t, 0}, {1, width}}};
      for (int k = 1; k < static_cast<int>(input_shapes(p).size()); ++k) r.push_back(whole(k));
      return r;
    }
    case UnitKind::batch: {  // batch b of x, then every weight whole
      std::vector<Read> r{{0, {u.a, 0, 0}, {1, d.N, d.Dm}}};
      for (int k = 1; k < static_cast<int>(input_shapes(p).size()); ++k) r.push_back(whole(k));
      return r;
    }
  }
  return {};
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
inline RowsRead rows_read(const Problem& p, std::span<const Unit> units) {
  const std::vector<Shape> shapes = input_shapes(p);
  RowsRead kept(shapes.size());
  // Each read adds 1 over its run (a difference array), then the runs
  // covered at least once count.
  for (std::size_t k = 0; k < shapes.size(); ++k)
    if (!is_index_input(p, static_cast<int>(k)))
      kept[k].assign(static_cast<std::size_t>(row_count(shapes[k]) + 1), 0);
  for (const Unit& u : units) {
    for (const Read& r : reads_of(p, u)) {
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

template <class T>
Inputs<T> make_inputs(const Case& c, std::span<const Unit> units) {
  Inputs<T> in;
  in.scale = c.problem.scale();
  RowsRead kept = rows_read(c.problem, units);
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
    const extent_t width = t.shape[t.shape.rank() - 1];
    t.rows.reserve(static_cast<std::size_t>(t.kept.back() * width));
    extent_t n = 0;  // row-major position
    for (const Index& idx : moa::iota(t.shape)) {
      const auto row = static_cast<std::size_t>(n++ / width);
      if (t.kept[row + 1] > t.kept[row])
        t.rows.push_back(dnf::ScalarTraits<T>::from_double(src.get(idx)));
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

// Runs the DNF on one unit and hands every output element it produces to
// emit(output, row_major_flat_index, value). The unit's inputs are its
// reads (reads_of), in their order.
template <class T, class Emit>
void run_unit(const Problem& p, const Inputs<T>& in, const Unit& u, Emit&& emit) {
  using Tensor = moa::Tensor<T>;
  const Dims& d = p.dims;
  const std::vector<Read> reads = reads_of(p, u);
  auto input = [&](std::size_t n) { return in.view(reads[n]); };
  // Output k's row-major offset of index i (its shape from the ops table).
  const std::vector<Shape> outputs = output_shapes(p);
  auto flat = [&](int k, const Index& i) {
    return moa::row_major_offset(outputs[static_cast<std::size_t>(k)], i);
  };
  // A backward unit's inputs, q k v do (reads_of), and where its outputs
  // lie: attention.bwd's are dq dk dv, fwdbwd's o lse dq dk dv.
  struct Backward {
    View<const T> q, k, v, dout;
    int dq, dk, dv;  // output indices
  };
  auto backward = [&] {
    const int dq = p.op == Op::attention_fwdbwd ? 2 : 0;
    return Backward{input(0), input(1), input(2), input(3), dq, dq + 1, dq + 2};
  };

  switch (u.kind) {
    case UnitKind::fwd_row: {
      // The keys row i sees: all, or the causal prefix (reads_of).
      const extent_t b = u.a, h = u.b, i = u.c;
      const auto q = input(0);  // (1,1,1,D)
      const auto k = input(1);  // (1,1,seen,D)
      const auto v = input(2);  // (1,1,seen,D)
      Tensor o(Shape{1, 1, 1, d.D}), lse(Shape{1, 1, 1});
      dnf::attention_fwd<T>(q, k, v, in.scale, /*causal=*/false, o.view(), lse.view());
      for (extent_t x = 0; x < d.D; ++x) emit(0, flat(0, {b, h, i, x}), o.view()(0, 0, 0, x));
      emit(1, flat(1, {b, h, i}), lse.view()(0, 0, 0));
      return;
    }
    case UnitKind::bwd_group: {
      const extent_t b = u.a, g = u.b, group = d.H / d.Hkv;
      const Backward bwd = backward();
      const Shape qs = bwd.q.shape(), ks = bwd.k.shape();  // (1,G,N,D), (1,1,M,D)
      Tensor dq(qs), dk(ks), dv(ks);
      dnf::attention_bwd<T>(bwd.q, bwd.k, bwd.v, bwd.dout, in.scale, p.causal(), dq.view(),
                            dk.view(), dv.view());
      for (const Index& x : moa::iota(qs))
        emit(bwd.dq, flat(bwd.dq, {b, g * group + x[1], x[2], x[3]}), dq.view()(x));
      for (const Index& x : moa::iota(ks)) {
        const auto at = flat(bwd.dk, {b, g, x[2], x[3]});  // dk and dv alike
        emit(bwd.dk, at, dk.view()(x));
        emit(bwd.dv, at, dv.view()(x));
      }
      return;
    }
    case UnitKind::bwd_query_row: {
      // dq row (b, h, i): the DNF backward on that query row against the
      // keys it sees (as fwd_row); the dk, dv it also computes are partial
      // and dropped.
      const extent_t b = u.a, h = u.b, i = u.c;
      const Backward bwd = backward();
      // (1,1,1,D), (1,1,seen,D)
      Tensor dq(bwd.q.shape()), dk(bwd.k.shape()), dv(bwd.k.shape());
      dnf::attention_bwd<T>(bwd.q, bwd.k, bwd.v, bwd.dout, in.scale,
                            /*causal=*/false, dq.view(), dk.view(), dv.view());
      for (extent_t x = 0; x < d.D; ++x)
        emit(bwd.dq, flat(bwd.dq, {b, h, i, x}), dq.view()(0, 0, 0, x));
      return;
    }
    case UnitKind::bwd_key_rows: {
      const extent_t b = u.a, g = u.b;
      const Backward bwd = backward();
      const auto rows = static_cast<extent_t>(u.keys.size());
      Tensor dk(Shape{rows, d.D}), dv(Shape{rows, d.D});
      dnf::attention_bwd_key_rows<T>(bwd.q, bwd.k, bwd.v, bwd.dout, in.scale, p.causal(), u.keys,
                                     dk.view(), dv.view());
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
      const auto q = input(0), k = input(1), v = input(2);  // (1,1,1,D), (1,1,L,D)
      const View<const std::int64_t> lens =
          slice(View<const std::int64_t>(in.lens.view()), {b}, {1});
      Tensor o(Shape{1, 1, 1, d.D}), lse(Shape{1, 1, 1});
      dnf::attention_decode<T>(q, k, v, lens, in.scale, o.view(), lse.view());
      // o (B,H,1,D) and lse (B,H,1), row-major: head b·H + h.
      const extent_t head = b * d.H + h;
      for (extent_t x = 0; x < d.D; ++x) emit(0, head * d.D + x, o.view()(0, 0, 0, x));
      emit(1, head, lse.view()(0, 0, 0));
      return;
    }
    case UnitKind::row: {
      const extent_t t = u.a;
      if (p.op == Op::rmsnorm) {
        const auto x = input(0);  // (1,D)
        Tensor y(Shape{1, d.D});
        dnf::rmsnorm<T>(x, input(1), p.params.eps, y.view());
        for (extent_t c = 0; c < d.D; ++c) emit(0, t * d.D + c, y.view()(0, c));
      } else {
        const auto x = input(0);  // (1,Dm)
        Tensor y(Shape{1, d.Dm});
        dnf::mlp_swiglu<T>(x, input(1), input(2), input(3), y.view());
        for (extent_t c = 0; c < d.Dm; ++c) emit(0, t * d.Dm + c, y.view()(0, c));
      }
      return;
    }
    case UnitKind::batch: {
      const extent_t b = u.a;
      const auto x = input(0);  // (1,N,Dm)
      Tensor y(Shape{1, d.N, d.Dm});
      dnf::block<T>(x, input(1), input(2), input(3), input(4), input(5), input(6), input(7),
                    input(8), input(9), d.H, d.Hkv, p.params.eps, y.view());
      for (const Index& i : moa::iota(y.shape()))
        emit(0, (b * d.N + i[1]) * d.Dm + i[2], y.view()(i));
      return;
    }
  }
}

}  // namespace moacert::oracle::detail
