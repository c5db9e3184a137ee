#include "oracle/memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "oracle/detail/units.hpp"

namespace moacert::oracle {

namespace {

using detail::RowsRead;
using detail::Unit;

// Elements of the input rows `kept` holds (rows_read's prefix counts).
double converted_elements(const std::vector<moa::Shape>& shapes, const RowsRead& kept) {
  double n = 0;
  for (std::size_t k = 0; k < shapes.size(); ++k)
    if (!kept[k].empty()) n += double(kept[k].back()) * double(shapes[k][shapes[k].rank() - 1]);
  return n;
}

// What one more row (a query row, or a key row) could add at most, over
// every row of its kind: the elements of its units' reads that `kept` does
// not hold yet, and its units' scratch. The rows a set of rows reads are at
// most the sum of what each reads alone, so a bound of k more rows is k
// times this.
struct Addition {
  double elements = 0, scratch = 0;
};
Addition most_one_row_adds(const Problem& p, const RowsRead& kept, bool key) {
  const std::vector<moa::Shape> shapes = input_shapes(p);
  Addition most;
  const moa::extent_t count = key ? key_row_count(p) : query_row_count(p);
  for (moa::extent_t r = 0; r < count; ++r) {
    Selection one;
    (key ? one.key_rows : one.query_rows).push_back(r);
    double adds = 0;
    for (const Unit& u : detail::units_of(p, &one)) {
      most.scratch = std::max(most.scratch, detail::unit_scratch_elements(p, u));
      for (const detail::Read& read : detail::reads_of(p, u)) {
        const auto& prefix = kept[static_cast<std::size_t>(read.input)];
        const moa::Shape& shape = shapes[static_cast<std::size_t>(read.input)];
        const detail::RowRun run = detail::rows_of(shape, read);
        const auto first = static_cast<std::size_t>(run.first);
        const moa::extent_t held =
            prefix[first + static_cast<std::size_t>(run.count)] - prefix[first];
        adds += double(run.count - held) * double(shape[shape.rank() - 1]);
      }
    }
    most.elements = std::max(most.elements, adds);
  }
  return most;
}

}  // namespace

double memory_needed(const Problem& p, int max_precision, int threads,
                     const SelectionBound* sample) {
  // An mpfi_t holds two mpfr_t (32 bytes each) and their limbs.
  const double mpfi = 64 + 2 * 8 * std::ceil(max_precision / 64.0);
  // The first pass's interval: two doubles, or two double-doubles for f64
  // targets, whose ends the driver also keeps per output element.
  const bool dd = p.format == Format::f64;
  const double interval = dd ? 32 : 16;
  // The driver's enclosure, unit, DD and flags, the answer's rounded value,
  // DD and flags, and its `exact` string (oracle.cpp).
  const double per_output = 96 + (dd ? 32 : 0);
  const double workers =
      threads > 0 ? threads : double(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

  std::optional<Selection> rows;
  if (sample) rows = normalised(sample->rows, p);
  const std::vector<Unit> units = detail::units_of(p, rows ? &*rows : nullptr);
  const RowsRead kept = detail::rows_read(p, units);
  const std::vector<moa::Shape> shapes = input_shapes(p);
  double converted = converted_elements(shapes, kept), scratch = 0, bookkeeping = 0;
  for (const Unit& u : units) scratch = std::max(scratch, detail::unit_scratch_elements(p, u));
  for (const auto& prefix : kept) bookkeeping += 8.0 * double(prefix.size());
  bookkeeping += double(sizeof(Unit)) * double(units.size());

  if (sample && (sample->more_query_rows > 0 || sample->more_key_rows > 0)) {
    double inputs = 0;  // no read goes past the inputs themselves
    for (std::size_t k = 0; k < shapes.size(); ++k)
      if (!is_index_input(p, static_cast<int>(k))) inputs += double(moa::tau(shapes[k]));
    for (const bool key : {false, true}) {
      const moa::extent_t more = key ? sample->more_key_rows : sample->more_query_rows;
      if (more <= 0) continue;
      const Addition a = most_one_row_adds(p, kept, key);
      converted += double(more) * a.elements;
      scratch = std::max(scratch, a.scratch);
      // A key row joins its kv head's unit (bwd_key_rows): its dK, dV rows.
      if (key) scratch += 2.0 * double(more) * double(p.dims.D);
      bookkeeping += double(sizeof(Unit)) * double(more);
    }
    converted = std::min(converted, inputs);
  }
  return converted * (mpfi + interval) + element_count(output_shapes(p)) * per_output +
         workers * scratch * mpfi + bookkeeping;
}

}  // namespace moacert::oracle
