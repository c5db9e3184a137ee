// attention.fwd, cpu.naive: the DNF read as loops, in the accumulation
// type, with S and P of one (b, h) materialised as (N, M) matrices.
// Single-threaded and deterministic.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "kernels/cpu/common/convert.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/registry.hpp"
#include "reference/dnf/attention.hpp"

namespace moacert::kernels::cpu {
namespace {

using moa::extent_t;

template <class S>
void naive_fwd(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out) {
  using A = accum_of_t<S>;
  const moa::View<const S> q = in[0].view<const S>(), k = in[1].view<const S>(),
                           v = in[2].view<const S>();
  const moa::View<S> o = out[0].view<S>(), lse = out[1].view<S>();
  const Dims& d = p.dims;
  const extent_t N = d.N, M = d.M, D = d.D, group = d.H / d.Hkv;
  const A scale = static_cast<A>(p.scale());
  const bool causal = p.causal();
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  std::vector<A> s_mat(static_cast<std::size_t>(N * M));  // (N, M)
  std::vector<A> p_mat(static_cast<std::size_t>(N * M));  // (N, M)
  for (extent_t b = 0; b < d.B; ++b) {
    for (extent_t h = 0; h < d.H; ++h) {
      const extent_t g = h / group;
      // scores: S = scale · Q K^T, -inf where invisible
      for (extent_t i = 0; i < N; ++i) {
        for (extent_t j = 0; j < M; ++j) {
          A dot = 0;
          if (dnf::visible(causal, i, j, N, M)) {
            for (extent_t x = 0; x < D; ++x)
              dot +=
                  static_cast<A>(to_accum(q(b, h, i, x))) * static_cast<A>(to_accum(k(b, g, j, x)));
            s_mat[i * M + j] = scale * dot;
          } else {
            s_mat[i * M + j] = kNegInf;
          }
        }
      }
      // row_max, exp, row_sum, normalise: P = softmax(S)
      for (extent_t i = 0; i < N; ++i) {
        A* s_row = &s_mat[i * M];
        A* p_row = &p_mat[i * M];
        A row_max = kNegInf;
        for (extent_t j = 0; j < M; ++j) row_max = std::max(row_max, s_row[j]);
        if (row_max == kNegInf) {  // row with no visible key: P = 0, O = 0, LSE = -inf
          std::fill_n(p_row, M, A(0));
          lse(b, h, i) = from_accum<S>(kNegInf);
          continue;
        }
        A row_sum = 0;
        for (extent_t j = 0; j < M; ++j) {
          p_row[j] = s_row[j] == kNegInf ? A(0) : std::exp(s_row[j] - row_max);
          row_sum += p_row[j];
        }
        for (extent_t j = 0; j < M; ++j) p_row[j] /= row_sum;
        lse(b, h, i) = from_accum<S>(row_max + std::log(row_sum));
      }
      // accumulate: O = P V
      for (extent_t i = 0; i < N; ++i) {
        for (extent_t x = 0; x < D; ++x) {
          A acc = 0;
          for (extent_t j = 0; j < M; ++j)
            acc += p_mat[i * M + j] * static_cast<A>(to_accum(v(b, g, j, x)));
          o(b, h, i, x) = from_accum<S>(acc);
        }
      }
    }
  }
}

void run_naive(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
               const RunOptions&) {
  check_tensors(p, in, out);
  switch (p.format) {
    case Format::f64:
      naive_fwd<double>(p, in, out);
      break;
    case Format::f32:
      naive_fwd<float>(p, in, out);
      break;
    case Format::bf16:
      naive_fwd<bf16>(p, in, out);
      break;
    case Format::f16:
      naive_fwd<f16>(p, in, out);
      break;
  }
}

Cost naive_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes;
  const double acc_bytes = p.format == Format::f64 ? 8 : 4;
  Cost c;
  const double nm = double(d.B) * d.H * d.N * d.M;
  c.flops = 4.0 * nm * d.D + 5.0 * nm;  // QK^T and PV (2 flops each per d), softmax
  c.bytes_read = bytes * (double(d.B) * d.H * d.N * d.D + 2.0 * d.B * d.Hkv * d.M * d.D);
  c.bytes_written = bytes * (double(d.B) * d.H * d.N * d.D + double(d.B) * d.H * d.N);
  c.peak_extra_bytes = 2.0 * acc_bytes * d.N * d.M;  // S and P of one (b, h)
  return c;
}

}  // namespace

void register_attention_fwd_naive(Registry& r) {
  r.add(Variant{
      .name = "cpu.naive",
      .op = Op::attention_fwd,
      .backend = "cpu",
      .formats = {Format::f64, Format::f32, Format::bf16, Format::f16},
      .accepts_strided = true,
      .deterministic = true,
      .summary = "the DNF as loops: S and P (N, M) materialised per (b, h), single thread",
      .cost = naive_cost,
      .run = run_naive,
  });
}

}  // namespace moacert::kernels::cpu
