// rmsnorm, cpu.fused (see fused.hpp). Compiled once per Highway target.

#ifndef MOACERT_RMSNORM_ONCE
#define MOACERT_RMSNORM_ONCE

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>

#include "hwy/aligned_allocator.h"
#include "kernels/cpu/common/formats.hpp"
#include "kernels/cpu/common/strided.hpp"
#include "kernels/cpu/common/threads.hpp"
#include "kernels/cpu/register.hpp"
#include "kernels/cpu/rmsnorm/fused.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::cpu::rmsnorm_detail {
using moa::extent_t;
template <class T>
struct RmsJob {
  extent_t rows, D;
  Strided<const T, 2> x;  // (rows, D)
  Strided<const T, 1> w;  // (D)
  Strided<T, 2> y;        // (rows, D)
  T eps;
  int threads;
};
}  // namespace moacert::kernels::cpu::rmsnorm_detail

#endif  // MOACERT_RMSNORM_ONCE

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rmsnorm/fused.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace moacert::kernels::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using rmsnorm_detail::extent_t;
using rmsnorm_detail::RmsJob;

// Σ_d x_d² over a contiguous row: four vector accumulators, then the tail.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE T sum_of_squares(D d, const T* HWY_RESTRICT x, extent_t n) {
  using V = hn::Vec<D>;
  const extent_t L = extent_t(hn::Lanes(d));
  V s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  extent_t e = 0;
  for (; e + 4 * L <= n; e += 4 * L) {
    const V x0 = hn::LoadU(d, x + e), x1 = hn::LoadU(d, x + e + L);
    const V x2 = hn::LoadU(d, x + e + 2 * L), x3 = hn::LoadU(d, x + e + 3 * L);
    s0 = hn::MulAdd(x0, x0, s0);
    s1 = hn::MulAdd(x1, x1, s1);
    s2 = hn::MulAdd(x2, x2, s2);
    s3 = hn::MulAdd(x3, x3, s3);
  }
  for (; e + L <= n; e += L) {
    const V x0 = hn::LoadU(d, x + e);
    s0 = hn::MulAdd(x0, x0, s0);
  }
  T sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; e < n; ++e) sum += x[e] * x[e];  // tail of the row
  return sum;
}

// y = x · inv_rms · w over a contiguous row.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void scale_row(D d, const T* HWY_RESTRICT x, const T* HWY_RESTRICT w, T inv_rms,
                          T* HWY_RESTRICT y, extent_t n) {
  const extent_t L = extent_t(hn::Lanes(d));
  const auto vinv = hn::Set(d, inv_rms);
  extent_t e = 0;
  for (; e + L <= n; e += L)
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + e), vinv), hn::LoadU(d, w + e)), d, y + e);
  for (; e < n; ++e) y[e] = x[e] * inv_rms * w[e];
}

template <class T>
void rmsnorm_impl(const RmsJob<T>& job) {
  const hn::ScalableTag<T> d;
  const extent_t D = job.D;
  const bool contiguous = job.x.inner() == 1 && job.y.inner() == 1;
  // w, contiguous (gathered once when strided)
  auto w_buf = hwy::AllocateAligned<T>(D);
  for (extent_t e = 0; e < D; ++e) w_buf[e] = job.w.at(e);
  const T* w = w_buf.get();
#pragma omp parallel num_threads(thread_count(job.threads))
  {
    auto x_row = hwy::AllocateAligned<T>(contiguous ? 1 : D);  // (D), strided rows only
    auto y_row = hwy::AllocateAligned<T>(contiguous ? 1 : D);  // (D)
#pragma omp for schedule(static)
    for (extent_t t = 0; t < job.rows; ++t) {
      const T* x = job.x.row(t);
      T* y = job.y.row(t);
      if (!contiguous) {  // strided row: gather, compute, scatter
        for (extent_t e = 0; e < D; ++e) x_row[e] = x[e * job.x.inner()];
        x = x_row.get();
        y = y_row.get();
      }
      // one pass: the sum of squares; then rms = sqrt(mean + eps)
      const T rms = std::sqrt(sum_of_squares(d, x, D) / T(D) + job.eps);
      scale_row(d, x, w, T(1) / rms, y, D);
      if (!contiguous) {
        T* y_out = job.y.row(t);
        for (extent_t e = 0; e < D; ++e) y_out[e * job.y.inner()] = y[e];
      }
    }
  }
}

void RmsnormF32(const RmsJob<float>& job) {
  rmsnorm_impl(job);
}
void RmsnormF64(const RmsJob<double>& job) {
  rmsnorm_impl(job);
}

}  // namespace moacert::kernels::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moacert::kernels::cpu {

HWY_EXPORT(RmsnormF32);
HWY_EXPORT(RmsnormF64);

template <class T>
void rmsnorm_rows(moa::View<const T> x, moa::View<const T> w, double eps, moa::View<T> y,
                  int threads) {
  const rmsnorm_detail::RmsJob<T> job{x.shape()[0],  x.shape()[1],  strided<2>(x),
                                      strided<1>(w), strided<2>(y), static_cast<T>(eps),
                                      threads};
  if (job.rows == 0 || job.D == 0) return;
  if constexpr (sizeof(T) == 8) {
    HWY_DYNAMIC_DISPATCH(RmsnormF64)(job);
  } else {
    HWY_DYNAMIC_DISPATCH(RmsnormF32)(job);
  }
}

template void rmsnorm_rows<float>(moa::View<const float>, moa::View<const float>, double,
                                  moa::View<float>, int);
template void rmsnorm_rows<double>(moa::View<const double>, moa::View<const double>, double,
                                   moa::View<double>, int);

namespace {

Cost rmsnorm_cost(const Problem& p) {
  const Dims& d = p.dims;
  const double bytes = info(p.format).bytes, elems = double(d.T * d.D);
  Cost c;
  c.flops = 4.0 * elems + 3.0 * double(d.T);  // square-add, two multiplies; sqrt and divide per row
  c.bytes_read = bytes * (elems + double(d.D));
  c.bytes_written = bytes * elems;
  c.atomics = 0;
  // w gathered once, and two row buffers per thread for strided rows.
  c.peak_extra_bytes = bytes * double(d.D) * (1.0 + 2.0 * thread_count(/*requested=*/0));
  return c;
}

template <class T>
void run(const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
         const RunOptions& opt) {
  rmsnorm_rows<T>(in[0].view<const T>(), in[1].view<const T>(), p.params.eps, out[0].view<T>(),
                  opt.threads);
}

}  // namespace

void register_rmsnorm_fused(Registry& r) {
  r.add(Variant{
      .name = "cpu.fused",
      .op = Op::rmsnorm,
      .backend = "cpu",
      .formats = {Format::f64, Format::f32},
      .accepts_strided = true,
      .deterministic = true,
      .summary =
          "one vectorised pass per row for the sum of squares, one to scale; OpenMP over rows",
      .cost = rmsnorm_cost,
      .run = f64_f32_run("rmsnorm cpu.fused", []<class T>(auto&&... a) { run<T>(a...); }),
  });
}

}  // namespace moacert::kernels::cpu
#endif  // HWY_ONCE
