// The LibTorch adaptor: every op of docs/design.md as PyTorch users write it,
// from PyTorch's own operators, registered as the variant `torch`. It is the
// baseline `bench` compares against and the reference of the vs-torch rule,
// and `moacert certify OP --variant torch` certifies PyTorch itself.
//
// The only file of moacert that includes torch/torch.h (CONTRIBUTING.md, style 10, "heavy
// headers stay in their rooms"); built when CMake finds LibTorch
// (MOACERT_HAVE_TORCH) as a module of its own, libmoacert_torch.so, which
// moacert loads on the first call of a `torch` variant (kernels/torch/module.hpp):
// the variants themselves, their costs and the checks of each call are
// torch_variants.cpp's.
//
// Choices that hold for every op:
// * Zero copy in: each input is a torch::from_blob view with the layout's
//   strides (permuted, padded and broadcast layouts alike); a tiled layout,
//   which has no single stride per axis, goes through a row-major temporary
//   (cpu::with_flat_layouts). Outputs are written with copy_ into from_blob
//   views of moacert's output tensors.
// * bf16 is storage with f32 compute (docs/design.md, "Ops"): the inputs are
//   widened to f32, the op runs in f32, and the outputs are rounded once.
//   Eager PyTorch in bf16 would round S, P, dP, dS and every activation to
//   bf16 between operators; PyTorch's own fused attention kernels and its
//   autocast recipes accumulate in f32, which is what the format's bound
//   describes. f16 is not run: LibTorch's CPU matmul has no f16 kernel in
//   1.13.
// * Attention: LibTorch 1.13 (Debian's libtorch-dev) has no
//   scaled_dot_product_attention, so attention is matmul -> scale -> mask ->
//   softmax -> matmul, the composition the issue allows in its absence; GQA
//   and MQA repeat each kv head H/Hkv times with repeat_interleave, as
//   PyTorch users (and SDPA's own math fallback) do.
// * Backward is autograd's: the forward is rebuilt from q, k, v with
//   requires_grad and differentiated against dO.
#include <dlfcn.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "kernels/cpu/common/strided.hpp"
#include "kernels/torch/module.hpp"

namespace moacert::kernels {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

torch::ScalarType scalar_type(DType t) {
  switch (t) {
    case DType::f64:
      return torch::kFloat64;
    case DType::f32:
      return torch::kFloat32;
    case DType::bf16:
      return torch::kBFloat16;
    case DType::f16:
      return torch::kFloat16;
    case DType::i64:
      return torch::kInt64;
  }
  return torch::kFloat32;
}

// A torch view of a flat strided tensor (no copy).
torch::Tensor wrap(const TensorRef& t) {
  const moa::Shape shape = t.layout.shape();
  const moa::Strides strides = t.layout.strides();
  std::vector<int64_t> sizes(shape.begin(), shape.end()), steps(strides.begin(), strides.end());
  return torch::from_blob(t.data, sizes, steps, torch::TensorOptions().dtype(scalar_type(t.dtype)));
}

// An input in the compute type: the view itself for f64 and f32, a widened
// f32 copy for bf16 (storage only; see above).
torch::Tensor compute(const TensorRef& t) {
  torch::Tensor x = wrap(t);
  return x.scalar_type() == torch::kBFloat16 ? x.to(torch::kFloat) : x;
}

// LibTorch's intra-op pool and, when LibTorch sits on OpenBLAS, OpenBLAS's
// own pool get the same thread count as the kernels they are compared with.
void set_threads(int threads) {
  if (threads <= 0) return;
  if (torch::get_num_threads() != threads) torch::set_num_threads(threads);
  using SetFn = void (*)(int);
  static const auto openblas_set =
      reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (openblas_set) openblas_set(threads);
}

// Runs body(inputs, outputs) with flat layouts, the problem's thread count
// and autograd off unless `grad`.
template <class Body>
void run_torch(std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
               const RunOptions& opt, bool grad, Body&& body) {
  set_threads(opt.threads);
  torch::AutoGradMode mode(grad);
  cpu::with_flat_layouts(inputs, outputs, body);
}

// ---- attention ------------------------------------------------------------

struct Attention {
  torch::Tensor o;    // (B,H,N,D)
  torch::Tensor lse;  // (B,H,N)
};

// softmax(scale · Q Kᵀ, masked) V and the log-sum-exp of the scaled, masked
// scores, differentiable when autograd is on. q (B,H,N,D), k, v (B,Hkv,M,D)
// in the compute type. Without autograd, S and P live in workspaces kept
// across calls where the caller asks (RunOptions::keep_workspaces: bench):
// a fresh (B,H,N,M) tensor per call costs more in first-touch page faults
// than the matmul itself on this kind of machine (measured: 0.7 s against
// 0.13 s at N = M = 2048), and the baseline should be LibTorch at its best.
// Both paths call the same ATen kernels in the same order, so
// attention.fwdbwd's o and lse are bitwise attention.fwd's.
Attention attention(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale, bool causal,
                    bool keep_workspaces = false) {
  const int64_t H = q.size(1), Hkv = k.size(1), N = q.size(2), M = k.size(2);
  if (Hkv != H) {  // GQA/MQA: kv head g serves the H/Hkv consecutive query heads
    k = k.repeat_interleave(H / Hkv, /*dim=*/1);
    v = v.repeat_interleave(H / Hkv, /*dim=*/1);
  }
  const bool grad = torch::GradMode::is_enabled();
  const std::vector<int64_t> s_shape = {q.size(0), H, N, M};
  torch::Tensor s, p;  // (B,H,N,M)
  if (grad) {
    s = torch::matmul(q, k.transpose(-2, -1));
  } else {
    static thread_local torch::Tensor s_ws, p_ws;
    for (torch::Tensor* ws : {&s_ws, &p_ws}) {
      if (!ws->defined() || ws->scalar_type() != q.scalar_type() ||
          ws->sizes() != torch::IntArrayRef(s_shape)) {
        *ws = torch::Tensor();  // the old one freed first, never both held
        *ws = torch::empty(s_shape, q.options());
      }
    }
    s = s_ws;
    p = p_ws;
    if (!keep_workspaces) {  // s and p hold the only references once the call returns
      s_ws = torch::Tensor();
      p_ws = torch::Tensor();
    }
    torch::matmul_out(s, q, k.transpose(-2, -1));
  }
  s.mul_(scale);         // S = scale · Q Kᵀ (the product's backward needs neither)
  torch::Tensor no_key;  // (N,1): rows i + (M - N) < 0 see no key
  if (causal) {          // key j invisible from row i when j > i + (M - N)
    const torch::Tensor invisible =
        torch::ones({N, M}, torch::TensorOptions().dtype(torch::kBool)).triu(M - N + 1);
    s.masked_fill_(invisible, -kInf);
    if (N > M) no_key = torch::arange(N).lt(N - M).unsqueeze(-1);
  }
  // LSE: log-sum-exp of the scaled, masked scores; an all -inf row gives
  // -inf (logsumexp shifts by a max it sets to 0 when infinite).
  const torch::Tensor lse = torch::logsumexp(s, -1);  // (B,H,N)
  if (grad) {
    p = torch::softmax(s, -1);
  } else {
    torch::_softmax_out(p, s, -1, /*half_to_float=*/false);  // the kernel of torch::softmax
  }
  // A row that sees no key: softmax of all -inf is 0/0 = NaN in PyTorch;
  // its O is 0 (docs/design.md). masked_fill also zeroes the gradient there.
  if (no_key.defined()) p = grad ? p.masked_fill(no_key, 0) : p.masked_fill_(no_key, 0);
  return {torch::matmul(p, v), lse};
}

void run_attention_fwd(const Problem& pr, std::span<const TensorRef> inputs,
                       std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(inputs, outputs, opt, /*grad=*/false,
            [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
              const Attention a = attention(compute(in[0]), compute(in[1]), compute(in[2]),
                                            pr.scale(), pr.causal(), opt.keep_workspaces);
              wrap(out[0]).copy_(a.o);
              wrap(out[1]).copy_(a.lse);
            });
}

// Autograd's dq, dk, dv of attention at q, k, v against do (and its o, lse
// when asked for): the forward rebuilt from leaves with requires_grad.
// repeat_interleave's backward sums each kv head's gradient over its group.
void attention_autograd(const Problem& pr, std::span<const TensorRef> in, const TensorRef& dout,
                        std::span<const TensorRef> grads, const TensorRef* o,
                        const TensorRef* lse) {
  torch::Tensor q = compute(in[0]).detach().requires_grad_(true);
  torch::Tensor k = compute(in[1]).detach().requires_grad_(true);
  torch::Tensor v = compute(in[2]).detach().requires_grad_(true);
  const Attention a = attention(q, k, v, pr.scale(), pr.causal());
  const auto g = torch::autograd::grad({a.o}, {q, k, v}, {compute(dout)});
  if (o) wrap(*o).copy_(a.o.detach());
  if (lse) wrap(*lse).copy_(a.lse.detach());
  for (std::size_t t = 0; t < 3; ++t) wrap(grads[t]).copy_(g[t]);
}

// attention.bwd: the o and lse inputs (the oracle's rounded values) are
// unused: autograd recomputes the forward, as PyTorch training does. The
// bound allows a recomputed o and lse (docs/bounds.md#attention-backward).
void run_attention_bwd(const Problem& pr, std::span<const TensorRef> inputs,
                       std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(inputs, outputs, opt, /*grad=*/true,
            [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
              attention_autograd(pr, in, in[5], out, nullptr, nullptr);
            });
}

// attention.fwdbwd: one autograd forward and backward; o and lse are the
// forward's, bitwise attention.fwd's (same kernels, same order). Unlike
// cpu.fused it materialises S and P (B,H,N,M): LibTorch has no fused
// backward on the CPU in 1.13.
void run_attention_fwdbwd(const Problem& pr, std::span<const TensorRef> inputs,
                          std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(inputs, outputs, opt, /*grad=*/true,
            [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
              attention_autograd(pr, in, in[3], out.subspan(2), &out[0], &out[1]);
            });
}

// attention.decode: each batch row attends to its own first lens[b] cache
// positions, sliced before the matmul, so PyTorch never reads past lens[b]
// either (a -inf key-padding mask would still read V there: 0 · NaN = NaN
// on a poisoned cache).
void run_attention_decode(const Problem& pr, std::span<const TensorRef> inputs,
                          std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(inputs, outputs, opt, /*grad=*/false,
            [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
              const torch::Tensor q = compute(in[0]), k = compute(in[1]),
                                  v = compute(in[2]);  // (B,H,1,D), (B,Hkv,L,D)
              const torch::Tensor lens = wrap(in[3]);  // (B) int64
              const torch::Tensor o = wrap(out[0]), lse = wrap(out[1]);
              for (int64_t b = 0; b < q.size(0); ++b) {
                const int64_t len = lens[b].item<int64_t>();
                if (len < 1 || len > k.size(2)) {
                  throw std::invalid_argument("attention.decode: lens[" + std::to_string(b) +
                                              "] = " + std::to_string(len) + " outside [1, L]");
                }
                const auto rows = torch::indexing::Slice(b, b + 1);
                const auto keys = torch::indexing::Slice(0, len);
                const Attention a =
                    attention(q.index({rows}), k.index({rows, torch::indexing::Slice(), keys}),
                              v.index({rows, torch::indexing::Slice(), keys}), pr.scale(),
                              /*causal=*/false);
                o.index({rows}).copy_(a.o);
                lse.index({rows}).copy_(a.lse);
              }
            });
}

// ---- rmsnorm, mlp.swiglu, block -------------------------------------------

// x · rsqrt(mean(x²) + eps) · w over the last axis, as LLaMA's RMSNorm.
torch::Tensor rmsnorm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * w;
}

// (silu(x W1) ∘ (x W3)) W2
torch::Tensor swiglu(const torch::Tensor& x, const torch::Tensor& w1, const torch::Tensor& w3,
                     const torch::Tensor& w2) {
  return torch::matmul(torch::silu(torch::matmul(x, w1)) * torch::matmul(x, w3), w2);
}

void run_rmsnorm(const Problem& pr, std::span<const TensorRef> inputs,
                 std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(inputs, outputs, opt, /*grad=*/false,
            [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
              wrap(out[0]).copy_(rmsnorm(compute(in[0]), compute(in[1]), pr.params.eps));
            });
}

void run_swiglu(const Problem&, std::span<const TensorRef> inputs,
                std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(
      inputs, outputs, opt, /*grad=*/false,
      [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
        wrap(out[0]).copy_(swiglu(compute(in[0]), compute(in[1]), compute(in[2]), compute(in[3])));
      });
}

// The block of reference/dnf/block.hpp: h = x + attn(rmsnorm(x)) Wo,
// y = h + mlp(rmsnorm(h)); causal self-attention with scale 1/sqrt(D), no
// RoPE. Head h owns columns [h·D, (h+1)·D) of wq (and kv head g those of wk,
// wv), the DNF's as_heads: (B,N,H·D) viewed (B,N,H,D), heads to axis 1.
void run_block(const Problem& pr, std::span<const TensorRef> inputs,
               std::span<const TensorRef> outputs, const RunOptions& opt) {
  run_torch(inputs, outputs, opt, /*grad=*/false,
            [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
              const Dims& d = pr.dims;
              const double eps = pr.params.eps;
              const torch::Tensor x = compute(in[0]);  // (B,N,Dm)
              const auto heads = [&](const torch::Tensor& t, int64_t n) {
                return t.view({d.B, d.N, n, d.D}).transpose(1, 2);  // (B,n,N,D)
              };
              const torch::Tensor xn = rmsnorm(x, compute(in[1]), eps);
              const torch::Tensor q = heads(torch::matmul(xn, compute(in[2])), d.H);
              const torch::Tensor k = heads(torch::matmul(xn, compute(in[3])), d.Hkv);
              const torch::Tensor v = heads(torch::matmul(xn, compute(in[4])), d.Hkv);
              const Attention a = attention(q, k, v, 1.0 / std::sqrt(double(d.D)), /*causal=*/true);
              const torch::Tensor o = a.o.transpose(1, 2).reshape({d.B, d.N, d.H * d.D});
              const torch::Tensor h = x + torch::matmul(o, compute(in[5]));
              const torch::Tensor y = h + swiglu(rmsnorm(h, compute(in[6]), eps), compute(in[7]),
                                                 compute(in[8]), compute(in[9]));
              wrap(out[0]).copy_(y);
            });
}

}  // namespace

}  // namespace moacert::kernels

// The module's one entry point (kernels/torch/module.hpp): the op's run,
// looked up in the table of runs by op.
extern "C" void moacert_torch_run(const moacert::Problem& p,
                                  std::span<const moacert::TensorRef> inputs,
                                  std::span<const moacert::TensorRef> outputs,
                                  const moacert::kernels::RunOptions& options) {
  using namespace moacert;
  using namespace moacert::kernels;
  using Run = void (*)(const Problem&, std::span<const TensorRef>, std::span<const TensorRef>,
                       const RunOptions&);
  static constexpr std::pair<Op, Run> runs[] = {{Op::attention_fwd, run_attention_fwd},
                                                {Op::attention_bwd, run_attention_bwd},
                                                {Op::attention_fwdbwd, run_attention_fwdbwd},
                                                {Op::attention_decode, run_attention_decode},
                                                {Op::rmsnorm, run_rmsnorm},
                                                {Op::mlp_swiglu, run_swiglu},
                                                {Op::block, run_block}};
  for (const auto& [op, run] : runs)
    if (op == p.op) return run(p, inputs, outputs, options);
  throw std::logic_error("the LibTorch module has no run for " + std::string(info(p.op).name));
}
static_assert(std::is_same_v<decltype(&moacert_torch_run), moacert::kernels::torch_module::Run>);
