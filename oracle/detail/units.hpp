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
// query row's scores and probabilities, a kv group's probabilities and their
// gradients, a row's hidden layer, a batch's attention and MLP.
inline double unit_scratch_elements(const Problem& p) {
  const Dims& d = p.dims;
  const double group = double(d.H) / double(std::max<extent_t>(1, d.Hkv));
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_decode:
      return 4.0 * double(d.M) + 2.0 * double(d.D);
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      return 4.0 * group * double(d.N) * double(d.M) + 4.0 * group * double(d.N) * double(d.D);
    case Op::rmsnorm:
      return 2.0 * double(d.D);
    case Op::mlp_swiglu:
      return 3.0 * double(d.F) + double(d.Dm);
    case Op::block:
      return 2.0 * double(d.H) * double(d.N) * double(d.N) +
             double(d.N) *
                 (4.0 * double(d.H) * double(d.D) + 3.0 * double(d.F) + 4.0 * double(d.Dm));
  }
  return 0;
}

// The case's inputs as row-major tensors of the enclosure type T (points:
// every input value is exact in T), and decode's lens.
//
// `scale` is Problem::scale() computed here, once: make_inputs runs under
// the default rounding mode, while the first pass runs the units under
// round-upward, where 1/sqrt(D) would come out as another double.
template <class T>
struct Inputs {
  std::vector<moa::Tensor<T>> t;  // ops-table order; lens' slot left empty
  moa::Tensor<std::int64_t> lens;
  double scale = 0;
};

template <class T>
Inputs<T> make_inputs(const Case& c) {
  Inputs<T> in;
  in.scale = c.problem.scale();
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const AnyTensor& src = c.inputs[k];
    if (is_index_input(c.problem, static_cast<int>(k))) {
      in.t.emplace_back();
      in.lens = moa::Tensor<std::int64_t>(src.shape());
      for (const Index& idx : moa::iota(src.shape()))
        in.lens.view()(idx) = static_cast<std::int64_t>(src.get(idx));
      continue;
    }
    moa::Tensor<T> t(src.shape());
    for (const Index& idx : moa::iota(src.shape()))
      t.view()(idx) = dnf::ScalarTraits<T>::from_double(src.get(idx));
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
// emit(output, row_major_flat_index, value).
template <class T, class Emit>
void run_unit(const Problem& p, const Inputs<T>& in, const Unit& u, Emit&& emit) {
  using Tensor = moa::Tensor<T>;
  const Dims& d = p.dims;
  auto input = [&](int k) { return View<const T>(in.t[static_cast<std::size_t>(k)].view()); };
  auto flat = [](const Shape& s, const Index& i) { return moa::row_major_offset(s, i); };

  switch (u.kind) {
    case UnitKind::fwd_row: {
      const extent_t b = u.a, h = u.b, i = u.c, g = h / (d.H / d.Hkv);
      // Keys row i sees: all, or the causal prefix j <= i + (M - N).
      extent_t seen = d.M;
      if (p.causal()) seen = std::clamp<extent_t>(i + (d.M - d.N) + 1, 0, d.M);
      const auto q = slice(input(0), {b, h, i, 0}, {1, 1, 1, d.D});     // (1,1,1,D)
      const auto k = slice(input(1), {b, g, 0, 0}, {1, 1, seen, d.D});  // (1,1,seen,D)
      const auto v = slice(input(2), {b, g, 0, 0}, {1, 1, seen, d.D});
      Tensor o(Shape{1, 1, 1, d.D}), lse(Shape{1, 1, 1});
      dnf::attention_fwd<T>(q, k, v, in.scale, /*causal=*/false, o.view(), lse.view());
      const Shape os{d.B, d.H, d.N, d.D}, ls{d.B, d.H, d.N};
      for (extent_t x = 0; x < d.D; ++x) emit(0, flat(os, {b, h, i, x}), o.view()(0, 0, 0, x));
      emit(1, flat(ls, {b, h, i}), lse.view()(0, 0, 0));
      return;
    }
    case UnitKind::bwd_group: {
      const extent_t b = u.a, g = u.b, group = d.H / d.Hkv;
      // attention.bwd: q k v o lse do -> dq dk dv; fwdbwd: q k v do -> o lse dq dk dv
      const bool fused = p.op == Op::attention_fwdbwd;
      const int do_input = fused ? 3 : 5, first_output = fused ? 2 : 0;
      const Shape qs{1, group, d.N, d.D}, ks{1, 1, d.M, d.D};
      const auto q = slice(input(0), {b, g * group, 0, 0}, qs);
      const auto k = slice(input(1), {b, g, 0, 0}, ks);
      const auto v = slice(input(2), {b, g, 0, 0}, ks);
      const auto dout = slice(input(do_input), {b, g * group, 0, 0}, qs);
      Tensor dq(qs), dk(ks), dv(ks);
      dnf::attention_bwd<T>(q, k, v, dout, in.scale, p.causal(), dq.view(), dk.view(), dv.view());
      const Shape qfull{d.B, d.H, d.N, d.D}, kfull{d.B, d.Hkv, d.M, d.D};
      for (const Index& x : moa::iota(qs))
        emit(first_output, flat(qfull, {b, g * group + x[1], x[2], x[3]}), dq.view()(x));
      for (const Index& x : moa::iota(ks)) {
        emit(first_output + 1, flat(kfull, {b, g, x[2], x[3]}), dk.view()(x));
        emit(first_output + 2, flat(kfull, {b, g, x[2], x[3]}), dv.view()(x));
      }
      return;
    }
    case UnitKind::bwd_query_row: {
      // dq row (b, h, i): the DNF backward on that query row against the
      // keys it sees (as fwd_row); the dk, dv it also computes are partial
      // and dropped.
      const extent_t b = u.a, h = u.b, i = u.c, g = h / (d.H / d.Hkv);
      const bool fused = p.op == Op::attention_fwdbwd;
      const int do_input = fused ? 3 : 5, dq_output = fused ? 2 : 0;
      extent_t seen = d.M;
      if (p.causal()) seen = std::clamp<extent_t>(i + (d.M - d.N) + 1, 0, d.M);
      const Shape qs{1, 1, 1, d.D}, ks{1, 1, seen, d.D};
      const auto q = slice(input(0), {b, h, i, 0}, qs);
      const auto k = slice(input(1), {b, g, 0, 0}, ks);
      const auto v = slice(input(2), {b, g, 0, 0}, ks);
      const auto dout = slice(input(do_input), {b, h, i, 0}, qs);
      Tensor dq(qs), dk(ks), dv(ks);
      dnf::attention_bwd<T>(q, k, v, dout, in.scale, /*causal=*/false, dq.view(), dk.view(),
                            dv.view());
      const Shape qfull{d.B, d.H, d.N, d.D};
      for (extent_t x = 0; x < d.D; ++x)
        emit(dq_output, flat(qfull, {b, h, i, x}), dq.view()(0, 0, 0, x));
      return;
    }
    case UnitKind::bwd_key_rows: {
      const extent_t b = u.a, g = u.b, group = d.H / d.Hkv;
      const bool fused = p.op == Op::attention_fwdbwd;
      const int do_input = fused ? 3 : 5, dk_output = fused ? 3 : 1;
      const Shape qs{1, group, d.N, d.D}, ks{1, 1, d.M, d.D};
      const auto q = slice(input(0), {b, g * group, 0, 0}, qs);
      const auto k = slice(input(1), {b, g, 0, 0}, ks);
      const auto v = slice(input(2), {b, g, 0, 0}, ks);
      const auto dout = slice(input(do_input), {b, g * group, 0, 0}, qs);
      const auto rows = static_cast<extent_t>(u.keys.size());
      Tensor dk(Shape{rows, d.D}), dv(Shape{rows, d.D});
      dnf::attention_bwd_key_rows<T>(q, k, v, dout, in.scale, p.causal(), u.keys, dk.view(),
                                     dv.view());
      const Shape kfull{d.B, d.Hkv, d.M, d.D};
      for (extent_t t = 0; t < rows; ++t) {
        for (extent_t x = 0; x < d.D; ++x) {
          const auto at = flat(kfull, {b, g, u.keys[static_cast<std::size_t>(t)], x});
          emit(dk_output, at, dk.view()(t, x));
          emit(dk_output + 1, at, dv.view()(t, x));
        }
      }
      return;
    }
    case UnitKind::decode_head: {
      const extent_t b = u.a, h = u.b, g = h / (d.H / d.Hkv);
      const auto q = slice(input(0), {b, h, 0, 0}, {1, 1, 1, d.D});
      const auto k = slice(input(1), {b, g, 0, 0}, {1, 1, d.M, d.D});
      const auto v = slice(input(2), {b, g, 0, 0}, {1, 1, d.M, d.D});
      const View<const std::int64_t> lens =
          slice(View<const std::int64_t>(in.lens.view()), {b}, {1});
      Tensor o(Shape{1, 1, 1, d.D}), lse(Shape{1, 1, 1});
      dnf::attention_decode<T>(q, k, v, lens, in.scale, o.view(), lse.view());
      const Shape os{d.B, d.H, 1, d.D}, ls{d.B, d.H, 1};
      for (extent_t x = 0; x < d.D; ++x) emit(0, flat(os, {b, h, 0, x}), o.view()(0, 0, 0, x));
      emit(1, flat(ls, {b, h, 0}), lse.view()(0, 0, 0));
      return;
    }
    case UnitKind::row: {
      const extent_t t = u.a;
      if (p.op == Op::rmsnorm) {
        const auto x = slice(input(0), {t, 0}, {1, d.D});
        Tensor y(Shape{1, d.D});
        dnf::rmsnorm<T>(x, input(1), p.params.eps, y.view());
        for (extent_t c = 0; c < d.D; ++c) emit(0, t * d.D + c, y.view()(0, c));
      } else {
        const auto x = slice(input(0), {t, 0}, {1, d.Dm});
        Tensor y(Shape{1, d.Dm});
        dnf::mlp_swiglu<T>(x, input(1), input(2), input(3), y.view());
        for (extent_t c = 0; c < d.Dm; ++c) emit(0, t * d.Dm + c, y.view()(0, c));
      }
      return;
    }
    case UnitKind::batch: {
      const extent_t b = u.a;
      const auto x = slice(input(0), {b, 0, 0}, {1, d.N, d.Dm});
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
