// attention.fwdbwd, cpu.fused: the fused forward+backward ONF in one call.
// The forward is cpu.flash's loop nest (tiled online softmax, so o and lse
// are bitwise cpu.flash's: family "cpu.flash"); the backward is
// cpu.flash_bwd's: a pass for the row sums l_i and D_i = rowsum(P ∘ dP),
// then P recomputed once from that LSE (divided by l_i) in one pass over key
// tiles: dK/dV owned per key tile, dQ summed per (batch, kv head, key split)
// and the splits added in a fixed order, so there are no atomics and no N×M
// intermediate. The same loop nest as a plain scalar template is
// fused_generic.hpp.
#include <algorithm>
#include <span>
#include <vector>

#include "kernels/cpu/attention_bwd/flash_bwd.hpp"
#include "kernels/cpu/attention_fwd/flash.hpp"
#include "kernels/cpu/attention_fwdbwd/fused.hpp"
#include "kernels/cpu/common/causal.hpp"
#include "kernels/cpu/common/formats.hpp"
#include "kernels/cpu/common/threads.hpp"
#include "kernels/cpu/common/tiles.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {

std::vector<moa::extent_t> fused_tiles(Format f) {
  std::vector<moa::extent_t> t = flash_tiles(f);
  const std::vector<moa::extent_t> bwd = flash_bwd_tiles(f);
  t.insert(t.end(), bwd.begin(), bwd.end());
  return t;
}

namespace {

// o, lse by flash_attention_fwd, then dq, dk, dv by flash_attention_bwd
// from that lse. No N×M intermediate.
template <class T>
void flash_attention_fwdbwd(moa::View<const T> q, moa::View<const T> k, moa::View<const T> v,
                            moa::View<const T> dout, moa::View<T> o, moa::View<T> lse,
                            moa::View<T> dq, moa::View<T> dk, moa::View<T> dv,
                            const AttentionParams& params) {
  flash_attention_fwd<T>(q, k, v, o, lse, params);  // cpu.flash's loop nest: its bits
  flash_attention_bwd<T>(q, k, v, moa::View<const T>(o), moa::View<const T>(lse), dout, dq, dk, dv,
                         params);  // P from that lse
}

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
      flash_scratch_bytes(forward) * thread_count(/*requested=*/0),
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

void register_attention_fwdbwd_fused(Registry& r) {
  const std::vector<Format> formats = {Format::f64, Format::f32};
  r.add(Variant{
      .name = "cpu.fused",
      .op = Op::attention_fwdbwd,
      .backend = "cpu",
      .formats = formats,
      .accepts_strided = true,
      .deterministic = true,
      .summary = "fused fwd+bwd: cpu.flash's forward, then cpu.flash_bwd's row-sum pass and one "
                 "recomputing pass over key tiles (dK/dV owned per tile, dQ partials per key "
                 "split summed in order); no atomics, no N×M intermediate",
      .cost = fwdbwd_cost,
      .run = f64_f32_run("attention.fwdbwd cpu.fused", []<class T>(auto&&... a) { run<T>(a...); }),
      .tiles = tiles_of_formats(formats, fused_tiles),
      .family_name = "cpu.flash",
      .same_bits_any_layout = false,
  });
}

}  // namespace moacert::kernels::cpu
