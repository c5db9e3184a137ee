// The first pass of mlp.swiglu's rows, the weights streamed
// (detail/streamed_mlp.hpp; docs/oracle.md, "mlp.swiglu: the weights
// streamed"). All the selected rows at once: each weight is read from the
// case once per pass, widened to double a block of rows at a time, and
// meets every selected row of x while it is in cache. Threads take blocks
// of columns (of F for x W1 and x W3, of Dm for H W2), so that each owns
// its sums. Each sum adds blocks of kStreamedRowsPerBlock terms, each block summed
// from zero in the order of p and then added to the total: the blocked
// weighted sums of the pass's attention (fast_reductions.cpp), an order
// other than the DNF's p-by-p that encloses the same exact sum more tightly.
//
// Compiled, as fast_pass.cpp, with -frounding-math -ffp-contract=off. Each
// parallel region sets round-upward on its threads, and the calling thread
// stays in its own mode outside them: a thread OpenMP creates inherits its
// creator's rounding mode, so a region opened under round-upward would
// leave new pool threads rounding upward for whatever runs on them next
// (the kernels under test: cpu.tiled's GEMM lost its bit-for-bit results).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"

namespace moacert::oracle::detail {

namespace {

// sums[r] (R rows of `width` intervals, from column c0) += a[r] (R rows of
// `depth` intervals) times the rows 0 .. depth - 1 of the weight m, columns
// [c0, c0 + width): one call per block of weight rows.
void add_streamed(const AnyTensor& m, const std::vector<FastInterval*>& a, extent_t depth,
                  extent_t c0, extent_t width, std::vector<FastInterval*>& sums,
                  std::vector<double>& block) {
  const auto R = static_cast<extent_t>(a.size());
  std::vector<const FastInterval*> weights(a.size());
  std::vector<FastInterval*> out(a.size());
  for (extent_t p0 = 0; p0 < depth; p0 += kStreamedRowsPerBlock) {
    const extent_t rows = std::min(kStreamedRowsPerBlock, depth - p0);
    for (extent_t j = 0; j < rows; ++j) m.get_row({p0 + j, c0}, width, block.data() + j * width);
    for (extent_t r = 0; r < R; ++r) {
      weights[std::size_t(r)] = a[std::size_t(r)] + p0;
      out[std::size_t(r)] = sums[std::size_t(r)] + c0;
    }
    interval_add_point_block(weights.data(), R, block.data(), width, rows, width, out.data());
  }
}

// out = a · m for the R rows of a (depth intervals each), m a (depth,
// columns) weight of the case; out's rows `columns` intervals.
void streamed_product(const AnyTensor& m, const std::vector<FastInterval*>& a, extent_t depth,
                      extent_t columns, std::vector<FastInterval*>& out, int team) {
  const std::int64_t blocks = (columns + kStreamedColumns - 1) / kStreamedColumns;
  for (FastInterval* row : out) std::fill(row, row + columns, FastInterval(0.0));
#pragma omp parallel num_threads(team)
  {
    UpwardRounding upward;
    std::vector<double> block(
        std::size_t(kStreamedRowsPerBlock * std::min(kStreamedColumns, columns)));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const extent_t c0 = b * kStreamedColumns;
      add_streamed(m, a, depth, c0, std::min(kStreamedColumns, columns - c0), out, block);
    }
  }
  for (FastInterval* row : out)
    for (extent_t k = 0; k < columns; ++k) row[k] = FastInterval::checked(row[k].lo, row[k].hi);
}

}  // namespace

void fast_mlp_rows(const Case& c, std::span<const Unit> units, int team, const FastSink& sink) {
  const Dims& d = c.problem.dims;
  const auto in = inputs_by_name(c.problem.op, c.inputs);
  const std::size_t R = units.size();
  // Each row's x_t, gate, up and y, side by side.
  std::vector<FastInterval> x(R * std::size_t(d.Dm)), gate(R * std::size_t(d.F)),
      up(R * std::size_t(d.F)), y(R * std::size_t(d.Dm));
  auto row_starts = [&](std::vector<FastInterval>& m, extent_t width) {
    std::vector<FastInterval*> rows(R);
    for (std::size_t r = 0; r < R; ++r) rows[r] = m.data() + r * std::size_t(width);
    return rows;
  };
  std::vector<FastInterval*> xs = row_starts(x, d.Dm), gates = row_starts(gate, d.F),
                             ups = row_starts(up, d.F), ys = row_starts(y, d.Dm);
  std::vector<double> widened(std::size_t(d.Dm));
  for (std::size_t r = 0; r < R; ++r) {
    if (units[r].kind != UnitKind::mlp_row)
      throw std::logic_error("oracle: fast_mlp_rows was given a unit of another op");
    in["x"].get_row({units[r].a, 0}, d.Dm, widened.data());
    for (extent_t p = 0; p < d.Dm; ++p) xs[r][p] = FastInterval(widened[std::size_t(p)]);
  }

  streamed_product(in["w1"], xs, d.Dm, d.F, gates, team);
  streamed_product(in["w3"], xs, d.Dm, d.F, ups, team);
  const auto hidden = static_cast<std::int64_t>(gate.size());
#pragma omp parallel num_threads(team)
  {
    UpwardRounding on_this_thread;
#pragma omp for schedule(static)
    for (std::int64_t k = 0; k < hidden; ++k)
      gate[std::size_t(k)] = dnf::silu(gate[std::size_t(k)]) * up[std::size_t(k)];
  }
  streamed_product(in["w2"], gates, d.F, d.Dm, ys, team);

  const int y_out = static_cast<int>(output_position(c.problem.op, "y"));
  for (std::size_t r = 0; r < R; ++r)
    for (extent_t j = 0; j < d.Dm; ++j)
      sink(r, y_out, units[r].a * d.Dm + j, ys[r][j].lo, ys[r][j].hi);
}

}  // namespace moacert::oracle::detail
