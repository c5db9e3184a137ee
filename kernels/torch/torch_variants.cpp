// The `torch` variants (kernels/torch/module.hpp): every op as PyTorch
// users write it, registered without LibTorch; each call checks its
// tensors here and runs in libmoacert_torch.so, loaded on the first call.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/torch/module.hpp"

namespace moacert::kernels {

namespace {

namespace fs = std::filesystem;

// Where the module may be, in order: $MOACERT_TORCH_MODULE; beside the
// running executable, or in its installed place relative to it
// (bin/../LIBDIR/moacert/); the build tree's.
std::vector<std::string> module_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("MOACERT_TORCH_MODULE"); env && *env) return {env};
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((self.parent_path() / "libmoacert_torch.so").string());
    out.push_back(
        (self.parent_path() / ".." / MOACERT_TORCH_MODULE_INSTALL_DIR / "libmoacert_torch.so")
            .string());
  }
  out.emplace_back(MOACERT_TORCH_MODULE_BUILD_PATH);
  return out;
}

torch_module::Run module_run() {
  static std::once_flag once;
  static torch_module::Run run = nullptr;
  static std::string why;
  std::call_once(once, [] {
    for (const std::string& path : module_candidates()) {
      if (!fs::exists(path)) continue;
      void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!module) {
        why = dlerror();
        return;
      }
      run = reinterpret_cast<torch_module::Run>(dlsym(module, torch_module::kRunSymbol));
      if (!run) why = path + " has no " + torch_module::kRunSymbol;
      return;
    }
    why =
        "libmoacert_torch.so is not beside moacert, in its library folder, nor in the build "
        "tree (set MOACERT_TORCH_MODULE)";
  });
  if (!run) throw std::runtime_error("variant torch: cannot load LibTorch: " + why);
  return run;
}

// The arity and shapes every variant checks (check_tensors), and the one
// format the module does not run: LibTorch's CPU matmul has no f16 kernel
// in 1.13.
void run_in_module(const Problem& p, std::span<const TensorRef> inputs,
                   std::span<const TensorRef> outputs, const RunOptions& options) {
  check_tensors(p, inputs, outputs);
  if (p.format == Format::f16)
    throw std::invalid_argument(std::string(info(p.op).name) +
                                ": variant torch does not run f16 on the CPU");
  module_run()(p, inputs, outputs, options);
}

// ---- costs ----------------------------------------------------------------

Cost attention_fwd_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double nm = double(d.B) * d.H * d.N * d.M;
  Cost c;
  c.flops = 4.0 * nm * d.D + 5.0 * nm;
  c.bytes_read = bytes * (double(d.B) * d.H * d.N * d.D + 2.0 * d.B * d.Hkv * d.M * d.D);
  c.bytes_written = bytes * (double(d.B) * d.H * d.N * d.D + double(d.B) * d.H * d.N);
  // S and P (B,H,N,M) in the compute type (f32 for bf16 and f16, as the
  // copies of their inputs) and, beside them, logsumexp's shifted copy of S
  // (ATen's exp(S - max)); the mask, the lse, and the repeated K and V.
  const double acc = p.format == Format::f64 ? 8 : 4;
  c.peak_extra_bytes =
      3.0 * acc * nm + double(d.N) * d.M + (d.Hkv != d.H ? 2.0 * acc * d.B * d.H * d.M * d.D : 0.0);
  return c;
}

// The other ops do the DNF's arithmetic (cpu.dnf's FLOP and byte counts);
// what differs is what LibTorch materialises, which each op's row of
// register_torch_kernels states: its scratch beyond inputs and outputs
// (`acc`: the compute type's bytes).
using PeakExtraFn = double (*)(const Dims&, double acc);

CostFn torch_cost_from(const CostFn& dnf, PeakExtraFn peak_extra) {
  return [dnf, peak_extra](const Problem& p) {
    Cost c = dnf(p);
    c.peak_extra_bytes = peak_extra(p.dims, p.format == Format::f64 ? 8 : 4);
    return c;
  };
}

// The attention backward: S, P, dP and dS (B,H,N,M) in the compute type and
// the repeated K, V and their gradients.
double attention_bwd_peak_extra(const Dims& d, double acc) {
  const double nm = double(d.B) * d.H * d.N * d.M, kv = double(d.B) * d.H * d.M * d.D;
  return 4.0 * acc * nm + (d.Hkv != d.H ? 4.0 * acc * kv : 0.0);
}

}  // namespace

void register_torch_kernels(Registry& r) {
  const std::vector<Format> formats = {Format::f64, Format::f32, Format::bf16};
  auto add = [&](Op op, std::string summary, CostFn cost) {
    r.add(Variant{
        .name = "torch",
        .op = op,
        .backend = "torch",
        .role = Role::torch,
        .formats = formats,
        .accepts_strided = true,
        .deterministic = false,  // LibTorch's BLAS and reductions promise no order
        .summary = std::move(summary),
        .cost = std::move(cost),
        .run = run_in_module,
    });
  };
  // The DNF's counts with LibTorch's scratch (torch_cost_from).
  auto dnf_with = [&](Op op, PeakExtraFn peak_extra) {
    return torch_cost_from(r.find_role(op, Role::dnf)->cost, peak_extra);
  };
  add(Op::attention_fwd, "LibTorch: matmul, scale, mask, softmax, matmul; GQA by repeat_interleave",
      attention_fwd_cost);
  add(Op::attention_bwd,
      "LibTorch autograd through matmul/softmax/matmul (forward recomputed; o, lse unused)",
      dnf_with(Op::attention_bwd, attention_bwd_peak_extra));
  add(Op::attention_fwdbwd, "LibTorch: matmul/softmax/matmul forward, autograd backward",
      dnf_with(Op::attention_fwdbwd, attention_bwd_peak_extra));
  add(Op::attention_decode, "LibTorch: per batch row, matmul/softmax/matmul over lens[b] keys",
      dnf_with(Op::attention_decode, [](const Dims& d, double acc) {
        // per batch row: S and P, K and V repeated
        return 2.0 * acc * d.H * d.M + (d.Hkv != d.H ? 2.0 * acc * d.H * d.M * d.D : 0.0);
      }));
  add(Op::rmsnorm, "LibTorch: x * rsqrt(mean(x^2) + eps) * w",
      dnf_with(Op::rmsnorm, [](const Dims& d, double acc) { return acc * d.T * d.D; }));
  add(Op::mlp_swiglu, "LibTorch: matmul(silu(matmul(x, w1)) * matmul(x, w3), w2)",
      dnf_with(Op::mlp_swiglu, [](const Dims& d, double acc) { return 3.0 * acc * d.T * d.F; }));
  add(Op::block, "LibTorch: rmsnorm, projections, causal attention (repeat_interleave), residuals",
      dnf_with(Op::block, [](const Dims& d, double acc) {  // the activations between operators
        return acc *
               (double(d.B) * d.N * (6.0 * d.Dm + 2.0 * d.H * d.D + 4.0 * d.Hkv * d.D + 3.0 * d.F) +
                2.0 * d.B * d.H * d.N * d.N);
      }));
}

}  // namespace moacert::kernels
