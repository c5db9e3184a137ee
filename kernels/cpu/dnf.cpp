// `cpu.dnf`: the DNF itself, instantiated in the format's accumulation type
// (double for f64, float for f32, bf16 and f16) and run as written — the
// naive loop nest of every op. It is the baseline that an a priori bound
// must let pass (a plain sequential summation order), and the variant every
// op has even before a tuned kernel exists. Single-threaded and strided.
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/block.hpp"
#include "reference/dnf/norm_mlp.hpp"
#include "reference/named.hpp"

namespace moacert::kernels::cpu {
namespace {

// The tensor in the accumulation type A: a view of the caller's data when
// the storage type is A already, else a row-major widened copy.
template <class A>
struct Widened {
  moa::Tensor<A> copy;
  moa::View<const A> view;
};

template <class A>
Widened<A> widen(const TensorRef& t) {
  Widened<A> w;
  if (t.dtype == dtype_v<A>) {
    w.view = t.view<const A>();
    return w;
  }
  w.copy = moa::Tensor<A>(t.layout.shape());
  auto dst = w.copy.view();
  for (const moa::Index& i : moa::iota(t.layout.shape())) {
    switch (t.dtype) {
      case DType::bf16:
        dst(i) = A(static_cast<float>(t.view<const bf16>()(i)));
        break;
      case DType::f16:
        dst(i) = A(static_cast<float>(t.view<const f16>()(i)));
        break;
      case DType::f32:
        dst(i) = A(t.view<const float>()(i));
        break;
      case DType::f64:
        dst(i) = A(t.view<const double>()(i));
        break;
      case DType::i64:
        break;
    }
  }
  w.view = w.copy.view();
  return w;
}

// Stores an accumulation-type result into the output, rounding once.
template <class A>
void narrow(const moa::Tensor<A>& from, const TensorRef& to) {
  for (const moa::Index& i : moa::iota(from.shape())) {
    const A x = from.view()(i);
    switch (to.dtype) {
      case DType::bf16:
        to.view<bf16>()(i) = bf16(static_cast<float>(x));
        break;
      case DType::f16:
        to.view<f16>()(i) = f16(static_cast<float>(x));
        break;
      case DType::f32:
        to.view<float>()(i) = static_cast<float>(x);
        break;
      case DType::f64:
        to.view<double>()(i) = static_cast<double>(x);
        break;
      case DType::i64:
        break;
    }
  }
}

// One call's tensors in the accumulation type A, by the signature's names:
// the float inputs widened, the outputs to be narrowed once at the end, and
// the caller's own inputs for an index input (decode's lens), which is
// never widened.
template <class A>
struct DnfArgs {
  const Problem& p;
  ByName<moa::View<const A>> in;
  ByName<moa::View<A>> out;
  ByName<const TensorRef> given;
  // The accumulation type, for the generic lambdas of the table.
  using Accumulation = A;
};

// The DNF of one op: its evaluation in double (f64) and in float (the other
// formats), and its FLOPs read as loops (2 per multiply-add, 1 per
// exp/div/sqrt). Both evaluations come from one generic lambda.
struct DnfOp {
  std::function<void(const DnfArgs<double>&)> run_f64;
  std::function<void(const DnfArgs<float>&)> run_f32;
  std::function<double(const Dims&)> flops;
};

template <class Call>
DnfOp dnf_op(Call call, std::function<double(const Dims&)> flops) {
  return {call, call, std::move(flops)};
}

// One N×M×D product of the attention family.
double attention_product(const Dims& d) {
  return 2.0 * d.B * d.H * d.N * d.M * d.D;
}

// The one switch on the op in cpu.dnf: a new op fails to compile here
// (-Wswitch) until its row is written.
DnfOp row_of(Op op) {
  switch (op) {
    case Op::attention_fwd:
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::attention_fwd<A>(a.in["q"], a.in["k"], a.in["v"], a.p.scale(), a.p.mask(),
                                  a.out["o"], a.out["lse"]);
          },
          [](const Dims& d) { return 2 * attention_product(d); });
    case Op::attention_bwd:  // o and lse are recomputed by the DNF
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::attention_bwd<A>(a.in["q"], a.in["k"], a.in["v"], a.in["do"], a.p.scale(),
                                  a.p.mask(), a.out["dq"], a.out["dk"], a.out["dv"]);
          },
          [](const Dims& d) { return 5 * attention_product(d); });
    case Op::attention_fwdbwd:
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::attention_fwdbwd<A>(a.in["q"], a.in["k"], a.in["v"], a.in["do"], a.p.scale(),
                                     a.p.mask(), a.out["o"], a.out["lse"], a.out["dq"], a.out["dk"],
                                     a.out["dv"]);
          },
          [](const Dims& d) { return 7 * attention_product(d); });
    case Op::attention_decode:
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::attention_decode<A>(a.in["q"], a.in["k"], a.in["v"],
                                     a.given["lens"].template view<const std::int64_t>(),
                                     a.p.scale(), a.out["o"], a.out["lse"]);
          },
          [](const Dims& d) { return 2 * attention_product(d); });
    case Op::rmsnorm:
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::rmsnorm<A>(a.in["x"], a.in["w"], a.p.params.eps, a.out["y"]);
          },
          [](const Dims& d) { return 4.0 * d.T * d.D; });
    case Op::mlp_swiglu:
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::mlp_swiglu<A>(a.in["x"], a.in["w1"], a.in["w3"], a.in["w2"], a.out["y"]);
          },
          [](const Dims& d) { return 6.0 * d.T * d.Dm * d.F; });
    case Op::block:
      return dnf_op(
          [](const auto& a) {
            using A = typename std::decay_t<decltype(a)>::Accumulation;
            dnf::block<A>(a.in["x"], a.in["attn_norm"], a.in["wq"], a.in["wk"], a.in["wv"],
                          a.in["wo"], a.in["mlp_norm"], a.in["w1"], a.in["w3"], a.in["w2"],
                          a.p.dims.H, a.p.dims.Hkv, a.p.params.eps, a.out["y"]);
          },
          [](const Dims& d) {
            return 2.0 * d.B * d.N * d.Dm * (2 * d.H * d.D + 2 * d.Hkv * d.D + 3 * d.F) +
                   4.0 * d.B * d.H * d.N * d.N * d.D;
          });
  }
  throw std::logic_error("cpu.dnf: no table row for op " + std::to_string(static_cast<int>(op)));
}

const DnfOp& dnf_of(Op op) {
  static const std::vector<DnfOp> table = [] {
    std::vector<DnfOp> t;
    for (const OpInfo& o : all_ops()) t.push_back(row_of(o.op));
    return t;
  }();
  return table[static_cast<std::size_t>(op)];
}

template <class A>
void run_dnf(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
             const std::function<void(const DnfArgs<A>&)>& evaluate) {
  std::vector<Widened<A>> widened(in.size());  // index inputs stay empty
  std::vector<moa::View<const A>> x(in.size());
  for (std::size_t k = 0; k < in.size(); ++k)
    if (!is_index_input(p.op, k)) x[k] = (widened[k] = widen<A>(in[k])).view;
  std::vector<moa::Tensor<A>> y;
  std::vector<moa::View<A>> y_views;
  for (const TensorRef& t : out) y.emplace_back(t.layout.shape());
  for (moa::Tensor<A>& t : y) y_views.push_back(t.view());
  evaluate(DnfArgs<A>{p, inputs_by_name(p.op, x), outputs_by_name(p.op, y_views),
                      inputs_by_name(p.op, in)});
  for (std::size_t k = 0; k < out.size(); ++k) narrow(y[k], out[k]);
}

Cost dnf_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  Cost c;
  double in_elems = 0, out_elems = 0;
  for (const auto& s : input_shapes(p)) in_elems += double(moa::tau(s));
  for (const auto& s : output_shapes(p)) out_elems += double(moa::tau(s));
  c.bytes_read = in_elems * bytes;
  c.bytes_written = out_elems * bytes;
  c.flops = dnf_of(p.op).flops(d);
  // One row of scores per query row, plus the block's activations.
  c.peak_extra_bytes = 8.0 * (d.M + d.N * (d.H + 2 * d.Hkv) * d.D + d.N * d.F);
  return c;
}

}  // namespace

void register_dnf(Registry& r) {
  for (const OpInfo& op : all_ops()) {
    r.add(Variant{
        .name = "cpu.dnf",
        .op = op.op,
        .backend = "cpu",
        .role = Role::dnf,
        .formats = {Format::f64, Format::f32, Format::bf16, Format::f16},
        .accepts_strided = true,
        .deterministic = true,
        .summary = "the DNF run as written, in the accumulation type (naive baseline)",
        .cost = dnf_cost,
        .run =
            [](const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
               const RunOptions&) {
              if (p.format == Format::f64)
                run_dnf<double>(p, in, out, dnf_of(p.op).run_f64);
              else
                run_dnf<float>(p, in, out, dnf_of(p.op).run_f32);
            },
    });
  }
}

}  // namespace moacert::kernels::cpu
