// `cpu.dnf`: the DNF itself, instantiated in the format's accumulation type
// (double for f64, float for f32, bf16 and f16) and run as written — the
// naive loop nest of every op. It is the baseline that an a priori bound
// must let pass (a plain sequential summation order), and the variant every
// op has even before a tuned kernel exists. Single-threaded and strided.
#include <span>
#include <vector>

#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/attention.hpp"
#include "reference/dnf/block.hpp"
#include "reference/dnf/norm_mlp.hpp"

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

template <class A>
void run_dnf(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out) {
  std::vector<Widened<A>> x;
  for (std::size_t k = 0; k < in.size(); ++k)
    if (!is_index_input(p, static_cast<int>(k))) x.push_back(widen<A>(in[k]));
  std::vector<moa::Tensor<A>> y;
  for (const TensorRef& t : out) y.emplace_back(t.layout.shape());
  auto v = [&](std::size_t k) { return x[k].view; };
  auto o = [&](std::size_t k) { return y[k].view(); };
  const double scale = p.scale();
  switch (p.op) {
    case Op::attention_fwd:
      dnf::attention_fwd<A>(v(0), v(1), v(2), scale, p.causal(), o(0), o(1));
      break;
    case Op::attention_bwd:  // o and lse (inputs 3, 4) are recomputed by the DNF
      dnf::attention_bwd<A>(v(0), v(1), v(2), v(5), scale, p.causal(), o(0), o(1), o(2));
      break;
    case Op::attention_fwdbwd:
      dnf::attention_fwdbwd<A>(v(0), v(1), v(2), v(3), scale, p.causal(), o(0), o(1), o(2), o(3),
                               o(4));
      break;
    case Op::attention_decode:
      dnf::attention_decode<A>(v(0), v(1), v(2), in[3].view<const std::int64_t>(), scale, o(0),
                               o(1));
      break;
    case Op::rmsnorm:
      dnf::rmsnorm<A>(v(0), v(1), p.params.eps, o(0));
      break;
    case Op::mlp_swiglu:
      dnf::mlp_swiglu<A>(v(0), v(1), v(2), v(3), o(0));
      break;
    case Op::block:
      dnf::block<A>(v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7), v(8), v(9), p.dims.H,
                    p.dims.Hkv, p.params.eps, o(0));
      break;
  }
  for (std::size_t k = 0; k < out.size(); ++k) narrow(y[k], out[k]);
}

// FLOPs of the DNF read as loops (2 per multiply-add, 1 per exp/div/sqrt).
Cost dnf_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  Cost c;
  const double attn = 2.0 * d.B * d.H * d.N * d.M * d.D;  // one N×M×D product
  double in_elems = 0, out_elems = 0;
  for (const auto& s : input_shapes(p)) in_elems += double(moa::tau(s));
  for (const auto& s : output_shapes(p)) out_elems += double(moa::tau(s));
  c.bytes_read = in_elems * bytes;
  c.bytes_written = out_elems * bytes;
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_decode:
      c.flops = 2 * attn;
      break;
    case Op::attention_bwd:
      c.flops = 5 * attn;
      break;
    case Op::attention_fwdbwd:
      c.flops = 7 * attn;
      break;
    case Op::rmsnorm:
      c.flops = 4.0 * d.T * d.D;
      break;
    case Op::mlp_swiglu:
      c.flops = 6.0 * d.T * d.Dm * d.F;
      break;
    case Op::block:
      c.flops = 2.0 * d.B * d.N * d.Dm * (2 * d.H * d.D + 2 * d.Hkv * d.D + 3 * d.F) +
                4.0 * d.B * d.H * d.N * d.N * d.D;
      break;
  }
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
                run_dnf<double>(p, in, out);
              else
                run_dnf<float>(p, in, out);
            },
    });
  }
}

}  // namespace moacert::kernels::cpu
