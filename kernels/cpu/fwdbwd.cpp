// attention.fwdbwd, cpu.fused: the fused forward+backward ONF in one call.
// The forward is cpu.flash's loop nest (tiled online softmax, so o and lse
// are bitwise cpu.flash's: family "cpu.flash"); the backward is
// cpu.flash_bwd's: a pass for the row sums l_i and D_i = rowsum(P ∘ dP),
// then P recomputed once from that LSE (divided by l_i) in one pass over key
// tiles: dK/dV owned per key tile, dQ summed per (batch, kv head, key split)
// and the splits added in a fixed order, so there are no atomics and no N×M
// intermediate. The same loop nest as a plain scalar
// template is fwdbwd_generic.hpp.
#include <omp.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

#include "kernels/cpu/attention_bwd.hpp"
#include "kernels/cpu/cpu_kernels.hpp"
#include "kernels/cpu/cpu_kernels_rest.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {
namespace {

Cost fwdbwd_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double heads = double(d.B * d.H);
  const double pairs = heads * visible_pairs(p.causal(), d.N, d.M);
  Cost c;
  // Per visible pair: forward S and PV (2 products of length D), the row
  // sums' S and dP, backward S, dP, dV, dK, dQ (7); 2 flops per
  // multiply-add.
  c.flops = 18.0 * double(d.D) * pairs;
  const double q_like = heads * double(d.N * d.D), kv_like = double(d.B * d.Hkv * d.M * d.D);
  c.bytes_read = bytes * (2 * q_like + 2 * kv_like);                           // q, do, k, v
  c.bytes_written = bytes * (2 * q_like + heads * double(d.N) + 2 * kv_like);  // o, lse, dq, dk, dv
  c.atomics = 0;
  // The forward's (cpu.flash: tiles and one kv head's packed K and V per
  // thread) and the backward's (tiles and a (H/Hkv, N, D) dQ partial per
  // thread, one D_i per row) are never held at once: O((N + M) D) per
  // thread, as the ONF promises.
  Problem forward = p;
  forward.op = Op::attention_fwd;
  c.peak_extra_bytes = std::max(
      flash_scratch_bytes(forward) * omp_get_max_threads(),
      attention_bwd_scratch_bytes(int(bytes), d.B, d.H, d.Hkv, d.N, d.M, d.D, /*threads=*/0));
  return c;
}

template <class T>
void run(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
         const RunOptions& opt) {
  const AttentionParams params{p.scale(), p.causal(), opt.threads};
  flash_attention_fwdbwd<T>(in[0].view<const T>(), in[1].view<const T>(), in[2].view<const T>(),
                            in[3].view<const T>(), out[0].view<T>(), out[1].view<T>(),
                            out[2].view<T>(), out[3].view<T>(), out[4].view<T>(), params);
}

}  // namespace

void register_fwdbwd(Registry& r) {
  r.add({"cpu.fused",
         Op::attention_fwdbwd,
         "cpu",
         {Format::f64, Format::f32},
         /*accepts_strided=*/true,
         /*deterministic=*/true,
         "fused fwd+bwd: cpu.flash's forward, then cpu.flash_bwd's row-sum pass and one "
         "recomputing pass over key tiles (dK/dV owned per tile, dQ partials per key split "
         "summed in order); no atomics, no N×M intermediate",
         fwdbwd_cost,
         [](const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
            const RunOptions& opt) {
           if (p.format == Format::f64) return run<double>(p, in, out, opt);
           if (p.format == Format::f32) return run<float>(p, in, out, opt);
           throw std::invalid_argument("attention.fwdbwd cpu.fused: format " +
                                       std::string(name(p.format)) + " is not supported");
         },
         /*tiles=*/{64, 32},
         /*family_name=*/"cpu.flash",
         /*same_bits_any_layout=*/false});  // BLOCK_M = 64, BLOCK_N = 4 vectors (64 f32, 32 f64 on
                                            // AVX-512)
}

}  // namespace moacert::kernels::cpu
