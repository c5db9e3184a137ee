// The oracle: the DNF of a case evaluated with rigorous enclosures of the
// exact real result, narrowed (Ziv style) until each element's correctly
// rounded value in the target format is decided. Computed once per case and
// shared by every variant checked on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oracle/selection.hpp"
#include "reference/case.hpp"

namespace moacert::oracle {

struct Options {
  int max_precision = 1024;  // bits; past it an element is "undetermined"
  int threads = 0;           // 0: the OpenMP default
  // When > 0, every element is also narrowed until its enclosure is
  // relatively narrower than 10^-exact_digits (2^-(3.33·digits + 4)), and
  // TensorAnswer::exact_decimal holds its value to that many significant
  // digits (case files ask for 40). Elements whose enclosure cannot get that
  // narrow (an exact zero reached through inexact operations) stop at the
  // cap, with their decision unaffected.
  int exact_digits = 0;
  // Every element's DD `exact` is within 2^-exact_ulp_bits ulp of the
  // format of the exact value (half its enclosure's width), so that an error
  // measured against it in ulps is right to that much: a correctly rounded
  // result measures at most 0.5 + 2^-10 by default. Elements the first pass
  // decided with a coarser enclosure (where a sum cancels) are narrowed by
  // MPFI for their DD alone. 0: no such narrowing.
  int exact_ulp_bits = 10;
  // The error a judge allows each element (per output in the signature's
  // order, per element in row-major order, absolute; certify's a priori
  // bounds), when given: an element's `exact` then need only be within
  // 2^-exact_ulp_bits times the larger of its ulp and its allowance, so
  // that the judge's error / allowance is still right to 2^-exact_ulp_bits.
  // An element settled by its allowance before its rounding was decided
  // has `rounded` NaN (not undetermined: its rounding was not asked for).
  // Zero, infinite or NaN allowances ask for the ulp alone. Why: where a
  // long sum cancels (a sampled backward's key rows at 4096 keys), the
  // first pass's enclosure is a few ulps of a value far below the sum's
  // terms, while a rounded arithmetic's bound there scales with the terms,
  // and narrowing one such element re-ran its unit whole in double-doubles
  // (docs/oracle.md, "Allowances"). Must outlive evaluate().
  const std::vector<std::vector<double>>* allowed = nullptr;
  // The sampled oracle (docs/oracle.md#sampled): evaluate only the elements
  // of these rows, each through a unit of its own row's cost. Without it,
  // every element.
  std::optional<Selection> rows;
  // attention.fwd evaluated whole: also keep the first pass's forward rows
  // for a later sampled oracle of a backward of the same q, k, v
  // (detail/forward_memo.hpp; a generated attention.bwd case's o and lse
  // are this forward). One such set is kept per process, replacing the
  // last.
  bool keep_forward_rows = false;
};

// A double-double: hi + lo with |lo| <= ulp(hi)/2, about 106 bits; enough to
// measure any format's ULP error to far better than 2^-40 ulp.
struct DD {
  double hi = 0, lo = 0;
};

// One output tensor's answer, elements in row-major logical order.
struct TensorAnswer {
  std::string name;
  moa::Shape shape;
  std::vector<double> rounded;  // correctly rounded to the format (exact in double); NaN where
                                // Options::allowed settled the element first
  std::vector<DD> exact;  // the midpoint of the element's final enclosure (±inf where infinite):
                          // within 2^-exact_ulp_bits ulp (or allowance: Options); ~106 bits with
                          // Options::exact_digits >= 32
  std::vector<std::uint8_t> undetermined;  // 1 where the cap was reached undecided
  std::vector<std::string> exact_decimal;  // with Options::exact_digits > 0: "d.ddd…e±XX"
  // 1 where the element was evaluated (all, without Options::rows). An
  // element not evaluated has rounded = exact = NaN, undetermined = 0 and no
  // exact_decimal: nothing may judge it.
  std::vector<std::uint8_t> evaluated;
};

struct Answer {
  std::vector<TensorAnswer> outputs;  // ops-table order
  std::int64_t decided_first = 0;  // elements decided by the first pass (doubles; none for block)
  std::int64_t elements = 0;       // elements evaluated (all, without Options::rows)
  int max_precision_used = 0;      // 53 when the first pass decided everything
  std::int64_t undetermined = 0;   // elements left undetermined at the cap
  // The largest relative width (hi - lo) / min(|lo|, |hi|) of the enclosure
  // an element's `exact` was taken from, over finite non-zero elements: the
  // relative accuracy of the DDs (docs/oracle.md). 0 when every such
  // enclosure was a point.
  double max_relative_width = 0;
  // Query rows whose forward the first pass took from the rows kept by the
  // case's own generation (Options::keep_forward_rows) instead of
  // computing them again: a sampled attention.bwd's key rows.
  std::int64_t forward_rows_given = 0;
};

// The bits of relative width an enclosure needs for `digits` significant
// decimal digits (Options::exact_digits): ceil(3.33·digits) + 4; 0 for 0.
int bits_for_digits(int digits);

// Evaluates the case's DNF; throws std::invalid_argument on a case the op
// does not define (or whose inputs do not match its problem). Safe to call
// from several threads at once (their MPFI passes take turns). Non-finite
// inputs: see docs/oracle.md#non-finite.
Answer evaluate(const Case& c, const Options& options = {});

}  // namespace moacert::oracle
