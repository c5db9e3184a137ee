// mlp.swiglu, cpu.tiled (see tiled.hpp).
#include "kernels/cpu/mlp_swiglu/tiled.hpp"

#include <span>
#include <string>

#include "kernels/cpu/common/formats.hpp"
#include "kernels/cpu/common/gemm.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {

template <class T>
void mlp_swiglu_tiled(moa::View<const T> x, moa::View<const T> w1, moa::View<const T> w3,
                      moa::View<const T> w2, moa::View<T> y, bool accumulate, int threads) {
  const moa::extent_t rows = x.shape()[0], F = w1.shape()[1];
  moa::Tensor<T> gate(moa::Shape{rows, F}), hidden(moa::Shape{rows, F});    // (T, F)
  gemm<T>(x, w1, gate.view(), threads);                                     // G = x W1
  gemm<T>(x, w3, hidden.view(), Epilogue::silu_mul, gate.view(), threads);  // H = silu(G) ∘ x W3
  gemm<T>(hidden.view(), w2, y, accumulate ? Epilogue::accumulate : Epilogue::store,
          moa::View<const T>(), threads);  // y (+)= H W2
}

template void mlp_swiglu_tiled<float>(moa::View<const float>, moa::View<const float>,
                                      moa::View<const float>, moa::View<const float>,
                                      moa::View<float>, bool, int);
template void mlp_swiglu_tiled<double>(moa::View<const double>, moa::View<const double>,
                                       moa::View<const double>, moa::View<const double>,
                                       moa::View<double>, bool, int);

namespace {

Cost mlp_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double T = double(d.T), Dm = double(d.Dm), F = double(d.F);
  Cost c;
  c.flops = 6.0 * T * Dm * F + 5.0 * T * F;  // three GEMMs; silu and the product per hidden unit
  c.bytes_read = bytes * (T * Dm + 3.0 * Dm * F);
  c.bytes_written = bytes * T * Dm;
  c.atomics = 0;
  // G and H (T, F), and the GEMM's packing buffers.
  c.peak_extra_bytes = bytes * (2.0 * T * F + gemm_scratch_elements(int(bytes), d.T, d.F, d.Dm, 0));
  return c;
}

template <class T>
void run(const Problem&, std::span<const TensorRef> in, std::span<const TensorRef> out,
         const RunOptions& opt) {
  mlp_swiglu_tiled<T>(in[0].view<const T>(), in[1].view<const T>(), in[2].view<const T>(),
                      in[3].view<const T>(), out[0].view<T>(), /*accumulate=*/false, opt.threads);
}

}  // namespace

void register_mlp_swiglu_tiled(Registry& r) {
  r.add(Variant{
      .name = "cpu.tiled",
      .op = Op::mlp_swiglu,
      .backend = "cpu",
      .formats = {Format::f64, Format::f32},
      .accepts_strided = true,
      .deterministic = true,
      .summary = "packed, blocked Highway GEMMs (" + std::to_string(GemmTiles::mr) +
                 " x 2-vector micro-kernel); silu∘mul fused into the x·W3 GEMM's epilogue",
      .cost = mlp_cost,
      .run = f64_f32_run("mlp.swiglu cpu.tiled", []<class T>(auto&&... a) { run<T>(a...); }),
  });
}

}  // namespace moacert::kernels::cpu
