#include "oracle/memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "oracle/detail/forward_memo.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/ops/table.hpp"

namespace moacert::oracle {

namespace {

using detail::Conversion;
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
  double elements = 0, scratch = 0, first_scratch = 0, largest = 0;  // largest: one unit's reads
};
Addition most_one_row_adds(const Problem& p, const RowsRead& kept, bool key,
                           Conversion conversion) {
  const std::vector<moa::Shape> shapes = input_shapes(p);
  Addition most;
  const moa::extent_t count = key ? key_row_count(p) : query_row_count(p);
  for (moa::extent_t r = 0; r < count; ++r) {
    Selection one;
    (key ? one.key_rows : one.query_rows).push_back(r);
    double adds = 0;
    for (const Unit& u : detail::units_of(p, &one)) {
      most.scratch = std::max(most.scratch, detail::unit_scratch_elements(p, u, conversion));
      most.first_scratch = std::max(most.first_scratch, detail::first_pass_scratch_elements(p, u));
      most.largest = std::max(most.largest, detail::read_elements(p, u, conversion));
      for (const detail::Read& read : detail::reads_of(p, u, conversion)) {
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

// The largest scratches among the units, as many as there are threads:
// each thread holds one unit's at a time, so the threads together hold at
// most the sum of these (a fused case's one kv group beside its forward
// rows holds one group's, not one per thread).
class LargestScratches {
 public:
  explicit LargestScratches(int threads) : threads_(std::size_t(std::max(1, threads))) {}
  // `count` more units of `elements` each.
  void add(double elements, double count = 1) {
    for (double k = 0; k < count && k < double(threads_); ++k) {
      if (largest_.size() == threads_ && elements <= largest_.back()) return;
      largest_.insert(
          std::upper_bound(largest_.begin(), largest_.end(), elements, std::greater<>()), elements);
      if (largest_.size() > threads_) largest_.pop_back();
    }
  }
  // The largest unit grows (key rows joining their kv head's unit).
  void grow_largest(double elements) {
    if (largest_.empty()) largest_.push_back(0);
    largest_.front() += elements;
  }
  // What `busy` threads hold together.
  double held(double busy) const {
    double sum = 0;
    for (std::size_t k = 0; k < largest_.size() && double(k) < busy; ++k) sum += largest_[k];
    return sum;
  }

 private:
  std::size_t threads_;
  std::vector<double> largest_;  // descending
};

}  // namespace

double memory_needed(const Problem& p, int max_precision, int threads, const SelectionBound* sample,
                     int exact_digits) {
  const double workers =
      threads > 0 ? threads : double(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

  std::optional<Selection> rows;
  if (sample) rows = normalised(sample->rows, p);
  const std::vector<Unit> units = detail::units_of(p, rows ? &*rows : nullptr);
  const std::vector<moa::Shape> shapes = input_shapes(p);
  double bookkeeping = 0, keys = 0;
  LargestScratches first_scratch{int(workers)};
  for (const Unit& u : units) {
    first_scratch.add(detail::first_pass_scratch_elements(p, u));
    keys += double(u.keys.size());
  }
  double unit_count = double(units.size());
  const bool more_rows = sample && (sample->more_query_rows > 0 || sample->more_key_rows > 0);

  // What a kind of pass holds (detail::Conversion; the MPFI pass leaves out
  // the inputs its op streams, and its units may hold other scratch): the
  // elements of the rows it keeps, the largest unit's reads, and its units'
  // scratch; for the further rows of a SelectionBound, the most any of them
  // could add (`added`, per kind of row: query, key).
  struct Converted {
    RowsRead kept;
    double elements = 0, largest = 0;
    Addition added[2];
    LargestScratches scratch;
  };
  auto converted_by = [&](Conversion conversion) {
    Converted c{detail::rows_read(p, units, conversion), 0, 0, {}, LargestScratches{int(workers)}};
    c.elements = converted_elements(shapes, c.kept);
    c.largest = detail::largest_unit(p, units, conversion);
    for (const Unit& u : units) c.scratch.add(detail::unit_scratch_elements(p, u, conversion));
    if (!more_rows) return c;
    double inputs = 0;  // no read goes past the inputs themselves
    for (std::size_t k = 0; k < shapes.size(); ++k)
      if (!is_index_input(p, static_cast<int>(k))) inputs += double(moa::tau(shapes[k]));
    for (const bool key : {false, true}) {
      const moa::extent_t more = key ? sample->more_key_rows : sample->more_query_rows;
      if (more <= 0) continue;
      const Addition& a = c.added[key] = most_one_row_adds(p, c.kept, key, conversion);
      c.elements += double(more) * a.elements;
      c.largest = std::max(c.largest, a.largest);
      c.scratch.add(a.scratch, double(more));
      // A key row joins its kv head's unit (bwd_key_rows), which grows by
      // what one more key adds to a unit's scratch (its dK, dV rows; at
      // the MPFI pass its K, V rows too).
      if (key) {
        const auto with_keys = [&](std::vector<moa::extent_t> keys_of_unit) {
          return detail::unit_scratch_elements(
              p, Unit{detail::UnitKind::bwd_key_rows, 0, 0, 0, std::move(keys_of_unit)},
              conversion);
        };
        c.scratch.grow_largest(double(more) * (with_keys({0, 1}) - with_keys({0})));
      }
    }
    c.elements = std::min(c.elements, inputs);
    return c;
  };
  const Converted every_read = converted_by(Conversion::every_read);
  const OracleOp& op = oracle_op(p.op);
  const Converted mpfi_reads = op.streamed_at_mpfi.empty() && !op.mpfi_unit_scratch_elements
                                   ? every_read
                                   : converted_by(Conversion::mpfi);

  // The further rows' units: the first pass's scratch, and their count.
  if (more_rows) {
    for (const bool key : {false, true}) {
      const moa::extent_t more = key ? sample->more_key_rows : sample->more_query_rows;
      if (more <= 0) continue;
      first_scratch.add(every_read.added[key].first_scratch, double(more));
      if (key) keys += double(more);
      unit_count += double(more);
    }
  }

  // Each pass converts its units' rows one run of units at a time
  // (detail::for_each_chunk): at most the rows kept, and at most
  // chunk_limit's elements; and each thread holds one unit's scratch.
  // The passes run one after the other, each freeing what it converted:
  // the oracle holds the largest of them, never their sum.
  // Beside its unit's scratch, a thread holds the temporaries of the DNF
  // statement it is in (Boost's expression templates, ScalarTraits::max)
  // and MPFR's own: exp's and log's working numbers, its per-thread caches
  // of constants at that precision. Counted as 32 elements: the small cases
  // of tests/oracle/test_memory.cpp reach about 11.
  constexpr double kTemporaries = 32;
  // The first pass of f32, bf16 and f16 targets runs consecutive forward
  // rows together (forward_run): its threads hold first_scratch.
  // `input_bytes` per converted input element (the MPFI pass holds them at
  // kMpfiInputBits), `element_bytes` per element of its arithmetic.
  // A unit runs on one thread: a case of fewer units than threads (a
  // backward's one kv group) keeps the others idle, without scratch.
  const double busy = std::min(workers, std::max(1.0, unit_count));
  auto pass = [&](const Converted& converted, double element_bytes,
                  const LargestScratches& unit_scratch, double input_bytes) {
    const double held =
        std::min(converted.elements,
                 detail::chunk_limit(converted.largest, int(workers), input_bytes)) *
        input_bytes;
    return held + (unit_scratch.held(busy) + busy * kTemporaries) * element_bytes;
  };
  const bool f64 = p.format == Format::f64;
  const bool first_pass = oracle_op(p.op).first_pass;
  // The first pass: intervals of doubles (16 bytes), of double-doubles for
  // f64 targets (32); then, for the narrower targets, the double-double
  // narrowing of the pending units (32); then MPFI, at most at the cap.
  const double first = !first_pass ? 0
                       : f64       ? pass(every_read, 32, every_read.scratch, 32)
                                   : pass(every_read, 16, first_scratch, 16);
  const double narrowing =
      first_pass && !f64 && exact_digits == 0 ? pass(every_read, 32, every_read.scratch, 32) : 0;
  const double mpfi = pass(mpfi_reads, detail::mpfi_element_bytes(max_precision),
                           mpfi_reads.scratch, detail::mpfi_element_bytes(detail::kMpfiInputBits));

  // Per output element, held from the driver's start to the answer
  // (oracle.cpp): the first pass's ends, unit, width (8 each) and refine
  // flag; the narrowing's flag; f64's double-double ends (32); and the
  // answer itself (held_after).
  const double per_output = 8 + 8 + 8 + 8 + 1 + 1 + (f64 ? 32 : 0);
  // Rows: rows_read's prefix counts (8 bytes) twice at once (make_inputs'
  // copy and the run's), for_each_chunk's marks (4); the units, their key
  // lists, and the Ziv loop's copy of the pending ones.
  for (const auto& prefix : every_read.kept) bookkeeping += 20.0 * double(prefix.size());
  bookkeeping += 2 * (double(sizeof(Unit)) * unit_count + 8 * keys);

  return element_count(output_shapes(p)) * per_output + held_after(p, exact_digits) +
         std::max({first, narrowing, mpfi}) + bookkeeping;
}

double held_after(const Problem& p, int exact_digits) {
  double per_output = 8 + 16 + 1 + 1;
  if (exact_digits > 0) {
    // "-d.ddd...e-NNNNN": a heap copy past std::string's 15 inline characters.
    const double length = exact_digits + 10;
    per_output += double(sizeof(std::string)) + (length > 15 ? detail::heap_bytes(length + 1) : 0);
  }
  // A generated backward's forward rows, kept by its generation for its key
  // rows: only the first pass of the narrower targets keeps them.
  const bool memo =
      p.op == Op::attention_bwd && oracle_op(p.op).first_pass && p.format != Format::f64;
  return element_count(output_shapes(p)) * per_output + (memo ? detail::forward_memo_bytes(p) : 0);
}

}  // namespace moacert::oracle
