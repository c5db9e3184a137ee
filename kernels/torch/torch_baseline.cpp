// The LibTorch adaptor: attention.fwd as PyTorch computes it without a fused
// kernel, matmul -> softmax -> matmul, as the baseline `bench` and the
// vs-torch rule compare against. The only file of moacert that includes
// torch/torch.h (DESIGN.md's "heavy headers stay in their rooms"); built
// when CMake finds LibTorch (MOACERT_HAVE_TORCH).
#include <dlfcn.h>

#include <limits>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "kernels/cpu/attention_fwd_flat.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels {

namespace {

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

void run_torch_fwd(const Problem& p, std::span<const TensorRef> inputs,
                   std::span<const TensorRef> outputs, const RunOptions& opt) {
  validate(p);
  if (p.format == Format::f16) {
    throw std::invalid_argument("attention.fwd: variant torch does not run f16 on the CPU");
  }
  set_threads(opt.threads);
  torch::NoGradGuard no_grad;
  cpu::with_flat_layouts(
      inputs, outputs, [&](std::span<const TensorRef> in, std::span<const TensorRef> out) {
        const Dims& d = p.dims;
        torch::Tensor q = wrap(in[0]), k = wrap(in[1]), v = wrap(in[2]);  // (B,H,N,D), (B,Hkv,M,D)
        if (q.scalar_type() == torch::kBFloat16) {
          // bf16 storage, f32 accumulation (DESIGN.md, "Formats"), as
          // PyTorch's fused attention kernels do: eager bf16 matmul and
          // softmax would round S and P to bf16 between the steps.
          q = q.to(torch::kFloat);
          k = k.to(torch::kFloat);
          v = v.to(torch::kFloat);
        }
        if (d.Hkv != d.H) {  // GQA/MQA: each kv head serves H/Hkv consecutive query heads
          k = k.repeat_interleave(d.H / d.Hkv, /*dim=*/1);
          v = v.repeat_interleave(d.H / d.Hkv, /*dim=*/1);
        }
        // S lives in a workspace kept across calls: a fresh (B,H,N,M) tensor per
        // call costs more in first-touch page faults than the matmul itself on
        // this kind of machine (measured: 0.7 s against 0.13 s at N = M = 2048),
        // and the baseline should be LibTorch at its best.
        static thread_local torch::Tensor workspace;
        const std::vector<int64_t> s_shape = {d.B, d.H, d.N, d.M};
        if (!workspace.defined() || workspace.scalar_type() != q.scalar_type() ||
            workspace.sizes() != torch::IntArrayRef(s_shape)) {
          workspace = torch::empty(s_shape, q.options());
        }
        torch::Tensor s = workspace;                   // (B,H,N,M)
        torch::matmul_out(s, q, k.transpose(-2, -1));  // S = Q K^T
        s.mul_(p.scale());
        if (p.causal()) {  // key j invisible from row i when j > i + (M - N)
          const torch::Tensor invisible =
              torch::ones({d.N, d.M}, torch::TensorOptions().dtype(torch::kBool))
                  .triu(d.M - d.N + 1);
          s.masked_fill_(invisible, -std::numeric_limits<double>::infinity());
        }
        // softmax, in place: row_max, exp, row_sum, normalise; LSE = m + log l
        torch::Tensor m = std::get<0>(s.max(-1, /*keepdim=*/true));  // (B,H,N,1)
        m.masked_fill_(torch::isinf(m), 0);  // -inf max (no visible key): exp(-inf - 0) = 0
        s.sub_(m).exp_();
        const torch::Tensor l = s.sum(-1, /*keepdim=*/true);  // (B,H,N,1)
        const torch::Tensor lse = (m + l.log()).squeeze(-1);  // (B,H,N); log 0 = -inf
        torch::Tensor o = torch::matmul(s.div_(l), v);        // (B,H,N,D)
        if (p.causal() && d.N > d.M) {  // rows with no visible key: O = 0 (not 0/0)
          o.masked_fill_(torch::isinf(lse).unsqueeze(-1), 0);
        }
        wrap(out[0]).copy_(o);
        wrap(out[1]).copy_(lse);
      });
}

Cost torch_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double nm = double(d.B) * d.H * d.N * d.M;
  Cost c;
  c.flops = 4.0 * nm * d.D + 5.0 * nm;
  c.bytes_read = bytes * (double(d.B) * d.H * d.N * d.D + 2.0 * d.B * d.Hkv * d.M * d.D);
  c.bytes_written = bytes * (double(d.B) * d.H * d.N * d.D + double(d.B) * d.H * d.N);
  // S (B,H,N,M) in the format, the mask, the lse, and the repeated K and V.
  c.peak_extra_bytes =
      bytes * nm + double(d.N) * d.M + (d.Hkv != d.H ? 2.0 * bytes * d.B * d.H * d.M * d.D : 0.0);
  return c;
}

}  // namespace

void register_torch_kernels(Registry& r) {
  r.add({"torch",
         Op::attention_fwd,
         "torch",
         {Format::f64, Format::f32, Format::bf16},
         /*accepts_strided=*/true,
         /*deterministic=*/false,
         "LibTorch: matmul, softmax (in place), matmul; GQA by repeat_interleave",
         torch_cost,
         run_torch_fwd});
}

}  // namespace moacert::kernels
